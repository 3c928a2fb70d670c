package skillsprotocol_test

import (
	"testing"

	sp "github.com/iii-skills/skills/server/skillsprotocol"
)

// FuzzParseManifest: any skill.toml (from a folder or a bundle published
// over iii) is accepted or refused without panicking, and what is accepted
// obeys the manifest rules.
func FuzzParseManifest(f *testing.F) {
	for _, seed := range []string{
		"name = \"a.b.c\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n[permissions]\nsecrets = [\"API_KEY\"]\n",
		"name = \"a.b\"\nversion = \"1.0.0-rc.1+x\"\ndescription = \"d\"\nkind = \"instruction\"\n[input_schema]\ntype = \"object\"\n",
		"name = \"a..b\"\nversion = \"v1\"\n",
		"[[x]]\n[x.y]\nz = 1979-05-27T07:32:00Z\n",
		"name = '''multi\nline'''\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := sp.ParseManifest(data)
		if err != nil {
			return
		}
		if !sp.ValidBundleName(m.Name) || m.Version == "" || (m.Kind != "action" && m.Kind != "instruction") {
			t.Fatalf("accepted an invalid manifest: %+v", m)
		}
	})
}
