package fsource_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
)

// The Agent Skills rules (agentskills.io/specification): name 1-64 of
// a-z 0-9 '-', no leading, trailing or doubled '-', equal to the folder;
// description 1-1024; compatibility 1-500; allowed-tools a string or a
// list of strings.
func TestValidateAgentSkill(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct {
		name, yaml, dir, want string
	}{
		{"minimal", "name: pdf\ndescription: d", "pdf", ""},
		{"every field", "name: pdf-2\ndescription: d\nlicense: MIT\ncompatibility: python3\nmetadata: {author: me, version: \"1\"}\nallowed-tools: Bash(git:*) Read\nextra: [1]", "pdf-2", ""},
		{"allowed-tools list", "name: pdf\ndescription: d\nallowed-tools: [Read, Write]", "pdf", ""},
		{"64 characters", "name: " + long(64) + "\ndescription: d", long(64), ""},
		{"description of 1024", "name: pdf\ndescription: " + long(1024), "pdf", ""},
		{"compatibility of 500", "name: pdf\ndescription: d\ncompatibility: " + long(500), "pdf", ""},

		{"name missing", "description: d", "pdf", "frontmatter missing `name`: expected `name: pdf` (Agent Skills: required, equal to the folder name)"},
		{"name not a string", "name: [pdf]\ndescription: d", "pdf", "frontmatter `name` must be a string, got a list"},
		{"name empty", "name: ''\ndescription: d", "pdf", "frontmatter `name` must be 1-64 characters, got an empty string"},
		{"name of 65", "name: " + long(65) + "\ndescription: d", long(65), "frontmatter `name` must be 1-64 characters, got 65 characters"},
		{"blank", "name: ' '\ndescription: d", " ", `frontmatter name " " must be lowercase letters a-z, digits and '-' only, got ' ' (Agent Skills names)`},
		{"several", "name: My_Skill.v2\ndescription: d", "x", `frontmatter name "My_Skill.v2" must be lowercase letters a-z, digits and '-' only, got 'M', '_', 'S' and '.' (Agent Skills names; for example "my-skill-v2")`},
		{"camelCase", "name: parseHTTPReply\ndescription: d", "x", `frontmatter name "parseHTTPReply" must be lowercase letters a-z, digits and '-' only, got 'H', 'T', 'P' and 'R' (Agent Skills names; for example "parse-httpreply")`},
		{"uppercase", "name: Pdf\ndescription: d", "Pdf", `frontmatter name "Pdf" must be lowercase letters a-z, digits and '-' only, got 'P' (Agent Skills names; for example "pdf")`},
		{"underscore", "name: pdf_x\ndescription: d", "pdf_x", `frontmatter name "pdf_x" must be lowercase letters a-z, digits and '-' only, got '_' (Agent Skills names; for example "pdf-x")`},
		{"non-ASCII", "name: pdé\ndescription: d", "pdé", `frontmatter name "pdé" must be lowercase letters a-z, digits and '-' only, got 'é' (Agent Skills names)`},
		{"leading '-'", "name: -pdf\ndescription: d", "-pdf", `frontmatter name "-pdf" must not start or end with '-' (Agent Skills names; for example "pdf")`},
		{"trailing '-'", "name: pdf-\ndescription: d", "pdf-", `frontmatter name "pdf-" must not start or end with '-' (Agent Skills names; for example "pdf")`},
		{"doubled '-'", "name: pdf--x\ndescription: d", "pdf--x", `frontmatter name "pdf--x" must not contain '--' (Agent Skills names; for example "pdf-x")`},
		{"not the folder", "name: pdf\ndescription: d", "other", `frontmatter name "pdf" must equal the folder name "other"`},

		{"description missing", "name: pdf", "pdf", "frontmatter missing `description`: expected 1-1024 characters saying what the skill does and when to use it (Agent Skills: required)"},
		{"description not a string", "name: pdf\ndescription: 3", "pdf", "frontmatter `description` must be a string, got a number"},
		{"description empty", "name: pdf\ndescription: ''", "pdf", "frontmatter `description` must be 1-1024 characters of text, got an empty string"},
		{"description blank", "name: pdf\ndescription: '   '", "pdf", "frontmatter `description` must be 1-1024 characters of text, got only whitespace (3 characters)"},
		{"description of one space", "name: pdf\ndescription: ' '", "pdf", "frontmatter `description` must be 1-1024 characters of text, got only whitespace (1 character)"},
		{"description of 1025", "name: pdf\ndescription: " + long(1025), "pdf", "frontmatter `description` must be 1-1024 characters of text, got 1025 characters"},

		{"license not a string", "name: pdf\ndescription: d\nlicense: {a: b}", "pdf", "frontmatter `license` must be a string, got a map"},
		{"compatibility not a string", "name: pdf\ndescription: d\ncompatibility: true", "pdf", "frontmatter `compatibility` must be a string, got a boolean"},
		{"compatibility empty", "name: pdf\ndescription: d\ncompatibility: ''", "pdf", "frontmatter `compatibility` must be 1-500 characters, got an empty string"},
		{"compatibility of 501", "name: pdf\ndescription: d\ncompatibility: " + long(501), "pdf", "frontmatter `compatibility` must be 1-500 characters, got 501 characters"},

		{"allowed-tools number", "name: pdf\ndescription: d\nallowed-tools: 5", "pdf", "frontmatter `allowed-tools` must be a string or a list of strings, got a number"},
		{"allowed-tools map", "name: pdf\ndescription: d\nallowed-tools: {a: b}", "pdf", "frontmatter `allowed-tools` must be a string or a list of strings, got a map"},
		{"allowed-tools list item", "name: pdf\ndescription: d\nallowed-tools: [Read, 2]", "pdf", "frontmatter `allowed-tools[1]` must be a string, got a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fm, err := catalog.ParseFrontmatter(c.yaml)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			warnings, err := fsource.ValidateAgentSkill(fm.Fields, c.dir)
			if err != nil {
				got = err.Error()
			}
			if got != c.want || len(warnings) != 0 {
				t.Fatalf("got  %q (warnings %q)\nwant %q", got, warnings, c.want)
			}
		})
	}
}

