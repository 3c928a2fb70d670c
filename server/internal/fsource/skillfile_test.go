package fsource_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// A skill file named skill.md (or another letter case of SKILL.md) is the
// skill the author wrote: served at the folder's id with its frontmatter,
// its file listed as SKILL.md, and a warning naming the file in the log
// and in Warnings. Renaming it to SKILL.md clears the warning; the skill
// stays the same.
func TestSkillFileInAnotherLetterCase(t *testing.T) {
	root := t.TempDir()
	const text = "---\nname: notes\ndescription: Take meeting notes. Use when asked for minutes.\n---\n# Notes\n\nFirst paragraph of the body.\n"
	write(t, root, "notes/skill.md", text)
	write(t, root, "notes/references/format.md", "# Format\n")
	write(t, root, "memo/Skill.md", "---\nname: memo\ndescription: Memos.\n---\n# Memo\n")
	// Under prompts/ a skill.md stays a prompt.
	write(t, root, "team/prompts/skill.md", "---\ndescription: Ask for a skill\n---\nWhich skill?\n")
	cat := catalog.New()
	var logs testutil.Buffer
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat, Watch: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if got := ids(s.Skills()); got != "memo notes" {
		t.Fatalf("skills %q, want \"memo notes\"; problems %+v", got, s.Problems())
	}
	e, _ := cat.Get("notes")
	if e.Description != "Take meeting notes. Use when asked for minutes." || e.Main != "SKILL.md" || e.Origin.Path != "notes/skill.md" {
		t.Fatalf("notes: description %q, main %q, origin %q", e.Description, e.Main, e.Origin.Path)
	}
	f, ok := e.File("SKILL.md")
	if !ok || f.Digest != catalog.DigestOfString(text) {
		t.Fatalf("SKILL.md not listed with the file's bytes: %+v", e.Files)
	}
	if b, err := f.Content.String(); err != nil || b != text {
		t.Fatalf("SKILL.md content %q %v", b, err)
	}
	if _, ok := e.File("skill.md"); ok || len(e.Files) != 2 {
		t.Fatalf("files %+v, want SKILL.md and references/format.md", e.Files)
	}
	want := map[string]string{
		"notes/skill.md": "the skill file is named skill.md, expected SKILL.md (Agent Skills); served as this skill's SKILL.md, but a harness that looks for SKILL.md on a case-sensitive file system does not find it: rename it to SKILL.md",
		"memo/Skill.md":  "the skill file is named Skill.md, expected SKILL.md (Agent Skills); served as this skill's SKILL.md, but a harness that looks for SKILL.md on a case-sensitive file system does not find it: rename it to SKILL.md",
	}
	got := map[string]string{}
	for _, w := range s.Warnings() {
		got[w.Path] = w.Reason
	}
	if len(got) != len(want) || got["notes/skill.md"] != want["notes/skill.md"] || got["memo/Skill.md"] != want["memo/Skill.md"] {
		t.Fatalf("warnings %q\nwant %q", got, want)
	}
	if !strings.Contains(logs.String(), "served fs entry with a warning") || !strings.Contains(logs.String(), filepath.Join(root, "notes/skill.md")) {
		t.Fatalf("the log does not name the file:\n%s", logs.String())
	}
	if p, ok := s.Prompt("skill"); !ok || p.Description != "Ask for a skill" {
		t.Fatalf("prompts/skill.md should stay a prompt: %+v", s.Prompts())
	}
	// Renamed to SKILL.md: the same skill, without the warning.
	ev := subscribe(s)
	must(t, os.Rename(filepath.Join(root, "notes/skill.md"), filepath.Join(root, "notes/SKILL.md")))
	ev.wait(t, fsource.KindSkill, "notes", catalog.OpPut)
	testutil.Eventually(t, 10*time.Second, "the warning about notes/skill.md goes once the file is SKILL.md", func() bool {
		for _, w := range s.Warnings() {
			if w.Path == "notes/skill.md" {
				return false
			}
		}
		e, ok := cat.Get("notes")
		return ok && e.Origin.Path == "notes/SKILL.md"
	})
}

