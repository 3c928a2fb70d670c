package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The initialize instructions point an agent at iii://skills, at
// skills/list when the catalog is served as skill://, and at the skill
// tools only when they are served (Options.NoSkillTools,
// --mcp-no-skill-tools, leaves them out).
func TestInstructionsAndNoSkillTools(t *testing.T) {
	s := newStack(t)
	s.seed()
	view := skillsext.NewView(s.cat)
	t.Cleanup(view.Close)

	s.startMCP(skillsmcp.Options{})
	got := s.connectInMemory(v2025, nil).InitializeResult().Instructions
	if got != skillsmcp.Instructions || !strings.Contains(got, "iii://skills") || strings.Contains(got, "skills/list") {
		t.Fatalf("instructions without a skill catalog: %q", got)
	}

	s.startMCPView(view, skillsmcp.Options{})
	cs := s.connectInMemory(v2025, nil)
	got = cs.InitializeResult().Instructions
	for _, want := range []string{"iii://skills", "skills/list", "io.modelcontextprotocol/skills", "skill://<path>/SKILL.md", skillsmcp.ToolListSkills, skillsmcp.ToolReadSkill} {
		if !strings.Contains(got, want) {
			t.Fatalf("instructions lack %q: %q", want, got)
		}
	}
	if names := toolNames(t, s.ctx, cs); !names[skillsmcp.ToolListSkills] || !names[skillsmcp.ToolReadSkill] {
		t.Fatalf("skill tools not listed: %v", names)
	}

	s.startMCPView(view, skillsmcp.Options{NoSkillTools: true})
	cs = s.connectInMemory(v2025, nil)
	got = cs.InitializeResult().Instructions
	if got != skillsmcp.Instructions+skillsmcp.SkillsInstructions || strings.Contains(got, skillsmcp.ToolListSkills) {
		t.Fatalf("instructions with NoSkillTools: %q", got)
	}
	names := toolNames(t, s.ctx, cs)
	if names[skillsmcp.ToolListSkills] || names[skillsmcp.ToolReadSkill] {
		t.Fatalf("NoSkillTools still lists the skill tools: %v", names)
	}
	if !names["skill__fetch"] {
		t.Fatalf("NoSkillTools dropped the registry tools too: %v", names)
	}
	res, err := cs.CallTool(s.ctx, &sdk.CallToolParams{Name: skillsmcp.ToolListSkills, Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatalf("%s answered with NoSkillTools: %+v", skillsmcp.ToolListSkills, res.Content)
	}
	// The skill:// surface itself is still served.
	if _, err := cs.ReadResource(s.ctx, &sdk.ReadResourceParams{URI: "skill://demo/SKILL.md"}); err != nil {
		t.Fatalf("skill://demo/SKILL.md with NoSkillTools: %v", err)
	}
}

func toolNames(t *testing.T, ctx context.Context, cs *sdk.ClientSession) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	return names
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, id, data string }

func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "event":
				ev.name = v
			case "id":
				ev.id = v
			case "data":
				ev.data = v
			}
		}
		out = append(out, ev)
	}
	return out
}

// A 2025-11-25 response stream opens with go-sdk's priming event; the
// endpoint drops its "prime" name (clients log unknown event names) but
// keeps its id, so a GET with Last-Event-ID set to it still replays what
// followed on that stream.
func TestPrimingEventKeepsStreamResumable(t *testing.T) {
	s := newStack(t)
	s.startMCP(skillsmcp.Options{})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()

	session := ""
	send := func(method string, header map[string]string, body any) (*http.Response, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, endpoint, rd)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", v2025)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
		}
		return resp, b
	}
	resp, _ := send(http.MethodPost, nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": v2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
	if session = resp.Header.Get("Mcp-Session-Id"); session == "" {
		t.Fatal("no Mcp-Session-Id on the 2025-11-25 initialize answer")
	}
	send(http.MethodPost, nil, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})

	resp, body := send(http.MethodPost, nil, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "ping"})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("ping answered as %q, want an SSE stream: %s", ct, body)
	}
	if bytes.Contains(body, []byte("event: prime")) {
		t.Fatalf("the priming event still carries its name: %q", body)
	}
	evs := parseSSE(t, body)
	if len(evs) != 2 || evs[0].id == "" || evs[0].data != "" || evs[0].name != "" || !strings.Contains(evs[1].data, `"id":2`) {
		t.Fatalf("want an unnamed priming event with an id, then the answer: %+v", evs)
	}

	_, replay := send(http.MethodGet, map[string]string{"Last-Event-ID": evs[0].id, "Accept": "text/event-stream"}, nil)
	again := parseSSE(t, replay)
	if len(again) == 0 || again[len(again)-1].data != evs[1].data || again[len(again)-1].id != evs[1].id {
		t.Fatalf("GET with Last-Event-ID %s replayed %+v, want the answer %+v", evs[0].id, again, evs[1])
	}
}
