package skillsprotocol_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// describe_skill and read_skill_file take a registry version or label of
// a published skill as `version`.
func TestRegistryVersionsOfPublishedSkills(t *testing.T) {
	e := newEnv(t, sp.Options{})
	src, err := e.cat.AddSource("published-test", catalog.RankPublished)
	if err != nil {
		t.Fatal(err)
	}
	now := "# Now\n\nThe current body.\n"
	if err := src.Put(&catalog.Entry{ID: "hist/skill", Kind: catalog.KindInstruction, Body: catalog.Inline(now),
		Origin: catalog.Origin{Kind: catalog.OriginPublished, Source: "published-test"}}); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{"1": "# Old\n\nThe first body.\n", "production": "# Old\n\nThe first body.\n"}
	e.rt.SetSkillHistory(func(id, sel string) (string, bool) {
		b, ok := old[sel]
		return b, ok && id == "hist/skill"
	})
	e.rt.SetSkillVersionList(func(id string) []string {
		if id != "hist/skill" {
			return nil
		}
		return []string{"1"}
	})
	name := sp.IDToName("hist/skill")
	var d map[string]any
	e.ok("describe_skill", map[string]any{"name": name, "version": "1", "detail": "full"}, &d)
	if d["version"] != "1" || d["instructions"] != old["1"] {
		t.Fatalf("describe version 1: %v", d)
	}
	// `versions` lists what describe_skill and read_skill_file accept: the
	// served content, then the registry's versions.
	if got := fmt.Sprint(d["versions"]); got != "[0.0.0 1]" {
		t.Fatalf("versions = %s; want [0.0.0 1]", got)
	}
	var f map[string]any
	e.ok("read_skill_file", map[string]any{"name": name, "version": "production", "path": "SKILL.md"}, &f)
	if f["content"] != old["production"] {
		t.Fatalf("read production: %v", f)
	}
	e.ok("describe_skill", map[string]any{"name": name, "detail": "full"}, &d)
	if d["instructions"] != now {
		t.Fatalf("no version serves the current body: %v", d)
	}
	if msg := e.fails("describe_skill", map[string]any{"name": name, "version": "7"}, sp.CodeInvalidParams); !strings.Contains(msg, `no version "7"`) {
		t.Fatalf("unknown version: %s", msg)
	}
}
