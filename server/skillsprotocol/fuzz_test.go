package skillsprotocol_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/catalog"
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

// FuzzBuildEntry: the bundle loader (folders and skills::publish-bundle
// alike) accepts or refuses any set of files without panicking; an
// accepted bundle's id is its manifest name, and every file path stays
// inside the bundle.
func FuzzBuildEntry(f *testing.F) {
	manifest := "name = \"a.b\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n"
	f.Add([]byte(manifest), []byte("---\nname: b\ndescription: x\n---\n# B\n"), "code/main.py", []byte("def main(a): return 1\n"))
	f.Add([]byte(manifest), []byte("---\n: [\n---\n"), "../x.py", []byte{0})
	f.Add([]byte("name = \"a\"\nversion = \"1.0.0\"\ndescription = \"d\"\nkind = \"instruction\"\n"), []byte(""), "a//b", []byte("x"))
	f.Add([]byte("kind = 1"), []byte("---\na: &a [*a]\n---\n"), "/etc/passwd", []byte("x"))
	f.Fuzz(func(t *testing.T, manifest, md []byte, path string, content []byte) {
		files := map[string][]byte{"skill.toml": manifest, "SKILL.md": md, path: content}
		e, err := sp.BuildEntry(files, catalog.Origin{Kind: catalog.OriginBundle, Source: sp.SourcePublishedBundles, Path: sp.ManifestFile}, time.Time{})
		if err != nil {
			return
		}
		m, ok := e.Extra.(*sp.Manifest)
		if !ok || sp.NameToID(m.Name) != e.ID || e.Version != m.Version {
			t.Fatalf("accepted entry %q %q does not match its manifest %+v", e.ID, e.Version, m)
		}
		for _, file := range e.Files {
			if file.Path == "" || strings.HasPrefix(file.Path, "/") || slices.Contains(strings.Split(file.Path, "/"), "..") {
				t.Fatalf("accepted a file outside the bundle: %q", file.Path)
			}
		}
	})
}
