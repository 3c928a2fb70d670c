package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/registry"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real iii engine drops a result now and then (a worker answering
// before the engine recorded the invocation): a skill read that gets no
// answer is sent once more, so the MCP client still gets its content.
// Here a stand-in registry ignores the first skills::resources-read, like
// a dropped result.
func TestUnansweredReadIsSentAgain(t *testing.T) {
	ctx, eng := startEngine(t)

	reg := iii.RegisterWorker(eng.URL(), iii.WithName("lossy-registry"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = reg.Close() })
	for _, tt := range []string{rules.TriggerSkillsOnChange, rules.TriggerPromptsOnChange} {
		if _, err := reg.RegisterTriggerType(tt, "stand-in", iii.AcceptAll(nil, tt)); err != nil {
			t.Fatal(err)
		}
	}
	connect(t, reg)
	// The stand-in registry publishes like a publisher: s.function waits
	// until the engine lists the function.
	s := &stack{t: t, ctx: ctx, url: eng.URL(), pub: reg}
	var calls atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.function(rules.FnSkillsResourcesRead, func(ctx context.Context, data json.RawMessage) (any, error) {
		var in struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(data, &in)
		if in.URI != "iii://plain" {
			return nil, fmt.Errorf("the stand-in registry serves only iii://plain, not %s", in.URI)
		}
		if calls.Add(1) == 1 {
			select { // the "dropped" answer: never arrives in time
			case <-release:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}
		return registry.ReadResult{Contents: []registry.ResourceContent{{URI: in.URI, MimeType: "text/markdown", Text: "# Plain\n\nanswered the second time"}}}, nil
	})
	s.startMCP(skillsmcp.Options{CallTimeout: 20 * time.Second, ReadRetryAfter: 300 * time.Millisecond})
	cs := s.connectInMemory(v2026, &notes{})
	res, err := cs.ReadResource(s.ctx, &sdk.ReadResourceParams{URI: "iii://plain"})
	if err != nil {
		t.Fatalf("read after a dropped answer: %v", err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != "# Plain\n\nanswered the second time" {
		t.Fatalf("contents %+v", res.Contents)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("skills::resources-read called %d times, want 2 (once more after no answer)", n)
	}
}

// A section read (iii://fn/…) runs a publisher's handler, which may not be
// idempotent: it is never sent again, even when its answer is late.
func TestUnansweredSectionReadIsNotSentAgain(t *testing.T) {
	s := newStack(t)
	var calls atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.function("lossy::section", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if calls.Add(1) == 1 {
			select { // the late answer
			case <-release:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}
		return "# Lossy\n\nanswered the second time", nil
	})
	s.startMCP(skillsmcp.Options{CallTimeout: 3 * time.Second, ReadRetryAfter: 200 * time.Millisecond})
	cs := s.connectInMemory(v2026, &notes{})
	if res, err := cs.ReadResource(s.ctx, &sdk.ReadResourceParams{URI: "iii://fn/lossy/section"}); err == nil {
		t.Fatalf("a section whose handler never answered was read: %+v", res.Contents)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the section handler ran %d times, want 1 (a section read is never re-sent)", n)
	}
}
