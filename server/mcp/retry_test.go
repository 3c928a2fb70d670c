package mcp_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	skillsmcp "github.com/iii-skills/skills/server/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real iii engine drops a result now and then (a worker answering
// before the engine recorded the invocation): a resource read that gets no
// answer is sent once more, so the MCP client still gets its content.
// Here the section function ignores its first call, like a dropped result.
func TestUnansweredReadIsSentAgain(t *testing.T) {
	s := newStack(t)
	var calls atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.function("lossy::section", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if calls.Add(1) == 1 {
			select { // the "dropped" answer: never arrives in time
			case <-release:
			case <-ctx.Done():
			}
			return nil, ctx.Err()
		}
		return "# Lossy\n\nanswered the second time", nil
	})
	s.startMCP(skillsmcp.Options{CallTimeout: 20 * time.Second, ReadRetryAfter: 300 * time.Millisecond})
	cs := s.connectInMemory(v2026, &notes{})
	res, err := cs.ReadResource(s.ctx, &sdk.ReadResourceParams{URI: "iii://fn/lossy/section"})
	if err != nil {
		t.Fatalf("read after a dropped answer: %v", err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != "# Lossy\n\nanswered the second time" {
		t.Fatalf("contents %+v", res.Contents)
	}
}
