package directory

import (
	"strings"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// Over a real engine socket: a SKILL.md whose metadata holds a null and a
// map is served, and directory::skills::diagnostics lists it under
// warnings (not skipped); a YAML syntax error is skipped with the line the
// fault is on.
func TestDiagnosticsMetadataWarningAndYAMLLine(t *testing.T) {
	root := t.TempDir()
	put(t, root, "game/SKILL.md", "---\nname: game\ndescription: Builds games.\nmetadata:\n  related-skills:\n  requires: {bins: [uv]}\n---\n# Game\n")
	put(t, root, "bad-yaml/SKILL.md", "---\nname: bad-yaml\ndescription: [unclosed list\n---\n# Bad\n")
	s := startStack(t, []string{root}, DefaultConfig(), Options{})

	if got := s.text(t, rules.FnSkillFetch, map[string]any{"uri": "iii://game"}); got != "# iii://game\n\n# Game" {
		t.Fatalf("skill::fetch %q", got)
	}
	var diag struct {
		Skipped  []SkippedRow `json:"skipped"`
		Warnings []SkippedRow `json:"warnings"`
	}
	s.must(t, FnSkillsDiagnostics, map[string]any{}, &diag)
	if len(diag.Skipped) != 1 || diag.Skipped[0].Path != "bad-yaml/SKILL.md" ||
		diag.Skipped[0].Reason != "invalid frontmatter YAML: yaml: line 2: did not find expected ',' or ']'" {
		t.Fatalf("skipped %+v", diag.Skipped)
	}
	var reasons []string
	for _, w := range diag.Warnings {
		if w.Path != "game/SKILL.md" {
			t.Fatalf("warning on %s: %+v", w.Path, w)
		}
		reasons = append(reasons, w.Reason)
	}
	want := "frontmatter `metadata.related-skills` should be a string (Agent Skills: metadata maps strings to strings), got null; served as it is\n" +
		"frontmatter `metadata.requires` should be a string (Agent Skills: metadata maps strings to strings), got a map; served as it is"
	if strings.Join(reasons, "\n") != want {
		t.Fatalf("warnings:\n%s\nwant\n%s", strings.Join(reasons, "\n"), want)
	}
}
