package skillsext_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func published(id, body string) *catalog.Entry {
	e := &catalog.Entry{ID: id, Body: catalog.Inline(body), Origin: catalog.Origin{Kind: catalog.OriginPublished}}
	e.SetSummary(body)
	return e
}

func folder(t *testing.T, id string, files ...catalog.File) *catalog.Entry {
	t.Helper()
	e := &catalog.Entry{ID: id, Files: files, Origin: catalog.Origin{Kind: catalog.OriginFolder}}
	if md, ok := e.File("SKILL.md"); ok {
		s, _ := md.Content.String()
		raw, body, _ := catalog.SplitFrontmatter(s)
		fm, err := catalog.ParseFrontmatter(raw)
		if err != nil {
			t.Fatal(err)
		}
		e.Frontmatter, e.Body = fm, catalog.Inline(body)
	}
	return e
}

func file(p, content string) catalog.File {
	return catalog.NewFile(p, []byte(content), time.Time{}, nil)
}

func newView(t *testing.T) (*skillsext.View, *catalog.Source) {
	t.Helper()
	c := catalog.New()
	src, err := c.AddSource("test", catalog.RankPublished)
	if err != nil {
		t.Fatal(err)
	}
	v := skillsext.NewView(c)
	t.Cleanup(v.Close)
	return v, src
}

func get(t *testing.T, v *skillsext.View, p string) skillsext.Skill {
	t.Helper()
	s, ok, err := v.Skill(context.Background(), p)
	if err != nil || !ok {
		t.Fatalf("skill %s: ok=%v err=%v", p, ok, err)
	}
	return s
}

// A published skill is served as a SKILL.md synthesized from its body,
// named by the last id segment, described by the index description, with
// the digest of exactly the bytes ReadFile returns.
func TestPublishedSkill(t *testing.T) {
	v, src := newView(t)
	body := "# Refunds\n\nProcess refunds: the long first paragraph, quoted \"like this\" and with a colon: yes.\n"
	if err := src.Put(published("acme/billing/refunds", body), published("live", "# Live\n\nSee [x](iii://fn/live/x).\n")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "skills in the view", func() bool { _, ok, _ := v.Skill(context.Background(), "live"); return ok })
	s := get(t, v, "acme/billing/refunds")
	if s.Name != "refunds" || s.Dynamic || s.Problem != "" || len(s.Files) != 1 || s.Files[0].Path != "SKILL.md" || s.Origin != "published" {
		t.Fatalf("skill = %+v", s)
	}
	var fm map[string]string
	if err := json.Unmarshal(s.Frontmatter, &fm); err != nil || fm["name"] != "refunds" || fm["description"] != s.Description ||
		!strings.HasPrefix(s.Description, "Process refunds: the long") {
		t.Fatalf("frontmatter = %s (%v)", s.Frontmatter, err)
	}
	b, err := v.ReadFile(context.Background(), "acme/billing/refunds", "SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != s.Files[0].SHA256 || int64(len(b)) != s.Files[0].Size {
		t.Fatalf("digest/size of %q do not match %+v", b, s.Files[0])
	}
	raw, rest, ok := catalog.SplitFrontmatter(string(b))
	parsed, perr := catalog.ParseFrontmatter(raw)
	if !ok || perr != nil || rest != "\n"+body && rest != body {
		t.Fatalf("synthesized SKILL.md does not split back: %q (%v)", b, perr)
	}
	if n, _ := parsed.Fields.String("name"); n != "refunds" {
		t.Fatalf("name in SKILL.md = %q", n)
	}
	if d, _ := parsed.Fields.String("description"); d != s.Description {
		t.Fatalf("description in SKILL.md = %q, entry %q", d, s.Description)
	}
	if live := get(t, v, "live"); !live.Dynamic {
		t.Fatalf("a body linking to iii://fn/ is dynamic: %+v", live)
	}
	if _, err := v.ReadFile(context.Background(), "acme/billing/refunds", "other.md"); !errors.Is(err, skillsext.ErrNoSuchFile) {
		t.Fatalf("unknown file: %v", err)
	}
}

// Folder skills keep their frontmatter and files; broken ones carry a
// Problem naming what is wrong.
func TestFolderSkillsAndProblems(t *testing.T) {
	v, src := newView(t)
	many := []catalog.File{file("SKILL.md", "---\nname: many\ndescription: d\n---\n")}
	for i := range skillsext.MaxFiles {
		many = append(many, file(fmt.Sprintf("f/%04d", i), "x"))
	}
	big := []catalog.File{file("SKILL.md", "---\nname: big\ndescription: d\n---\n"), {Path: "blob.bin", Size: skillsext.MaxBytes, MIME: "application/octet-stream"}}
	err := src.Put(
		folder(t, "tools/pdf", file("SKILL.md", "---\nname: pdf\ndescription: PDFs\nmetadata:\n  version: \"2\"\n---\n# PDF\n"), file("scripts/x.py", "print(1)\n")),
		folder(t, "wrong", file("SKILL.md", "---\nname: other\ndescription: d\n---\n")),
		folder(t, "nodesc", file("SKILL.md", "---\nname: nodesc\n---\n")),
		folder(t, "many", many...),
		folder(t, "big", big...),
		published("snake_case", "# S\n\nd\n"),
	)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "skills in the view", func() bool { _, ok, _ := v.Skill(context.Background(), "snake_case"); return ok })
	pdf := get(t, v, "tools/pdf")
	if pdf.Problem != "" || string(pdf.Frontmatter) != `{"name":"pdf","description":"PDFs","metadata":{"version":"2"}}` || len(pdf.Files) != 2 || pdf.Origin != "folder" {
		t.Fatalf("pdf = %+v frontmatter %s", pdf, pdf.Frontmatter)
	}
	for p, want := range map[string]string{
		"wrong":      `frontmatter name "other" must equal the last segment of the skill path "wrong"`,
		"nodesc":     "has no description",
		"many":       "has 513 files; the MCP Skills extension allows at most 512 per skill",
		"big":        "the MCP Skills extension allows at most 16 MiB (16777216 bytes) per skill",
		"snake_case": `name "snake_case" is not a valid Agent Skills name`,
	} {
		if got := get(t, v, p).Problem; !strings.Contains(got, want) {
			t.Errorf("%s: problem %q, want it to contain %q", p, got, want)
		}
	}
}

// Listing is in path order and pages by the last path; changes reach
// watchers and the listing.
func TestListAndWatch(t *testing.T) {
	v, src := newView(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan string, 16)
	if _, err := v.Watch(ctx, func(p string) { seen <- p }); err != nil {
		t.Fatal(err)
	}
	if err := src.Put(published("b", "# B\n\nb\n"), published("a/x", "# A\n\na\n"), published("c", "# C\n\nc\n")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			t.Fatal("no change event")
		}
	}
	page, more, _ := v.ListSkills(ctx, "", 2)
	if len(page) != 2 || page[0].Path != "a/x" || page[1].Path != "b" || !more {
		t.Fatalf("first page = %+v more=%v", page, more)
	}
	page, more, _ = v.ListSkills(ctx, "b", 2)
	if len(page) != 1 || page[0].Path != "c" || more {
		t.Fatalf("second page = %+v more=%v", page, more)
	}
	src.Remove("b")
	select {
	case p := <-seen:
		if p != "b" {
			t.Fatalf("change for %s, want b", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change event for the removal")
	}
	if all, _, _ := v.ListSkills(ctx, "", 0); len(all) != 2 {
		t.Fatalf("after removal: %+v", all)
	}
}
