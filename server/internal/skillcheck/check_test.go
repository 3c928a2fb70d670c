package skillcheck

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/broken.golden")

// check runs Check from testdata with paths.
func check(t *testing.T, opts Options) Report {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = "testdata"
	}
	rep, err := Check(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Every mistake of testdata/broken (and the published payloads, and a
// skill hidden behind an earlier folder) is named with its file and line,
// exactly as testdata/broken.golden says; make test-ci compares the
// shipped binary's output with the same file.
func TestBrokenSkillsGolden(t *testing.T) {
	rep := check(t, Options{Paths: []string{"broken", "also", "published/payloads.json"}})
	var out bytes.Buffer
	rep.Write(&out, FormatText)
	golden := filepath.Join("testdata", "broken.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("report differs from %s (go test -run Golden -update rewrites it):\n--- got\n%s--- want\n%s", golden, out.String(), want)
	}
	if rep.Errors == 0 || rep.Warnings == 0 {
		t.Fatalf("errors %d, warnings %d: the fixtures hold both", rep.Errors, rep.Warnings)
	}
	for _, f := range rep.Findings {
		if f.File == "" || f.Line == 0 && f.Rule != "duplicate" {
			t.Errorf("finding without file:line: %+v", f)
		}
	}
}

// A folder that is one skill (SKILL.md inside) is checked as served from
// its parent, and only its own findings are reported.
func TestSingleSkillFolder(t *testing.T) {
	rep := check(t, Options{Paths: []string{"broken/dead-links"}})
	if rep.Skills != 1 {
		t.Errorf("skills %d, want 1", rep.Skills)
	}
	for _, f := range rep.Findings {
		if !strings.HasPrefix(f.File, filepath.Join("broken", "dead-links")) {
			t.Errorf("finding outside the skill: %v", f)
		}
	}
	if rep.Errors != 2 || rep.Warnings != 2 {
		t.Errorf("errors %d, warnings %d; want 2 (unknown skill, hidden section) and 2 (missing file, a link out of the skill):\n%v",
			rep.Errors, rep.Warnings, rep.Findings)
	}
}

// A relative link to a file that does not exist is a warning (the server
// serves the skill either way), an error under Strict; a link that leaves
// the skill folder stays a warning.
func TestStrictDeadLinks(t *testing.T) {
	sev := func(rep Report) string {
		var out []string
		for _, f := range rep.Findings {
			if f.Rule == "link" {
				out = append(out, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Severity))
			}
		}
		return strings.Join(out, " ")
	}
	dead := filepath.Join("broken", "dead-links", "SKILL.md")
	guide := filepath.Join("broken", "dead-links", "references", "guide.md")
	if got, want := sev(check(t, Options{Paths: []string{"broken/dead-links"}})), dead+":7 warning "+guide+":3 warning"; got != want {
		t.Errorf("default: %s, want %s", got, want)
	}
	if got, want := sev(check(t, Options{Paths: []string{"broken/dead-links"}, Strict: true})), dead+":7 error "+guide+":3 warning"; got != want {
		t.Errorf("strict: %s, want %s", got, want)
	}
}

// SKILL.md metadata that is not a map of strings: the skill is served
// (counted), each value is a warning at the line of its key, also under
// Strict (the server serves it; --strict only fails the exit status).
func TestMetadataWarnings(t *testing.T) {
	for _, strict := range []bool{false, true} {
		rep := check(t, Options{Paths: []string{"broken/odd-metadata"}, Strict: strict})
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.String())
		}
		want := []string{
			filepath.Join("broken", "odd-metadata", "SKILL.md") + ":6: warning: frontmatter `metadata.related-skills` should be a string (Agent Skills: metadata maps strings to strings), got null; served as it is",
			filepath.Join("broken", "odd-metadata", "SKILL.md") + ":7: warning: frontmatter `metadata.requires` should be a string (Agent Skills: metadata maps strings to strings), got a map; served as it is",
		}
		if rep.Skills != 1 || rep.Errors != 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("strict %v: skills %d errors %d\n%s\nwant\n%s", strict, rep.Skills, rep.Errors, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// YAML syntax errors are reported at the file line the fault is on (the
// frontmatter's line n is the file's line n+1), in folders and in
// published bodies.
func TestYAMLErrorLines(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"flow/SKILL.md":   "---\nname: flow\ndescription: [unclosed list\n---\n# Flow\n",
		"indent/SKILL.md": "---\nname: indent\ndescription: d\nmetadata:\n  author: me\n version: 1\n---\n# Indent\n",
		"first/SKILL.md":  "---\nname: a: b\ndescription: d\n---\n# First\n",
		"published.md":    "---\ntitle: ok\ntags: [a,\n---\n# Published\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, "skills", filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "skills", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(dir, "skills", "published.md"), filepath.Join(dir, "published.md")); err != nil {
		t.Fatal(err)
	}
	rep := check(t, Options{Dir: dir, Paths: []string{"skills", "published.md"}})
	got := map[string]int{}
	for _, f := range rep.Findings {
		got[f.File] = f.Line
	}
	want := map[string]int{
		filepath.Join("skills", "flow", "SKILL.md"):   3, // description: [unclosed list
		filepath.Join("skills", "indent", "SKILL.md"): 6, //  version: 1
		filepath.Join("skills", "first", "SKILL.md"):  2, // name: a: b
		"published.md": 3, // tags: [a,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %v, want %v\n%v", got, want, rep.Findings)
	}
}

// The size caps are the server's: a markdown file over 256 KiB is refused.
func TestSizeCap(t *testing.T) {
	dir := t.TempDir()
	big := "# Big\n\n" + strings.Repeat("x", 256<<10)
	if err := os.WriteFile(filepath.Join(dir, "big.md"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := check(t, Options{Dir: dir, Paths: []string{"."}})
	if rep.Errors != 1 || !strings.Contains(rep.Findings[0].Message, "file is too large") {
		t.Fatalf("want one too-large error, got %v", rep.Findings)
	}
	// A published body has the registry's cap (512 KiB) instead.
	body := strings.Repeat("y", 512<<10+1)
	if err := os.WriteFile(filepath.Join(dir, "pub.json"), []byte(`{"id":"pub","skill":"`+body+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep = check(t, Options{Dir: dir, Paths: []string{"pub.json"}})
	if rep.Errors != 1 || rep.Findings[0].Rule != "register" {
		t.Fatalf("want one register error for the oversized body, got %v", rep.Findings)
	}
}

type fakeRemote struct {
	skills, fns map[string]bool
	err         error
	asked       int
}

func (r *fakeRemote) HasSkill(_ context.Context, id string) (bool, error) {
	r.asked++
	return r.skills[id], r.err
}

func (r *fakeRemote) HasFunction(_ context.Context, id string) (bool, error) {
	r.asked++
	return r.fns[id], r.err
}

// With a Remote, links outside the checked set are looked up once each.
func TestRemoteResolvesOutsideLinks(t *testing.T) {
	dir := t.TempDir()
	md := "# A\n\n[x](iii://on-server) [y](iii://on-server) [z](iii://gone) [s](iii://fn/acme/status) [t](iii://fn/acme/missing)\n"
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &fakeRemote{skills: map[string]bool{"on-server": true}, fns: map[string]bool{"acme::status": true}}
	rep := check(t, Options{Dir: dir, Paths: []string{"."}, Remote: r})
	if rep.Errors != 2 {
		t.Fatalf("want 2 errors (gone, acme::missing), got %v", rep.Findings)
	}
	if r.asked != 4 {
		t.Errorf("remote asked %d times, want 4 (once per target)", r.asked)
	}
	r = &fakeRemote{err: errors.New("connection reset")}
	rep = check(t, Options{Dir: dir, Paths: []string{"."}, Remote: r})
	if rep.Errors != 5 || !strings.Contains(rep.Findings[0].Message, "cannot ask the server: connection reset") {
		t.Fatalf("remote failures must be errors naming the cause, one per link, got %v", rep.Findings)
	}
	if r.asked != 4 {
		t.Errorf("a failing remote was asked %d times, want 4 (once per target)", r.asked)
	}
}

// Annotations escape what GitHub's workflow command parser would cut.
func TestGitHubFormat(t *testing.T) {
	rep := Report{Findings: []Finding{{Severity: Error, File: "a,b:c.md", Line: 3, Message: "50% done\nnext"}}, Errors: 1}
	var out bytes.Buffer
	rep.Write(&out, FormatGitHub)
	want := "::error file=a%2Cb%3Ac.md,line=3::50%25 done%0Anext\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("got %q, want prefix %q", out.String(), want)
	}
}

// Links in code blocks and code spans are examples; [`id`](iii://id) is a
// link.
func TestLinksInCode(t *testing.T) {
	dir := t.TempDir()
	md := "# A\n\n`[x](missing.md)` and [`b`](iii://b)\n\n~~~\n[y](also-missing.md)\n~~~\n"
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := check(t, Options{Dir: dir, Paths: []string{"."}})
	if rep.Errors != 1 || !strings.Contains(rep.Findings[0].Message, "iii://b") || rep.Findings[0].Line != 3 {
		t.Fatalf("want only the iii://b link at line 3, got %v", rep.Findings)
	}
}

func TestBadPaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := check(t, Options{Dir: dir, Paths: []string{"nowhere", "notes.txt"}})
	if rep.Errors != 2 {
		t.Fatalf("want 2 input errors, got %v", rep.Findings)
	}
	if _, err := Check(context.Background(), Options{Dir: dir}); err == nil {
		t.Fatal("no paths: want an error")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"id": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep = check(t, Options{Dir: dir, Paths: []string{"bad.json"}})
	if rep.Errors != 1 || rep.Findings[0].Line != 1 {
		t.Fatalf("want one decode error at line 1, got %v", rep.Findings)
	}
}

// A .md file is a body a worker publishes: the registry's id and size
// rules apply; frontmatter it cannot parse is only a warning (the
// registry stores the body as is).
func TestPublishedMarkdown(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("---\na: [\n---\n# Notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Bad.md"), []byte("# Bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := check(t, Options{Dir: dir, Paths: []string{"notes.md", "Bad.md"}})
	if rep.Errors != 1 || rep.Warnings != 1 || rep.Skills != 1 {
		t.Fatalf("want 1 error (id Bad), 1 warning (YAML), 1 skill; got %v", rep.Findings)
	}
}

// What the Agent Skills specification says about a folder the server
// serves all the same: each top-level key outside it, at its line, naming
// the harnesses that read it (harness-keys.tsv) or where it belongs; a
// SKILL.md of frontmatter alone; a skill file named skill.md (also when
// the folder is given as the PATH). Warnings, never errors.
func TestAgentSkillsNotes(t *testing.T) {
	rep := check(t, Options{Paths: []string{"broken/harness-keys", "broken/frontmatter-only", "broken/lowercase"}})
	var got []string
	for _, f := range rep.Findings {
		if f.Severity != Warning {
			t.Errorf("not a warning: %v", f)
		}
		got = append(got, fmt.Sprintf("%s:%d %s", filepath.ToSlash(f.File), f.Line, f.Rule))
	}
	want := "broken/frontmatter-only/SKILL.md:4 agent-skills broken/harness-keys/SKILL.md:4 agent-skills " +
		"broken/harness-keys/SKILL.md:5 agent-skills broken/harness-keys/SKILL.md:6 agent-skills " +
		"broken/harness-keys/SKILL.md:7 agent-skills broken/lowercase/skill.md:1 folder"
	if rep.Skills != 3 || strings.Join(got, " ") != want {
		t.Fatalf("skills %d, findings\n%s\nwant\n%s", rep.Skills, strings.Join(got, " "), want)
	}
	for _, c := range []struct{ key, want string }{
		{"argument-hint", "Claude Code and VS Code read it"},
		{"effort", "Claude Code reads it"},
		{"version", "no harness we know reads it, expected under `metadata` (metadata.version)"},
		{"Description", "it looks like a misspelling of `description`"},
		{"when-to-use", "it looks like a misspelling of `when_to_use`"},
	} {
		if w := keyWarning(c.key); !strings.Contains(w, c.want) || !strings.HasPrefix(w, "frontmatter key `"+c.key+"` is not an Agent Skills field") {
			t.Errorf("%s: %q, want it to say %q", c.key, w, c.want)
		}
	}
}

// The table of harness keys is data with its sources named; none of its
// keys is an Agent Skills field.
func TestHarnessKeysTable(t *testing.T) {
	if len(harnessKeys) < 10 || !strings.Contains(harnessKeysTSV, "https://code.claude.com/docs/en/skills") {
		t.Fatalf("harness-keys.tsv: %d keys, sources %v", len(harnessKeys), strings.Contains(harnessKeysTSV, "code.claude.com"))
	}
	for _, bad := range []string{"name\tClaude Code\n", "x\n", "\tVS Code\n"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%q accepted", bad)
				}
			}()
			parseHarnessKeys(bad)
		}()
	}
}
