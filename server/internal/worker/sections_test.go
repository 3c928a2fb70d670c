package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/sections"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// publisher is a second client on the stack's engine that serves sections.
func (s *stack) publisher(t *testing.T) *iii.Client {
	t.Helper()
	p := iii.RegisterWorker(s.engine.URL(), iii.WithName("publisher"), iii.WithLogger(quiet))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// waitFunctions waits until the engine lists every id.
func (s *stack) waitFunctions(t *testing.T, ids ...string) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, "functions registered", func() bool {
		var out struct {
			Functions []struct {
				ID string `json:"function_id"`
			} `json:"functions"`
		}
		if s.call(t, "engine::functions::list", map[string]any{}, &out) != nil {
			return false
		}
		seen := map[string]bool{}
		for _, f := range out.Functions {
			seen[f.ID] = true
		}
		for _, id := range ids {
			if !seen[id] {
				return false
			}
		}
		return true
	})
}

func (s *stack) fetch(t *testing.T, uri string) (string, error) {
	t.Helper()
	var out string
	err := s.call(t, rules.FnSkillFetch, map[string]string{"uri": uri}, &out)
	return out, err
}

// A section whose handler fetches its own URI through a client that carries
// invocation metadata (our Go client) fails at once with the cycle named.
func TestSectionCycleIsNamed(t *testing.T) {
	s := startStack(t, "")
	p := s.publisher(t)
	var calls atomic.Int64
	for _, pair := range [][2]string{{"loop::a", "iii://fn/loop/b"}, {"loop::b", "iii://fn/loop/a"}} {
		next := pair[1]
		if _, err := p.RegisterFunction(pair[0], func(ctx context.Context, _ json.RawMessage) (any, error) {
			calls.Add(1)
			return p.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Data: json.RawMessage(`{"uri":"` + next + `"}`)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFunctions(t, "loop::a", "loop::b")
	_, err := s.fetch(t, "iii://fn/loop/a")
	wantErr(t, err, "section cycle: iii://fn/loop/a → iii://fn/loop/b → iii://fn/loop/a")
	if n := calls.Load(); n != 2 {
		t.Fatalf("handlers ran %d times; want 2 (a, b, then the cycle is refused)", n)
	}
}

// Chains of distinct sections stop at the depth limit.
func TestSectionDepthIsBounded(t *testing.T) {
	s := startStack(t, "")
	p := s.publisher(t)
	for i := range 12 {
		next := "iii://fn/deep/s" + string(rune('a'+i+1))
		if _, err := p.RegisterFunction("deep::s"+string(rune('a'+i)), func(ctx context.Context, _ json.RawMessage) (any, error) {
			return p.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Data: json.RawMessage(`{"uri":"` + next + `"}`)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFunctions(t, "deep::sa", "deep::sl")
	_, err := s.fetch(t, "iii://fn/deep/sa")
	wantErr(t, err, "section nesting too deep: 9 nested section reads (max 8)")
}

// A publisher whose client carries no trace context at all (the official
// Node and Python SDKs with OpenTelemetry off) cannot recurse without end
// either: the in-flight bound per section function stops it.
func TestSectionRecursionWithoutMetadataIsBounded(t *testing.T) {
	s := startStack(t, "")
	p := s.publisher(t)
	var calls atomic.Int64
	if _, err := p.RegisterFunction("self::loop", func(ctx context.Context, _ json.RawMessage) (any, error) {
		calls.Add(1)
		// A fresh context: nothing of the invocation is carried.
		return p.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillFetch,
			Data: json.RawMessage(`{"uri":"iii://fn/self/loop"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	s.waitFunctions(t, "self::loop")
	_, err := s.fetch(t, "iii://fn/self/loop")
	wantErr(t, err, "section cycle suspected")
	if n := calls.Load(); n > sections.MaxInFlight {
		t.Fatalf("handler ran %d times; want at most %d", n, sections.MaxInFlight)
	}
}

// A publisher whose client drops invocation metadata but carries the W3C
// baggage (the official Node SDK with OpenTelemetry on, the Python SDK)
// gets the exact limits: the cycle is named at once, chains stop at 8.
func TestSectionLimitsHoldThroughBaggage(t *testing.T) {
	s := startStack(t, "")
	p := s.publisher(t)
	var calls atomic.Int64
	// Only the baggage of the invocation travels on, with an entry of the
	// publisher's own trace that must survive the registry's hop.
	fetch := func(ctx context.Context, uri string) (json.RawMessage, error) {
		_, baggage := iii.TraceContextFromContext(ctx)
		if !strings.Contains(baggage, "tenant=acme") {
			return nil, fmt.Errorf("the caller's baggage entry was lost: %q", baggage)
		}
		return p.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Baggage: baggage,
			Data: json.RawMessage(`{"uri":"` + uri + `"}`)})
	}
	if _, err := p.RegisterFunction("bag::self", func(ctx context.Context, _ json.RawMessage) (any, error) {
		calls.Add(1)
		return fetch(ctx, "iii://fn/bag/self")
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		next := "iii://fn/bag/s" + string(rune('a'+i+1))
		if _, err := p.RegisterFunction("bag::s"+string(rune('a'+i)), func(ctx context.Context, _ json.RawMessage) (any, error) {
			return fetch(ctx, next)
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFunctions(t, "bag::self", "bag::sa", "bag::sl")
	top := func(uri string) error {
		_, err := s.caller.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Baggage: "tenant=acme",
			Data: json.RawMessage(`{"uri":"` + uri + `"}`), Timeout: 10 * time.Second})
		return err
	}
	wantErr(t, top("iii://fn/bag/self"), "section cycle: iii://fn/bag/self → iii://fn/bag/self")
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times; want 1", n)
	}
	wantErr(t, top("iii://fn/bag/sa"), "section nesting too deep: 9 nested section reads (max 8)")
}

// A publisher whose client passes only the trace on (the official Python
// SDK with OpenTelemetry on: a traceparent of the same trace, no metadata,
// no baggage) is stopped at depth 8 when its handler reads its own URI.
func TestSectionRecursionThroughTraceIsBounded(t *testing.T) {
	s := startStack(t, "")
	p := s.publisher(t)
	var calls atomic.Int64
	if _, err := p.RegisterFunction("trace::loop", func(ctx context.Context, _ json.RawMessage) (any, error) {
		calls.Add(1)
		// As a W3C client passes a trace on: same trace id, a parent of its own.
		tp, _ := iii.TraceContextFromContext(ctx)
		if len(tp) != 55 || tp[2] != '-' || tp[35] != '-' {
			return nil, fmt.Errorf("the section call carried no traceparent: %q", tp)
		}
		child := "00-" + tp[3:35] + "-00f067aa0ba902b7-01"
		return p.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillFetch,
			Traceparent: child, Data: json.RawMessage(`{"uri":"iii://fn/trace/loop"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	s.waitFunctions(t, "trace::loop")
	_, err := s.fetch(t, "iii://fn/trace/loop")
	wantErr(t, err, "section nesting too deep: 9 nested section reads (max 8): iii://fn/trace/loop read 9 times at once in W3C trace")
	if n := calls.Load(); n != 8 {
		t.Fatalf("handler ran %d times; want 8", n)
	}
}

// Oversize section output is refused with the size, and the publisher
// stays connected: its other sections still work.
func TestSectionOutputCap(t *testing.T) {
	s := startStack(t, "")
	p := s.publisher(t)
	sizes := map[string]int{"big::four": 4<<20 + 1, "big::huge": 17 << 20, "big::ok": 10}
	for fn, n := range sizes {
		if _, err := p.RegisterFunction(fn, func(context.Context, json.RawMessage) (any, error) {
			return strings.Repeat("z", n), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFunctions(t, "big::four", "big::huge", "big::ok")
	_, err := s.fetch(t, "iii://fn/big/four")
	wantErr(t, err, "section output too large (4194307 bytes; max 4194304)")
	_, err = s.fetch(t, "iii://fn/big/huge")
	wantErr(t, err, "section output too large (")
	wantErr(t, err, "bytes; max 4194304)")
	out, err := s.fetch(t, "iii://fn/big/ok")
	if err != nil || !strings.Contains(out, "zzzzzzzzzz") {
		t.Fatalf("publisher lost after an oversize section: %q, %v", out, err)
	}
}
