package fsource_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// write creates root/rel with content, making parent folders.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const pdfSkill = `---
name: pdf-processing
description: Extract text and tables from PDF files. Use when the user mentions PDFs.
license: Apache-2.0
metadata:
  author: example
allowed-tools: Bash(python:*) Read
---
# PDF processing

Read [the guide](references/guide.md) first.
`

var pngBytes = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 0xff, 0xfe}

// makeFolder builds a folder with every kind of good and bad input.
func makeFolder(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "indexed.md", "# Indexed\n\nA root-level skill.\n")
	write(t, root, "ns/a.md", "---\ntitle: ignored\n---\n# A\n\nFirst paragraph\nstill first.\n\nSecond.\n")
	write(t, root, "ns/a/b.md", "no heading, just text\n")
	write(t, root, "pdf-processing/SKILL.md", pdfSkill)
	write(t, root, "pdf-processing/scripts/extract.py", "print('hi')\n")
	write(t, root, "pdf-processing/references/guide.md", "# Guide\n")
	write(t, root, "pdf-processing/references/deep/more.md", "# More\n")
	write(t, root, "pdf-processing/assets/logo.png", string(pngBytes))
	write(t, root, "pdf-processing/.secret", "hidden")
	write(t, root, "bad/UPPER.md", "# Upper\n")
	write(t, root, "bad/empty.md", "---\na: 1\n---\n\n\n")
	write(t, root, "bad/fm.md", "---\na: [1, 2\n---\nbody\n")
	write(t, root, "bad/big.md", "# Big\n\n"+strings.Repeat("x", fsource.MaxFileBytes))
	write(t, root, "wrongname/SKILL.md", "---\nname: other\ndescription: d\n---\nbody\n")
	write(t, root, "ns/prompts/greet.md", "---\ndescription: Say hello\n---\nHello {{name}}\n")
	write(t, root, "ns/prompts/nodesc.md", "---\nname: nodesc\n---\nbody\n")
	write(t, root, ".hidden/x.md", "# Hidden\n")
	write(t, root, "ns/x.md~", "backup")
	write(t, root, "bundle/skill.toml", "name = \"a.b.c\"\n")
	write(t, root, "bundle/SKILL.md", "# Bundle\n")
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("# Secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("indexed.md", filepath.Join(root, "alias.md")); err != nil {
		t.Fatal(err)
	}
	return root
}

func quietLogger(buf *bytes.Buffer) *slog.Logger {
	if buf == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(buf, nil))
}

func open(t *testing.T, opts fsource.Options) *fsource.Set {
	t.Helper()
	if opts.Catalog == nil {
		opts.Catalog = catalog.New()
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger(nil)
	}
	s, err := fsource.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func ids(es []*catalog.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return strings.Join(out, " ")
}

func TestScanLayout(t *testing.T) {
	root := makeFolder(t)
	cat := catalog.New()
	var logs bytes.Buffer
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat, Logger: quietLogger(&logs)})

	if got := ids(s.Skills()); got != "alias indexed ns/a ns/a/b pdf-processing" {
		t.Fatalf("skills: %q", got)
	}
	if got := ids(cat.List()); got != "alias indexed ns/a ns/a/b pdf-processing" {
		t.Fatalf("catalog: %q", got)
	}

	a, _ := s.Skill("ns/a")
	if a.Title != "A" || a.Description != "First paragraph still first." || a.Origin.Kind != catalog.OriginFolder ||
		a.Origin.Source != root || a.Origin.Path != "ns/a.md" || a.Main != "a.md" {
		t.Fatalf("ns/a: %+v", a)
	}
	if v, _ := a.Frontmatter.Fields.String("title"); v != "ignored" {
		t.Fatal("frontmatter not parsed")
	}
	body, err := a.Body.String()
	if err != nil || body != "# A\n\nFirst paragraph\nstill first.\n\nSecond.\n" {
		t.Fatalf("body %q %v", body, err)
	}
	if a.BodyDigest != catalog.DigestOfString(body) || a.Body.InMemory() {
		t.Fatal("body digest or laziness")
	}

	pdf, _ := s.Skill("pdf-processing")
	if pdf.Description != "Extract text and tables from PDF files. Use when the user mentions PDFs." || pdf.Title != "PDF processing" {
		t.Fatalf("pdf summary: %q / %q", pdf.Title, pdf.Description)
	}
	var paths []string
	for _, f := range pdf.Files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "SKILL.md assets/logo.png references/deep/more.md references/guide.md scripts/extract.py" {
		t.Fatalf("files: %q", got)
	}
	logo, _ := pdf.File("assets/logo.png")
	data, err := logo.Content.Bytes()
	if err != nil || !bytes.Equal(data, pngBytes) || logo.MIME != "image/png" || logo.Digest != catalog.DigestOf(pngBytes) || logo.Size != int64(len(pngBytes)) {
		t.Fatalf("logo: %+v %v", logo, err)
	}
	if f, _ := pdf.File("SKILL.md"); f.Size != int64(len(pdfSkill)) || f.Digest != catalog.DigestOfString(pdfSkill) {
		t.Fatal("SKILL.md file entry")
	}

	prompts := s.Prompts()
	if len(prompts) != 1 || prompts[0].Name != "greet" || prompts[0].Description != "Say hello" {
		t.Fatalf("prompts: %+v", prompts)
	}
	if b, _ := prompts[0].Body.String(); b != "Hello {{name}}\n" {
		t.Fatalf("prompt body %q", b)
	}

	want := map[string]string{
		"bad/UPPER.md":         `invalid id "bad/UPPER": invalid id (segment 2 of "bad/UPPER"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "UPPER"`,
		"bad/empty.md":         "file has empty body",
		"bad/big.md":           "file is too large (262151 bytes; max 262144)",
		"wrongname/SKILL.md":   `frontmatter name "other" must equal the folder name "wrongname"`,
		"ns/prompts/nodesc.md": "frontmatter missing non-empty `description`",
		"bundle/skill.toml":    "Skills Protocol bundle (skill.toml) is not served: no bundle reader is configured",
	}
	problems := map[string]string{}
	for _, p := range s.Problems() {
		problems[p.Path] = p.Reason
		if p.File != filepath.Join(root, filepath.FromSlash(p.Path)) {
			t.Errorf("problem file %q", p.File)
		}
	}
	for path, reason := range want {
		if problems[path] != reason {
			t.Errorf("%s: got %q, want %q", path, problems[path], reason)
		}
	}
	if !strings.HasPrefix(problems["bad/fm.md"], "invalid frontmatter YAML: ") {
		t.Errorf("bad/fm.md: %q", problems["bad/fm.md"])
	}
	if !strings.HasPrefix(problems["escape.md"], "path escapes the folder") {
		t.Errorf("escape.md: %q", problems["escape.md"])
	}
	if len(problems) != len(want)+2 {
		t.Errorf("problems: %v", problems)
	}
	// One warning line per problem, naming the file.
	if n := strings.Count(logs.String(), "skipped fs entry"); n != len(problems) {
		t.Errorf("%d warning lines for %d problems:\n%s", n, len(problems), logs.String())
	}
	if !strings.Contains(logs.String(), filepath.Join(root, "bad/empty.md")) {
		t.Error("warning does not name the file")
	}
}

func TestLazyReadsStayInside(t *testing.T) {
	root := t.TempDir()
	write(t, root, "s.md", "# S\n\nbody\n")
	s := open(t, fsource.Options{Folders: []string{root}})
	e, _ := s.Skill("s")
	// The file is swapped for a symlink that leaves the folder after the
	// scan: the lazy read refuses it.
	outside := filepath.Join(t.TempDir(), "o.md")
	write(t, filepath.Dir(outside), "o.md", "# Outside\n")
	must(t, os.Remove(filepath.Join(root, "s.md")))
	must(t, os.Symlink(outside, filepath.Join(root, "s.md")))
	if b, err := e.Body.String(); err == nil {
		t.Fatalf("read outside the folder: %q", b)
	} else if !strings.HasPrefix(err.Error(), "read "+filepath.Join(root, "s.md")+": ") {
		t.Fatalf("error %v", err)
	}
	// Empty and oversized bodies read with the upstream messages.
	write(t, root, "e.md", "# E\n")
	s.Rescan()
	e2, _ := s.Skill("e")
	write(t, root, "e.md", "\n\n")
	if _, err := e2.Body.String(); err == nil || err.Error() != "file "+filepath.Join(root, "e.md")+" has empty body" {
		t.Fatalf("empty: %v", err)
	}
	write(t, root, "e.md", strings.Repeat("y", fsource.MaxFileBytes+1))
	if _, err := e2.Body.String(); err == nil || err.Error() != "file "+filepath.Join(root, "e.md")+" is too large (262145 bytes; max 262144)" {
		t.Fatalf("large: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPrecedenceBetweenFolders(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	write(t, first, "shared.md", "# From first\n")
	write(t, second, "shared.md", "# From second\n")
	write(t, second, "only.md", "# Only second\n")
	write(t, first, "ns/prompts/p.md", "---\ndescription: first\n---\nx\n")
	write(t, second, "other/prompts/p.md", "---\ndescription: second\n---\nx\n")
	cat := catalog.New()
	pub, _ := cat.AddSource("published", catalog.RankPublished)
	s := open(t, fsource.Options{Folders: []string{first, second}, Catalog: cat})

	e, _ := cat.Get("shared")
	if e.Title != "From first" || e.SourceName() != fsource.SourceName(first) {
		t.Fatalf("earlier folder should win: %+v", e)
	}
	sh := cat.Shadowed()
	if len(sh) != 1 || sh[0].ID != "shared" || sh[0].Source != fsource.SourceName(second) || sh[0].By != fsource.SourceName(first) {
		t.Fatalf("shadowed: %+v", sh)
	}
	pubEntry := &catalog.Entry{ID: "shared", Body: catalog.Inline("# Published\n"), Origin: catalog.Origin{Kind: catalog.OriginPublished}}
	pubEntry.SetSummary("# Published\n")
	must(t, pub.Put(pubEntry))
	if e, _ := cat.Get("shared"); e.Title != "Published" {
		t.Fatal("published should win")
	}
	// The folders' own view ignores the published skill.
	if e, _ := s.Skill("shared"); e.Title != "From first" {
		t.Fatal("folder view")
	}
	if p, _ := s.Prompt("p"); p.Description != "first" {
		t.Fatal("prompt precedence")
	}
	relative := open(t, fsource.Options{Folders: []string{"rel"}, Dir: first, Catalog: catalog.New()})
	if relative.Roots()[0] != filepath.Join(first, "rel") {
		t.Fatal("relative folder")
	}
	if p := relative.Problems(); len(p) != 1 || p[0].Reason != "folder does not exist" || p[0].Path != "" {
		t.Fatalf("missing folder: %+v", p)
	}
}

func TestDuplicateWithinFolder(t *testing.T) {
	root := t.TempDir()
	write(t, root, "pdf.md", "# Plain\n")
	write(t, root, "pdf/SKILL.md", "---\nname: pdf\ndescription: d\n---\n# Folder\n")
	s := open(t, fsource.Options{Folders: []string{root}})
	if e, _ := s.Skill("pdf"); e.Title != "Folder" {
		t.Fatal("skill folder should win")
	}
	p := s.Problems()
	if len(p) != 1 || p[0].Path != "pdf.md" || p[0].Reason != `duplicate id "pdf" also produced by pdf` {
		t.Fatalf("problems %+v", p)
	}
}

// events collects Set events.
type events struct {
	mu  sync.Mutex
	got []fsource.Event
	ch  chan struct{}
}

func subscribe(s *fsource.Set) *events {
	ev := &events{ch: make(chan struct{}, 1000)}
	s.Subscribe(func(es []fsource.Event) {
		ev.mu.Lock()
		ev.got = append(ev.got, es...)
		ev.mu.Unlock()
		ev.ch <- struct{}{}
	})
	return ev
}

// wait returns once an event with key and op arrived.
func (ev *events) wait(t *testing.T, kind, key string, op catalog.Op) fsource.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ev.mu.Lock()
		for i, e := range ev.got {
			if e.Kind == kind && e.Key == key && e.Op == op {
				ev.got = append(ev.got[:i:i], ev.got[i+1:]...)
				ev.mu.Unlock()
				return e
			}
		}
		ev.mu.Unlock()
		select {
		case <-ev.ch:
		case <-deadline:
			t.Fatalf("no %s %s %s event; got %+v", kind, op, key, ev.got)
		}
	}
}

func TestHotReload(t *testing.T) {
	root := t.TempDir()
	write(t, root, "keep.md", "# Keep\n")
	cat := catalog.New()
	changes := make(chan catalog.Change, 100)
	cat.Subscribe(func(c catalog.Change) { changes <- c })
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat, Watch: true})
	<-changes // keep
	ev := subscribe(s)

	// Create.
	write(t, root, "new/note.md", "# New\n")
	e := ev.wait(t, fsource.KindSkill, "new/note", catalog.OpPut)
	if e.Skill.Title != "New" || e.Path != "new/note.md" {
		t.Fatalf("create: %+v", e)
	}
	if c := <-changes; c.ID != "new/note" || c.Op != catalog.OpPut {
		t.Fatalf("catalog change %+v", c)
	}
	// Edit.
	write(t, root, "new/note.md", "# Edited\n")
	if e := ev.wait(t, fsource.KindSkill, "new/note", catalog.OpPut); e.Skill.Title != "Edited" {
		t.Fatalf("edit: %+v", e)
	}
	// Atomic save through an editor's temporary file.
	write(t, root, "new/.note.md.swp", "junk")
	write(t, root, "new/note.md.tmp", "# Atomic\n")
	must(t, os.Rename(filepath.Join(root, "new/note.md.tmp"), filepath.Join(root, "new/note.md")))
	if e := ev.wait(t, fsource.KindSkill, "new/note", catalog.OpPut); e.Skill.Title != "Atomic" {
		t.Fatalf("atomic save: %+v", e)
	}
	// Rename.
	must(t, os.Rename(filepath.Join(root, "new/note.md"), filepath.Join(root, "new/renamed.md")))
	ev.wait(t, fsource.KindSkill, "new/note", catalog.OpRemove)
	ev.wait(t, fsource.KindSkill, "new/renamed", catalog.OpPut)
	// Delete a folder.
	must(t, os.RemoveAll(filepath.Join(root, "new")))
	ev.wait(t, fsource.KindSkill, "new/renamed", catalog.OpRemove)

	// An Agent Skills folder: SKILL.md appears, a supporting file changes.
	write(t, root, "pdf/scripts/run.py", "print(1)\n")
	write(t, root, "pdf/SKILL.md", "---\nname: pdf\ndescription: PDFs\n---\n# PDF\n")
	e = ev.wait(t, fsource.KindSkill, "pdf", catalog.OpPut)
	if _, ok := e.Skill.File("scripts/run.py"); !ok {
		t.Fatalf("files %+v", e.Skill.Files)
	}
	write(t, root, "pdf/scripts/run.py", "print(2)\n")
	e = ev.wait(t, fsource.KindSkill, "pdf", catalog.OpPut)
	if f, _ := e.Skill.File("scripts/run.py"); f.Digest != catalog.DigestOfString("print(2)\n") {
		t.Fatal("supporting file digest not updated")
	}
	// A broken edit removes the skill and lists the problem; fixing it
	// brings it back.
	write(t, root, "pdf/SKILL.md", "---\nname: pdf\n---\n# PDF\n")
	ev.wait(t, fsource.KindSkill, "pdf", catalog.OpRemove)
	if p := s.Problems(); len(p) != 1 || p[0].Path != "pdf/SKILL.md" {
		t.Fatalf("problems %+v", p)
	}
	write(t, root, "pdf/SKILL.md", "---\nname: pdf\ndescription: back\n---\n# PDF\n")
	ev.wait(t, fsource.KindSkill, "pdf", catalog.OpPut)
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("problems after fix %+v", p)
	}

	// Prompts.
	write(t, root, "x/prompts/hi.md", "---\ndescription: hi\n---\nHi\n")
	ev.wait(t, fsource.KindPrompt, "hi", catalog.OpPut)
	must(t, os.Remove(filepath.Join(root, "x/prompts/hi.md")))
	ev.wait(t, fsource.KindPrompt, "hi", catalog.OpRemove)
}

func TestFolderDisappearsAndComesBack(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "skills")
	write(t, root, "a.md", "# A\n")
	s := open(t, fsource.Options{Folders: []string{root}, Watch: true})
	ev := subscribe(s)
	must(t, os.RemoveAll(root))
	ev.wait(t, fsource.KindSkill, "a", catalog.OpRemove)
	if p := s.Problems(); len(p) != 1 || p[0].Reason != "folder does not exist" {
		t.Fatalf("problems %+v", p)
	}
	write(t, root, "b.md", "# B\n")
	ev.wait(t, fsource.KindSkill, "b", catalog.OpPut)
	if !s.Folders()[0].Exists {
		t.Fatal("folder not seen again")
	}
}

type toml struct{ version string }

func TestBundleReader(t *testing.T) {
	root := t.TempDir()
	write(t, root, "sync/1.0.0/skill.toml", "version = \"1.0.0\"\n")
	write(t, root, "sync/1.0.0/SKILL.md", "# Sync one\n")
	write(t, root, "sync/2.0.0/skill.toml", "version = \"2.0.0\"\n")
	write(t, root, "sync/2.0.0/SKILL.md", "# Sync two\n")
	write(t, root, "sync/2.0.0/code/main.py", "def main(args): pass\n")
	write(t, root, "broken/skill.toml", "bad")
	reader := func(b fsource.BundleDir, e *catalog.Entry) error {
		v, ok := strings.CutPrefix(strings.TrimSpace(string(b.Manifest)), "version = ")
		if !ok {
			return os.ErrInvalid
		}
		e.ID = strings.Split(b.Dir, "/")[0]
		e.Version = strings.Trim(v, `"`)
		e.Extra = toml{version: e.Version}
		if _, ok := e.File("code/main.py"); ok {
			e.Kind = catalog.KindAction
		}
		return nil
	}
	cat := catalog.New()
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat, Bundle: reader})
	vs := cat.Versions("sync")
	if len(vs) != 2 || vs[0].Version != "2.0.0" || vs[0].Kind != catalog.KindAction || vs[0].Origin.Kind != catalog.OriginBundle || vs[0].Title != "Sync two" {
		t.Fatalf("versions %+v", vs)
	}
	if p := s.Problems(); len(p) != 1 || p[0].Path != "broken/skill.toml" || !strings.HasPrefix(p[0].Reason, "Skills Protocol bundle rejected: ") {
		t.Fatalf("problems %+v", p)
	}
}

