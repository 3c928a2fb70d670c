package worker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// agentSkill builds an Agent Skills folder skill with supporting files,
// as a skills folder would.
func agentSkill(id, description, body string, files map[string][]byte) *catalog.Entry {
	fm, _ := catalog.ParseFrontmatter("name: " + id + "\ndescription: " + description + "\n")
	e := &catalog.Entry{ID: id, Kind: catalog.KindInstruction, Body: catalog.Inline(body), Frontmatter: fm, Main: "SKILL.md",
		Origin: catalog.Origin{Kind: catalog.OriginFolder, Source: "/srv/skills", Path: id + "/SKILL.md"}}
	e.SetSummary(body)
	e.Files = append(e.Files, catalog.NewFile("SKILL.md", []byte("---\nname: "+id+"\n---\n"+body), time.Time{}, nil))
	for p, b := range files {
		e.Files = append(e.Files, catalog.NewFile(p, b, time.Time{}, nil))
	}
	slicesSortFiles(e.Files)
	return e
}

func slicesSortFiles(fs []catalog.File) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].Path < fs[j-1].Path; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

func (s *stack) search(t *testing.T, fn string, payload any) core.SearchOutput {
	t.Helper()
	var out core.SearchOutput
	s.mustCall(t, fn, payload, &out)
	return out
}

func ids(out core.SearchOutput) []string {
	var r []string
	for _, h := range out.Results {
		r = append(r, h.ID)
	}
	return r
}

// TestSearchFunction: skills::search and skill::search rank published and
// folder skills, follow changes, and flag queries nothing matches.
func TestSearchFunction(t *testing.T) {
	s := startStack(t, t.TempDir())
	src, err := s.reg.Catalog().AddSource("folder:/srv/skills", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(
		agentSkill("image-optimization", "Compress and resize PNG and JPEG images so web pages load quickly.", "# Image optimization\n\nUse sharp or ImageMagick.\n\n## Resizing\n\nKeep the aspect ratio.\n", nil),
		agentSkill("pdf-processing", "Extract text and tables from PDF files, fill forms, merge documents.", "# PDF processing\n\nUse pypdf.\n", nil),
	); err != nil {
		t.Fatal(err)
	}
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "team/deploy", "skill": "# Deploy to production\n\nShip a release with a rollout checklist.\n"}, nil)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "team/review", "skill": "# Code review\n\nReview pull requests for bugs.\n"}, nil)

	var out core.SearchOutput
	testutil.Eventually(t, 5*time.Second, "the index has the four skills", func() bool {
		out = s.search(t, rules.FnSkillsSearch, map[string]any{"query": "shrink images for the web"})
		if len(out.Results) == 0 {
			return false
		}
		for q, id := range map[string]string{"pdf tables": "pdf-processing", "rollout checklist": "team/deploy", "pull requests": "team/review"} {
			if r := s.search(t, rules.FnSkillsSearch, map[string]any{"query": q}).Results; len(r) == 0 || r[0].ID != id {
				return false
			}
		}
		return true
	})
	out = s.search(t, rules.FnSkillsSearch, map[string]any{"query": "shrink images for the web"})
	if out.Results[0].ID != "image-optimization" || out.LowConfidence {
		t.Fatalf("paraphrase: %+v", out)
	}
	top := out.Results[0]
	if top.Title != "Image optimization" || top.Origin != "folder" || top.URI != "iii://image-optimization" ||
		!strings.HasPrefix(top.Description, "Compress and resize") || top.Score <= 0 {
		t.Fatalf("result shape: %+v", top)
	}
	// The alias answers the same.
	if alias := s.search(t, rules.FnSkillSearch, map[string]any{"query": "shrink images for the web"}); alias.Results[0] != top {
		t.Fatalf("skill::search %+v, skills::search %+v", alias.Results[0], top)
	}
	// Published skills, namespace and limit.
	out = s.search(t, rules.FnSkillsSearch, map[string]any{"query": "ship a release to production", "namespace": "team", "limit": 1})
	if got := ids(out); len(got) != 1 || got[0] != "team/deploy" || out.Results[0].Origin != "published" {
		t.Fatalf("namespace/limit: %+v", out)
	}
	out = s.search(t, rules.FnSkillsSearch, map[string]any{"query": "merge pdf documents", "namespace": "team"})
	for _, id := range ids(out) {
		if !strings.HasPrefix(id, "team/") {
			t.Fatalf("namespace team returned %s", id)
		}
	}
	// Nothing matches: empty and flagged.
	out = s.search(t, rules.FnSkillsSearch, map[string]any{"query": "zygote xylophone quokka"})
	if len(out.Results) != 0 || !out.LowConfidence || out.Results == nil {
		t.Fatalf("no match: %+v", out)
	}
	// A change is searchable as soon as the catalog serves it; a removal drops it.
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "team/quokka", "skill": "# Quokka census\n\nCount quokkas on Rottnest island.\n"}, nil)
	testutil.Eventually(t, 5*time.Second, "the new skill is found", func() bool {
		got := ids(s.search(t, rules.FnSkillsSearch, map[string]any{"query": "quokka"}))
		return len(got) == 1 && got[0] == "team/quokka"
	})
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "team/quokka"}, nil)
	testutil.Eventually(t, 5*time.Second, "the removed skill is gone", func() bool {
		return len(s.search(t, rules.FnSkillsSearch, map[string]any{"query": "quokka"}).Results) == 0
	})
	src.Remove("pdf-processing")
	testutil.Eventually(t, 5*time.Second, "the removed folder skill is gone", func() bool {
		for _, id := range ids(s.search(t, rules.FnSkillsSearch, map[string]any{"query": "pdf"})) {
			if id == "pdf-processing" {
				return false
			}
		}
		return true
	})
}

