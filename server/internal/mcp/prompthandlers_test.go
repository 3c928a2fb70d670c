package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// prompts/list offers only prompts that can render: one whose publisher
// is gone leaves the list (list_changed) and comes back with its handler;
// a prompts/get of it meanwhile answers the registry's error.
func TestPromptsListFollowsTheirHandlers(t *testing.T) {
	s := newStack(t)
	publisher := func() *iii.Client {
		p := iii.RegisterWorker(s.url, iii.WithName("prompt-publisher"), iii.WithLogger(quiet()))
		if _, err := p.RegisterFunction("gone::render", func(context.Context, json.RawMessage) (any, error) {
			return "Rendered by gone::render", nil
		}, iii.RegisterFunctionOptions{Metadata: map[string]any{"internal": true}}); err != nil {
			t.Fatal(err)
		}
		connect(t, p)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	pub := publisher()
	data, _ := json.Marshal(map[string]string{"name": "gone", "description": "Its publisher goes away", "function_id": "gone::render"})
	if _, err := pub.Trigger(s.ctx, iii.TriggerRequest{FunctionID: "prompts::register", Data: data, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	s.startMCP(skillsmcp.Options{})
	n := &notes{}
	cs := s.connectInMemory(v2025, n)
	listed := func() bool {
		res, err := cs.ListPrompts(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Prompts, func(p *sdk.Prompt) bool { return p.Name == "gone" })
	}
	testutil.Eventually(t, 10*time.Second, "the prompt is offered while its handler is there", listed)

	_ = pub.Close()
	testutil.Eventually(t, 10*time.Second, "the prompt leaves prompts/list with its publisher", func() bool { return !listed() })
	testutil.Eventually(t, 10*time.Second, "list_changed is sent", func() bool { return n.count("notifications/prompts/list_changed") > 0 })
	_, err := cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "gone"})
	if err == nil || !strings.Contains(err.Error(), "trigger gone::render") || !strings.Contains(err.Error(), "function_not_found") {
		t.Fatalf("prompts/get of a prompt whose handler is gone: %v", err)
	}
	// The registry itself still lists it over iii, as upstream does.
	var list struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(s.trigger("prompts::mcp-list", nil), &list); err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "gone" {
		t.Fatalf("prompts::mcp-list: %+v, %v", list, err)
	}

	before := n.count("notifications/prompts/list_changed")
	publisher()
	testutil.Eventually(t, 10*time.Second, "the prompt returns with its handler", listed)
	testutil.Eventually(t, 10*time.Second, "list_changed is sent again", func() bool {
		return n.count("notifications/prompts/list_changed") > before
	})
	res, err := cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "gone"})
	if err != nil || len(res.Messages) != 1 || text(res.Messages[0].Content) != "Rendered by gone::render" {
		t.Fatalf("prompts/get once the handler is back: %+v, %v", res, err)
	}
}