// BundleWarning's message lists a served bundle in Warnings, not in
// Problems; a change that fixes it clears the warning.
func TestBundleWarning(t *testing.T) {
	root := t.TempDir()
	write(t, root, "sync/skill.toml", "version = \"1.0.0\"\nnosy\n")
	reader := func(b fsource.BundleDir, e *catalog.Entry) error {
		e.ID, e.Version, e.Extra = "sync", "1.0.0", string(b.Manifest)
		return nil
	}
	warn := func(e *catalog.Entry) string {
		if strings.Contains(e.Extra.(string), "nosy") {
			return "asks for a secret no grant gives it"
		}
		return ""
	}
	cat := catalog.New()
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat, Bundle: reader, BundleWarning: warn, Watch: true})
	if _, ok := cat.Get("sync"); !ok {
		t.Fatal("a bundle with a warning is not served")
	}
	if w := s.Warnings(); len(w) != 1 || w[0].Path != "sync/skill.toml" || w[0].Reason != "asks for a secret no grant gives it" || len(s.Problems()) != 0 {
		t.Fatalf("warnings %+v, problems %+v", w, s.Problems())
	}
	ev := subscribe(s)
	write(t, root, "sync/skill.toml", "version = \"1.0.0\"\n")
	ev.wait(t, fsource.KindSkill, "sync", catalog.OpPut)
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings after the fix: %+v", w)
	}
}