// metadata should map strings to strings (Agent Skills), but a value that
// does not is a warning, one per value, and the skill is valid: skills-ref
// validate accepts it, and harnesses load it.
func TestValidateAgentSkillMetadataWarnings(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"strings", "metadata: {author: me, version: \"1\"}", nil},
		{"not a map", "metadata: [a]", []string{"frontmatter `metadata` should be a map of strings (Agent Skills), got a list; served as it is"}},
		{"null", "metadata:", []string{"frontmatter `metadata` should be a map of strings (Agent Skills), got null; served as it is"}},
		{"values", "metadata: {author: ~, version: 1, ok: x, requires: {bins: [uv]}}", []string{
			"frontmatter `metadata.author` should be a string (Agent Skills: metadata maps strings to strings), got null; served as it is",
			"frontmatter `metadata.version` should be a string (Agent Skills: metadata maps strings to strings), got a number; served as it is",
			"frontmatter `metadata.requires` should be a string (Agent Skills: metadata maps strings to strings), got a map; served as it is",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fm, err := catalog.ParseFrontmatter("name: pdf\ndescription: d\n" + c.yaml)
			if err != nil {
				t.Fatal(err)
			}
			warnings, err := fsource.ValidateAgentSkill(fm.Fields, "pdf")
			if err != nil || strings.Join(warnings, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("err %v, warnings\n%s\nwant\n%s", err, strings.Join(warnings, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// Skip reasons of entries the scan does not follow or cannot read; each
// is listed by Problems and the rest of the folder is served.
func TestSkipReasons(t *testing.T) {
	root := t.TempDir()
	const skill = "---\nname: %s\ndescription: d\n---\nbody\n"
	write(t, root, "pdf/SKILL.md", fmt.Sprintf(skill, "pdf"))
	write(t, root, "ns/a.md", "# A\n")
	// A symlinked folder, at the top and inside a skill folder.
	must(t, os.Symlink("ns", filepath.Join(root, "linked")))
	must(t, os.Symlink("../ns", filepath.Join(root, "pdf/dirlink")))
	// FIFOs: as SKILL.md (opening it must not block the scan) and through
	// a symlink inside a skill folder. A FIFO named x.md outside skill
	// folders is ignored, as iii-directory's walk counts regular files only.
	write(t, root, "pipe/x.md", "# x\n")
	must(t, syscall.Mkfifo(filepath.Join(root, "pipe/SKILL.md"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(t, os.Symlink("../fifo", filepath.Join(root, "pdf/pipe")))
	must(t, syscall.Mkfifo(filepath.Join(root, "ns/plain.md"), 0o644))
	// One file over the per-skill limit.
	write(t, root, "many/SKILL.md", fmt.Sprintf(skill, "many"))
	for i := range fsource.MaxSkillFiles {
		write(t, root, fmt.Sprintf("many/files/%d.txt", i), "x")
	}
	// Unreadable: chmod does not stop root, so a symlink loop stands in
	// for a file the scan cannot open, at the top and inside a skill.
	must(t, os.Symlink("loop.md", filepath.Join(root, "loop.md")))
	must(t, os.Symlink("loop", filepath.Join(root, "pdf/loop")))

	s := open(t, fsource.Options{Folders: []string{root}})
	if got := ids(s.Skills()); got != "ns/a pdf" {
		t.Fatalf("skills %q; problems %+v", got, s.Problems())
	}
	got := map[string]string{}
	for _, p := range s.Problems() {
		got[p.Path] = p.Reason
	}
	want := map[string]string{
		"linked":        "symlinked directory is not followed",
		"pdf/dirlink":   "symlinked directory is not followed",
		"pipe/SKILL.md": "not a regular file",
		"pdf/pipe":      "not a regular file",
		"many/SKILL.md": "skill has too many files (more than 512)",
		"loop.md":       "unreadable: statat loop.md: too many levels of symbolic links",
		"pdf/loop":      "unreadable: openat pdf/loop: too many levels of symbolic links",
	}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s: got %q, want %q", p, got[p], r)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v", got)
	}
	pdf, _ := s.Skill("pdf")
	if len(pdf.Files) != 1 {
		t.Errorf("pdf files %+v", pdf.Files)
	}
}
