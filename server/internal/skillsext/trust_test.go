package skillsext_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func hexSum(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// The manifest of a skill with files is the canonical JSON of its files
// sorted by path; its sha256 is the skill's digest, and a pin by it serves
// the skill while every file still holds what the manifest says.
func TestManifestDigestAndFolderPins(t *testing.T) {
	md := "---\nname: tool\ndescription: a tool\n---\n# Tool\n"
	script := "echo \"hi\"\n"
	current := script
	e := folder(t, "acme/tool", file("SKILL.md", md),
		catalog.NewFile("scripts/run.sh", []byte(script), time.Time{}, func() ([]byte, error) { return []byte(current), nil }))
	manifest := fmt.Sprintf(`[{"path":"SKILL.md","sha256":"%s","size":%d},{"path":"scripts/run.sh","sha256":"%s","size":%d}]`,
		hexSum(md), len(md), hexSum(script), len(script))
	if got := string(skillsext.Manifest(e.Files)); got != manifest {
		t.Fatalf("manifest\n%s\nwant\n%s", got, manifest)
	}
	v, src := newView(t)
	if err := src.Put(e); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the skill in the view", func() bool { _, ok, _ := v.Skill(context.Background(), "acme/tool"); return ok })
	s := get(t, v, "acme/tool")
	if s.SHA256 != hexSum(manifest) || s.SignedBy != nil || s.Version != 0 {
		t.Fatalf("folder skill facts: sha256 %s signed_by %s version %d", s.SHA256, s.SignedBy, s.Version)
	}
	pin := "acme/tool@sha256:" + s.SHA256
	pinned := get(t, v, pin)
	if pinned.Path != pin || len(pinned.Files) != 2 {
		t.Fatalf("pinned skill: %+v", pinned)
	}
	if b, err := v.ReadFile(context.Background(), pin, "scripts/run.sh"); err != nil || string(b) != script {
		t.Fatalf("pinned read: %q %v", b, err)
	}
	if _, ok, _ := v.Skill(context.Background(), "acme/tool@sha256:"+hexSum("other")); ok {
		t.Fatal("a pin of other content is served")
	}
	// The file changes on disk before the folder is scanned again.
	current = "rm -rf /\n"
	if _, err := v.ReadFile(context.Background(), pin, "scripts/run.sh"); !errors.Is(err, skillsext.ErrNoSuchFile) {
		t.Fatalf("pinned read of a changed file: %v", err)
	}
	if b, err := v.ReadFile(context.Background(), "acme/tool", "scripts/run.sh"); err != nil || string(b) != current {
		t.Fatalf("unpinned read serves what is there now: %q %v", b, err)
	}
}

// Published skills carry their registry facts: the served version's from
// the facts reader, a version path's from the version reader.
func TestPublishedSkillFacts(t *testing.T) {
	v, src := newView(t)
	body := "# Doc\n\nthe doc\n"
	if err := src.Put(published("doc", body)); err != nil {
		t.Fatal(err)
	}
	v.SetFacts(func(id string, d catalog.Digest) (skillsext.Facts, bool) {
		return skillsext.Facts{Version: 3, SignedBy: "alice@example.com", Key: "SHA256:k", Deprecated: "use doc2"}, id == "doc" && hex.EncodeToString(d[:]) == hexSum(body)
	})
	v.SetVersions(func(id, sel string) (string, skillsext.Facts, bool) {
		return "# Old\n", skillsext.Facts{Version: 1, Yanked: "broken"}, id == "doc" && sel == "1"
	})
	testutil.Eventually(t, 5*time.Second, "the skill in the view", func() bool { _, ok, _ := v.Skill(context.Background(), "doc"); return ok })
	s := get(t, v, "doc")
	if s.Version != 3 || string(s.SignedBy) != `"alice@example.com"` || s.Key != "SHA256:k" || s.Deprecated != "use doc2" || s.SHA256 != hexSum(body) {
		t.Fatalf("served facts: %+v", s)
	}
	old := get(t, v, "doc@1")
	if old.Version != 1 || string(old.SignedBy) != "null" || old.Yanked != "broken" || old.SHA256 != hexSum("# Old\n") {
		t.Fatalf("version facts: %+v", old)
	}
}
