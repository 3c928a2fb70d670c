package mcp_test

import (
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// TestSearchSkillsTool: the search_skills tool is listed read-only, ranks
// the registry's skills through skills::search, says when nothing matches,
// passes the registry's refusals on, and the instructions point to it;
// skill::search is also mirrored as skill__search.
func TestSearchSkillsTool(t *testing.T) {
	s := newStack(t)
	s.seed()
	s.registerSkill("images/optimize", "# Image optimisation\n\nCompress and resize PNG and JPEG files so pages load fast.\n")
	s.startMCP(skillsmcp.Options{})
	cs := s.connectInMemory(v2025, nil)
	if got := cs.InitializeResult().Instructions; !strings.Contains(got, skillsmcp.ToolSearchSkills) || !strings.Contains(got, "before reading the index") {
		t.Fatalf("instructions do not point to search: %q", got)
	}
	tools, err := cs.ListTools(s.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found, alias bool
	for _, tl := range tools.Tools {
		switch tl.Name {
		case skillsmcp.ToolSearchSkills:
			found = true
			if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
				t.Fatalf("search_skills is not marked read-only: %+v", tl.Annotations)
			}
		case "skill__search":
			alias = true
		}
	}
	if !found || !alias {
		t.Fatalf("tools: search_skills %v, skill__search %v", found, alias)
	}
	call := func(args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(s.ctx, &sdk.CallToolParams{Name: skillsmcp.ToolSearchSkills, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var res *sdk.CallToolResult
	testutil.Eventually(t, 5*time.Second, "search_skills finds the image skill", func() bool {
		res = call(map[string]any{"query": "shrink images for the web"})
		return !res.IsError && strings.Contains(text(res.Content[0]), "iii://images/optimize")
	})
	if got := text(res.Content[0]); !strings.HasPrefix(got, "1. iii://images/optimize — Image optimisation: Compress and resize") {
		t.Fatalf("search_skills text: %q", got)
	}
	if res.StructuredContent == nil {
		t.Fatal("search_skills has no structured content")
	}
	res = call(map[string]any{"query": "zygote xylophone quokka"})
	if res.IsError || !strings.HasPrefix(text(res.Content[0]), "No skill matches this query.") {
		t.Fatalf("no match: %q", text(res.Content[0]))
	}
	res = call(map[string]any{"query": ""})
	if !res.IsError || !strings.Contains(text(res.Content[0]), "query is empty") {
		t.Fatalf("empty query: error %v %q", res.IsError, text(res.Content[0]))
	}
	res = call(map[string]any{"query": "x", "limit": 1000})
	if !res.IsError || !strings.Contains(text(res.Content[0]), "limit must be an integer from 1 to 100") {
		t.Fatalf("bad limit: %q", text(res.Content[0]))
	}
}

// Against a registry without skills::search (upstream v0.2.2), the tool
// says so and points to the index.
func TestSearchSkillsToolWithoutSearchFunction(t *testing.T) {
	ctx, eng := startEngine(t)
	cli := iii.RegisterWorker(eng.URL(), iii.WithName("skills-mcp-test"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = cli.Close() })
	connect(t, cli)
	srv := skillsmcp.New(cli, skillsmcp.Options{Registry: core.NewRemote(cli, core.RemoteOptions{Logger: quiet()}), Logger: quiet()})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, ct := sdk.NewInMemoryTransports()
	if _, err := srv.SDK().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: skillsmcp.ToolSearchSkills, Arguments: map[string]any{"query": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res.Content[0]), "read the resource iii://skills") {
		t.Fatalf("without skills::search: %v %q", res.IsError, text(res.Content[0]))
	}
}
