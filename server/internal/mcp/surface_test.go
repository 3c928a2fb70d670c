package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// checkSurface drives every mapped method through cs.
func checkSurface(t *testing.T, cs *sdk.ClientSession) {
	ctx := context.Background()

	t.Run("resources/list", func(t *testing.T) {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range res.Resources {
			if strings.HasPrefix(r.URI, "iii://") { // skill:// entries follow when the catalog is served
				uris = append(uris, r.URI)
			}
		}
		want := []string{"iii://skills", "iii://demo", "iii://demo/nested", "iii://other"}
		if !slices.Equal(uris, want) {
			t.Fatalf("uris = %v, want %v (index first, then by id, nested included)", uris, want)
		}
		idx, demo, other := res.Resources[0], res.Resources[1], res.Resources[3]
		if idx.Name != "skills" || idx.Description != "Index of every registered skill" || idx.MIMEType != "text/markdown" {
			t.Errorf("index entry = %+v", idx)
		}
		if demo.Name != "Demo skill" || demo.Description != "" || demo.MIMEType != "text/markdown" {
			t.Errorf("demo entry = %+v (name is the H1 title, no description)", demo)
		}
		if other.Name != "other" {
			t.Errorf("a skill without H1 is named by its id, got %q", other.Name)
		}
	})

	t.Run("resources/read", func(t *testing.T) {
		for uri, want := range map[string]string{
			"iii://demo":         "How to use the demo worker.",
			"iii://demo/nested":  "A sub-skill.",
			"iii://skills":       "- [`demo/nested`](iii://demo/nested) — Nested demo — A sub-skill.",
			"iii://fn/demo/echo": "rendered by demo::echo",
		} {
			res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatalf("%s: %v", uri, err)
			}
			if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].MIMEType != "text/markdown" ||
				!strings.Contains(res.Contents[0].Text, want) {
				t.Errorf("%s: contents = %+v, want text containing %q", uri, res.Contents, want)
			}
		}
	})

	t.Run("resources/read errors are invalid params with the registry message", func(t *testing.T) {
		for uri, msg := range map[string]string{
			"iii://missing":       "Skill not found: missing",
			"iii://a//b":          "may not contain empty segments",
			"file:///etc/passwd":  "Resource URI must start with iii://",
			"iii://fn/state/get":  "internal namespace",
			"iii://fn/no/such/fn": "function_not_found",
			"iii://Bad/Case":      "segment may only contain",
		} {
			_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			if rpcCode(err) != -32602 || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: err = %v, want -32602 containing %q", uri, err, msg)
			}
		}
	})

	t.Run("resources/templates/list", func(t *testing.T) {
		res, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rt := range res.ResourceTemplates {
			got = append(got, rt.URITemplate)
		}
		if !slices.Equal(got, []string{"iii://{skill_id}", "iii://fn/{function_path}"}) {
			t.Fatalf("templates = %v", got)
		}
	})

	t.Run("prompts/list", func(t *testing.T) {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Prompts) != 1 {
			t.Fatalf("prompts = %+v", res.Prompts)
		}
		p := res.Prompts[0]
		if p.Name != "greet" || p.Description != "Greets someone" || len(p.Arguments) != 2 ||
			*p.Arguments[0] != (sdk.PromptArgument{Name: "to", Description: "Who to greet", Required: true}) ||
			*p.Arguments[1] != (sdk.PromptArgument{Name: "tone"}) {
			b, _ := json.Marshal(p)
			t.Fatalf("prompt = %s", b)
		}
	})

	t.Run("prompts/get", func(t *testing.T) {
		res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"to": "alice@example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Description != "Greets someone" || len(res.Messages) != 1 || res.Messages[0].Role != "user" ||
			text(res.Messages[0].Content) != "Say hello to alice@example.com" {
			b, _ := json.Marshal(res)
			t.Fatalf("result = %s", b)
		}
	})

	t.Run("prompts/get errors", func(t *testing.T) {
		_, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "no-such-prompt"})
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "Prompt not found: no-such-prompt") {
			t.Errorf("unknown prompt: %v", err)
		}
		_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet"})
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), `Missing required argument "to"`) {
			t.Errorf("missing argument: %v", err)
		}
		_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "Bad Name"})
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "name may only contain") {
			t.Errorf("bad name: %v", err)
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*sdk.Tool{}
		var names []string
		for _, tl := range res.Tools {
			byName[tl.Name] = tl
			names = append(names, tl.Name)
		}
		for _, want := range []string{"skill__fetch", "demo__echo", "demo__fail", "greet__render"} {
			if byName[want] == nil {
				t.Errorf("tool %s missing from %v", want, names)
			}
		}
		for _, name := range names {
			fid := strings.ReplaceAll(name, "__", "::")
			for _, hidden := range []string{"engine::", "state::", "skills::", "prompts::", "mcp::"} {
				if strings.HasPrefix(fid, hidden) {
					t.Errorf("hidden function listed as tool %s", name)
				}
			}
			if name == "demo__secret" {
				t.Errorf("a function with metadata internal:true is listed")
			}
		}
		if !slices.IsSorted(names) {
			t.Errorf("tools not in a deterministic (sorted) order: %v", names)
		}
		if f := byName["skill__fetch"]; f != nil && !strings.Contains(f.Description, "iii:// URIs") {
			t.Errorf("skill__fetch description = %q", f.Description)
		}
		if e := byName["demo__echo"]; e != nil {
			b, _ := json.Marshal(e.InputSchema)
			var schema map[string]any
			_ = json.Unmarshal(b, &schema)
			props, _ := schema["properties"].(map[string]any)
			if schema["type"] != "object" || props["text"] == nil || schema["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("demo__echo inputSchema = %s", b)
			}
			if flag, ok := props["flag"].(map[string]any); !ok || len(flag) != 0 {
				t.Errorf("boolean property schema not turned into {}: %s", b)
			}
			if e.Description != "Echoes its input" {
				t.Errorf("demo__echo description = %q", e.Description)
			}
		}
		if g := byName["greet__render"]; g != nil && g.Description != "Calls the iii function greet::render (it published no description)." {
			t.Errorf("a function without description gets a fallback, got %q", g.Description)
		}
		if f := byName["demo__fail"]; f != nil {
			b, _ := json.Marshal(f.InputSchema)
			if string(b) != `{"type":"object"}` {
				t.Errorf("a function without request format gets {type:object}, got %s", b)
			}
		}
	})

	t.Run("completion/complete", func(t *testing.T) {
		res, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "iii://{skill_id}"},
			Argument: sdk.CompleteParamsArgument{Name: "skill_id", Value: "demo"}})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"demo", "demo/nested"}) {
			t.Errorf("skill_id completion: %v %+v", err, res)
		}
		res, err = cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "iii://fn/{function_path}"},
			Argument: sdk.CompleteParamsArgument{Name: "function_path", Value: "demo/e"}})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"demo/echo"}) {
			t.Errorf("function_path completion: %v %+v", err, res)
		}
		res, err = cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "greet"},
			Argument: sdk.CompleteParamsArgument{Name: "to", Value: "a"}})
		if err != nil || len(res.Completion.Values) != 0 {
			t.Errorf("prompt argument completion: %v %+v", err, res)
		}
	})

	t.Run("tools/call", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		if got := text(res.Content[0]); got != "{\n  \"echo\": {\n    \"text\": \"hi\"\n  }\n}" {
			t.Errorf("text = %q", got)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if string(b) != `{"echo":{"text":"hi"}}` {
			t.Errorf("structuredContent = %s", b)
		}

		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "skill__fetch", Arguments: map[string]any{"uris": []string{"iii://demo", "iii://demo/nested"}}})
		if err != nil || res.IsError {
			t.Fatalf("skill__fetch: %v %+v", err, res)
		}
		if got := text(res.Content[0]); !strings.HasPrefix(got, "# iii://demo\n\n# Demo skill") || !strings.Contains(got, "\n\n---\n\n# iii://demo/nested\n\n") {
			t.Errorf("skill__fetch text = %q", got)
		}
	})

	t.Run("tools/call failures", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "demo__fail", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(text(res.Content[0]), "demo failure: the widget is broken") {
			t.Errorf("failing tool: %v %+v", err, res)
		}
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "skill__fetch", Arguments: map[string]any{"uri": "iii://missing"}})
		if err != nil || !res.IsError || !strings.Contains(text(res.Content[0]), "Skill not found: missing") {
			t.Errorf("fetch of a missing skill: %v %+v", err, res)
		}
		for _, hidden := range []string{"state__get", "skills__register", "skills__fetch_skill", "engine__functions__list"} {
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: hidden, Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(text(res.Content[0]), "internal namespace") {
				t.Errorf("hidden %s: %v %+v", hidden, err, res)
			}
		}
		_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "no__such__tool", Arguments: map[string]any{}})
		if rpcCode(err) != -32602 {
			t.Errorf("unknown tool: %v", err)
		}
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "demo__secret", Arguments: map[string]any{}})
		if rpcCode(err) != -32602 {
			t.Errorf("an internal (unlisted) function is callable: %v %+v", err, res)
		}
	})
}

