package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDisplaySourceHidesAbsolutePaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/srv/acme/skills":                         "skills",
		"folder:/srv/acme/skills":                  "folder:skills",
		filepath.Join(wd, "testdata", "skills"):    "testdata/skills",
		"folder:" + filepath.Join(wd, "x"):         "folder:x",
		"/":                                        "(root)",
		"published":                                "published",
		"skills-protocol-published":                "skills-protocol-published",
		"folder:relative/skills":                   "folder:relative/skills",
		filepath.Join(wd, "..", "sibling", "team"): "team",
	} {
		if got := DisplaySource(in); got != want {
			t.Errorf("DisplaySource(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DisplayFile("/srv/acme/skills", "pdf/SKILL.md"); got != "skills/pdf/SKILL.md" {
		t.Errorf("DisplayFile = %q", got)
	}
}