// A SKILL.md whose metadata is not a map of strings (here a null and a
// map, as in published skills) is served, with one warning per value in
// Warnings and the log; fixing it clears them.
func TestMetadataWarningServesTheSkill(t *testing.T) {
	root := t.TempDir()
	write(t, root, "game/SKILL.md", "---\nname: game\ndescription: d\nmetadata:\n  related-skills:\n  requires: {bins: [uv]}\n  author: me\n---\n# Game\n")
	cat := catalog.New()
	var logs testutil.Buffer
	s := open(t, fsource.Options{Folders: []string{root}, Catalog: cat, Watch: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e, ok := cat.Get("game")
	if !ok || len(s.Problems()) != 0 {
		t.Fatalf("not served: problems %+v", s.Problems())
	}
	if v, _ := e.Frontmatter.Fields.Get("metadata"); v == nil {
		t.Fatal("metadata not kept as written")
	}
	w := s.Warnings()
	if len(w) != 2 || w[0].Path != "game/SKILL.md" || w[0].File != filepath.Join(root, "game/SKILL.md") ||
		w[0].Reason != "frontmatter `metadata.related-skills` should be a string (Agent Skills: metadata maps strings to strings), got null; served as it is" ||
		w[1].Reason != "frontmatter `metadata.requires` should be a string (Agent Skills: metadata maps strings to strings), got a map; served as it is" {
		t.Fatalf("warnings %+v", w)
	}
	if got := strings.Count(logs.String(), "served fs entry with a warning"); got != 2 {
		t.Fatalf("%d warning log lines, want 2:\n%s", got, logs.String())
	}
	ev := subscribe(s)
	write(t, root, "game/SKILL.md", "---\nname: game\ndescription: d\nmetadata:\n  author: me\n---\n# Game\n")
	ev.wait(t, fsource.KindSkill, "game", catalog.OpPut)
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings after the fix: %+v", w)
	}
}

func TestFolderRecreatedIsWatchedAgain(t *testing.T) {
	root := t.TempDir()
	write(t, root, "ns/a.md", "# A\n")
	s := open(t, fsource.Options{Folders: []string{root}, Watch: true})
	ev := subscribe(s)
	must(t, os.RemoveAll(filepath.Join(root, "ns")))
	ev.wait(t, fsource.KindSkill, "ns/a", catalog.OpRemove)
	write(t, root, "ns/b.md", "# B\n")
	ev.wait(t, fsource.KindSkill, "ns/b", catalog.OpPut)
	write(t, root, "ns/c.md", "# C\n")
	ev.wait(t, fsource.KindSkill, "ns/c", catalog.OpPut)
}

// A file rewritten faster than the debounce must not postpone every
// rescan: a skill created meanwhile appears while the writer still runs.
func TestBusyWriterDoesNotStarveRescans(t *testing.T) {
	root := t.TempDir()
	write(t, root, "busy.md", "# Busy\n")
	// A debounce far longer than the writer's period: only the maximum
	// wait can flush while it runs.
	s := open(t, fsource.Options{Folders: []string{root}, Watch: true, Debounce: time.Second, MaxWait: fsource.DefaultMaxWait})
	ev := subscribe(s)

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_ = os.WriteFile(filepath.Join(root, "busy.md"), []byte(fmt.Sprintf("# Busy %d\n", i)), 0o644)
		}
	}()
	defer func() { close(stop); <-stopped }()

	// The writer only stops after this returns: without a maximum wait
	// the event never comes and wait fails at its deadline.
	write(t, root, "new.md", "# New\n")
	ev.wait(t, fsource.KindSkill, "new", catalog.OpPut)
}