// A SKILL.md (any letter case) at the root of a skills folder means the
// registry was pointed at one skill's folder: it is listed as a problem
// saying so, not served as a skill named "skill".
func TestSkillFileAtTheRoot(t *testing.T) {
	for _, name := range []string{"SKILL.md", "skill.md"} {
		root := t.TempDir()
		write(t, root, name, "---\nname: x\ndescription: d\n---\n# X\n")
		s := open(t, fsource.Options{Folders: []string{root}})
		if got := ids(s.Skills()); got != "" {
			t.Fatalf("%s: served %q", name, got)
		}
		p := s.Problems()
		want := name + " at the root of a skills folder is not served: a skills folder holds skills, each in a folder of its own named after the skill (serve the folder above this one, or move the file to <name>/SKILL.md)"
		if len(p) != 1 || p[0].Path != name || p[0].Reason != want {
			t.Fatalf("%s: problems %+v", name, p)
		}
	}
}

// The folder of a SKILL.md is named after the skill, so it meets the Agent
// Skills name rule, not only the iii id rule (which lets '_' through and
// would send the author from one refusal to the next); the message says
// what was found and gives a name that passes.
func TestSkillFolderName(t *testing.T) {
	root := t.TempDir()
	write(t, root, "My_Skill/SKILL.md", "---\nname: my-skill\ndescription: d\n---\n# Mine\n")
	write(t, root, "snake_case/SKILL.md", "---\nname: snake_case\ndescription: d\n---\n# Snake\n")
	write(t, root, "Team/ok/SKILL.md", "---\nname: ok\ndescription: d\n---\n# Ok\n")
	write(t, root, "team_b/fine/SKILL.md", "---\nname: fine\ndescription: d\n---\n# Fine\n")
	s := open(t, fsource.Options{Folders: []string{root}})
	if got := ids(s.Skills()); got != "team_b/fine" {
		t.Fatalf("skills %q; problems %+v", got, s.Problems())
	}
	got := map[string]string{}
	for _, p := range s.Problems() {
		got[p.Path] = p.Reason
	}
	want := map[string]string{
		"My_Skill/SKILL.md":   `folder name "My_Skill" must be lowercase letters a-z, digits and '-' only, got 'M', '_' and 'S' (Agent Skills names; for example "my-skill"); a folder holding SKILL.md is named after its skill, as its frontmatter ` + "`name`" + ` is`,
		"snake_case/SKILL.md": `folder name "snake_case" must be lowercase letters a-z, digits and '-' only, got '_' (Agent Skills names; for example "snake-case"); a folder holding SKILL.md is named after its skill, as its frontmatter ` + "`name`" + ` is`,
		// A namespace folder above the skill follows the iii id rule.
		"Team/ok/SKILL.md": `invalid id "Team/ok": invalid id (segment 1 of "Team/ok"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "Team"`,
	}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s:\n got %q\nwant %q", p, got[p], r)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %q", got)
	}
}

// A SKILL.md of frontmatter alone (the specification's minimal skill) is
// served, its body read as empty; a single-file skill and a prompt keep
// iii-directory's empty-body refusal.
func TestEmptyBody(t *testing.T) {
	root := t.TempDir()
	write(t, root, "minimal/SKILL.md", "---\nname: minimal\ndescription: A skill of frontmatter alone.\n---\n")
	write(t, root, "blank/SKILL.md", "---\nname: blank\ndescription: Blank lines only.\n---\n\n\n")
	write(t, root, "empty.md", "---\ntitle: t\n---\n\n")
	write(t, root, "x/prompts/p.md", "---\ndescription: d\n---\n")
	cat := catalog.New()
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat})
	if got := ids(s.Skills()); got != "blank minimal" {
		t.Fatalf("skills %q; problems %+v", got, s.Problems())
	}
	for _, id := range []string{"minimal", "blank"} {
		e, _ := cat.Get(id)
		body, err := e.Body.String()
		if err != nil || strings.Trim(body, "\n") != "" {
			t.Fatalf("%s: body %q %v", id, body, err)
		}
		if e.Description == "" || !e.HasDescription {
			t.Fatalf("%s: description from the frontmatter lost", id)
		}
	}
	got := map[string]string{}
	for _, p := range s.Problems() {
		got[p.Path] = p.Reason
	}
	if len(got) != 2 || got["empty.md"] != "file has empty body" || got["x/prompts/p.md"] != "file has empty body" {
		t.Fatalf("problems %q", got)
	}
	if len(s.Warnings()) != 0 {
		t.Fatalf("warnings %+v", s.Warnings())
	}
}