func TestSearchBadInput(t *testing.T) {
	s := startStack(t, t.TempDir())
	for _, c := range []struct {
		payload any
		want    string
	}{
		{json.RawMessage(`null`), "search: input must be a JSON object"},
		{json.RawMessage(`[]`), "search: input must be a JSON object"},
		{map[string]any{}, "query is required"},
		{map[string]any{"query": 5}, "query must be a string of words, got 5"},
		{map[string]any{"query": "   "}, "query is empty"},
		{map[string]any{"query": strings.Repeat("a ", 600)}, "query too long (1200 chars; max 1000)"},
		{map[string]any{"query": "x", "limit": 0}, "limit must be an integer from 1 to 100, got 0"},
		{map[string]any{"query": "x", "limit": 101}, "limit must be an integer from 1 to 100, got 101"},
		{map[string]any{"query": "x", "limit": 2.5}, "limit must be an integer from 1 to 100, got 2.5"},
		{map[string]any{"query": "x", "limit": "3"}, `limit must be an integer from 1 to 100, got "3"`},
		{map[string]any{"query": "x", "namespace": 1}, "namespace must be a string"},
		{map[string]any{"query": "x", "namespace": "Bad NS"}, `namespace "Bad NS" is not a skill id prefix`},
		{map[string]any{"query": "x", "top_k": 3}, `unknown field "top_k"`},
	} {
		for _, fn := range []string{rules.FnSkillsSearch, rules.FnSkillSearch} {
			err := s.call(t, fn, c.payload, nil)
			var ie *iii.InvocationError
			if !errors.As(err, &ie) || ie.Code != rules.CodeInvalidArguments || !strings.Contains(ie.Message, c.want) {
				t.Errorf("%s %v: %v, want INVALID_ARGUMENTS %q", fn, c.payload, err, c.want)
			}
		}
	}
	// Stop words only: a valid query with nothing to match.
	out := s.search(t, rules.FnSkillsSearch, map[string]any{"query": "the and of"})
	if len(out.Results) != 0 || !out.LowConfidence {
		t.Fatalf("stop words: %+v", out)
	}
}

// TestSupportingFiles: iii://<skill>/<path> reads a file of an Agent Skills
// folder through skill::fetch and skills::resources-read; binary files get
// a notice; ids that are no such file keep upstream's answers.
func TestSupportingFiles(t *testing.T) {
	s := startStack(t, t.TempDir())
	src, err := s.reg.Catalog().AddSource("folder:/srv/skills", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	if err := src.Put(agentSkill("mcp-builder", "Build MCP servers.", "# MCP builder\n\nSee [evaluation](reference/evaluation.md).\n", map[string][]byte{
		"reference/evaluation.md": []byte("# Evaluation\n\nTen questions.\n"),
		"scripts/check.py":        []byte("print('ok')\n"),
		"assets/logo.png":         png,
	})); err != nil {
		t.Fatal(err)
	}
	var got string
	s.mustCall(t, rules.FnSkillFetch, map[string]string{"uri": "iii://mcp-builder/reference/evaluation.md"}, &got)
	if got != "# iii://mcp-builder/reference/evaluation.md\n\n# Evaluation\n\nTen questions." {
		t.Fatalf("fetch file: %q", got)
	}
	s.mustCall(t, rules.FnSkillFetch, map[string]any{"uris": []string{"mcp-builder", "mcp-builder/scripts/check.py"}}, &got)
	if !strings.Contains(got, "# MCP builder") || !strings.HasSuffix(got, "# iii://mcp-builder/scripts/check.py\n\nprint('ok')") {
		t.Fatalf("fetch batch: %q", got)
	}
	var read registry.ReadResult
	s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://mcp-builder/scripts/check.py"}, &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != "print('ok')\n" || read.Contents[0].MimeType != "text/x-python" {
		t.Fatalf("resources-read: %+v", read)
	}
	s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://mcp-builder/assets/logo.png"}, &read)
	if txt := read.Contents[0].Text; !strings.Contains(txt, "image/png, 16 bytes") || !strings.Contains(txt, "skill://mcp-builder/assets/logo.png") || strings.Contains(txt, "PNG") {
		t.Fatalf("binary: %+v", read)
	}
	// Not a file of a served skill: upstream's answers, unchanged.
	for uri, want := range map[string]string{
		"iii://mcp-builder/reference/missing.md": "segment",
		"iii://nope/reference/evaluation.md":     "segment",
		"iii://mcp-builder/../x.md":              "segment",
		"iii://mcp-builder/reference":            "Skill not found: mcp-builder/reference",
	} {
		err := s.call(t, rules.FnSkillFetch, map[string]string{"uri": uri}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", uri, err, want)
		}
	}
}