func TestInMemory(t *testing.T) {
	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			s := newStack(t)
			s.seed()
			s.startMCP(skillsmcp.Options{})
			checkSurface(t, s.connectInMemory(v, nil))
		})
	}
}

func TestHTTP(t *testing.T) {
	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			s := newStack(t)
			s.seed()
			s.startMCP(skillsmcp.Options{})
			endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})
			checkSurface(t, s.connectClient(&sdk.StreamableClientTransport{Endpoint: endpoint}, v, nil))
		})
	}
}

func TestPagination(t *testing.T) {
	s := newStack(t)
	s.seed()
	s.startMCP(skillsmcp.Options{PageSize: 2})
	s.registerSkill("zeta", "# Z\n")
	cs := s.connectInMemory(v2026, nil)
	ctx := context.Background()

	var uris []string
	cursor, pages := "", 0
	for {
		res, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Resources) > 2 {
			t.Fatalf("page of %d > PageSize 2", len(res.Resources))
		}
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
		if pages == 1 {
			// A skill registered between pages is not repeated and nothing is skipped.
			s.registerSkill("aaa", "# A\n")
		}
	}
	want := []string{"iii://skills", "iii://demo", "iii://demo/nested", "iii://other", "iii://zeta"}
	if !slices.Equal(uris, want) || pages != 3 {
		t.Fatalf("walked %v in %d pages, want %v in 3", uris, pages, want)
	}

	var all []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tl.Name)
	}
	if !slices.Contains(all, "skill__fetch") || !slices.Contains(all, "greet__render") {
		t.Fatalf("tools across pages: %v", all)
	}

	if _, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: "not-a-cursor"}); rpcCode(err) != -32602 {
		t.Fatalf("invalid cursor: %v", err)
	}
}