// A namespace folder with a download record holds downloaded content: its
// entries are marked, a bundle there serves only ids of the namespace, a
// prompt there loses its name to the operator's in any folder, and
// removing the record (the operator adopting the folder) rescans it.
func TestDownloadedNamespace(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	write(t, first, "dl/"+fsource.DownloadRecord, `{"files":{}}`)
	write(t, first, "dl/guide.md", "# Downloaded guide\n")
	write(t, first, "dl/tool/skill.toml", "dl/tool")
	write(t, first, "dl/steal/skill.toml", "acme/crm/steal")
	write(t, first, "dl/prompts/review.md", "---\ndescription: downloaded\n---\nx\n")
	write(t, first, "dl/prompts/only.md", "---\ndescription: downloaded only\n---\nx\n")
	write(t, first, "ops/guide.md", "# Operator guide\n")
	write(t, second, "team/prompts/review.md", "---\ndescription: operator\n---\nx\n")
	reader := func(b fsource.BundleDir, e *catalog.Entry) error {
		e.ID = strings.TrimSpace(string(b.Manifest))
		return nil
	}
	cat := catalog.New()
	s := open(t, fsource.Options{Folders: []string{first, second}, Catalog: cat, Bundle: reader, Watch: true})
	for id, want := range map[string]bool{"dl/guide": true, "dl/tool": true, "ops/guide": false} {
		if e, ok := cat.Get(id); !ok || e.Origin.Downloaded != want {
			t.Fatalf("%s: %+v %v; want downloaded %v", id, e, ok, want)
		}
	}
	if _, ok := cat.Get("acme/crm/steal"); ok {
		t.Fatal("a downloaded bundle named outside its namespace is served")
	}
	if p := s.Problems(); len(p) != 1 || p[0].Path != "dl/steal" || !strings.Contains(p[0].Reason, "may only serve ids in namespace dl") {
		t.Fatalf("problems %+v", p)
	}
	if p, _ := s.Prompt("review"); p == nil || p.Description != "operator" {
		t.Fatalf("prompt review: %+v; want the operator's from the later folder", p)
	}
	if p, _ := s.Prompt("only"); p == nil || !p.Downloaded {
		t.Fatalf("prompt only: %+v", p)
	}
	if ps := s.Prompts(); len(ps) != 2 || ps[1].Description != "operator" {
		t.Fatalf("prompts %+v", ps)
	}
	must(t, os.Remove(filepath.Join(first, "dl", fsource.DownloadRecord)))
	testutil.Eventually(t, 10*time.Second, "dl/guide no longer marked downloaded once its record is removed", func() bool {
		e, ok := cat.Get("dl/guide")
		return ok && !e.Origin.Downloaded
	})
}
