package observe_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/metrics"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/tracing"
	"github.com/iii-skills/skills/server/internal/usage"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Calls are counted by function, surface and code, whatever the surface's
// error vocabulary, and a nil Observer records nothing.
func TestCallsAreCountedByFunctionSurfaceAndCode(t *testing.T) {
	m, err := metrics.New(metrics.Options{Functions: []string{rules.FnSkillFetch, "resources/read", "GET /skill/{id...}"}, Codes: observe.Codes()})
	if err != nil {
		t.Fatalf("the declared codes are refused: %v", err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	o := observe.New(observe.Options{Metrics: m, Logger: quiet})
	ctx := context.Background()
	for _, c := range []struct {
		fn   string
		s    surface.Surface
		code string
	}{
		{rules.FnSkillFetch, surface.III, observe.IIICode(nil)},
		{rules.FnSkillFetch, surface.III, observe.IIICode(iii.NewInvocationError(rules.CodeNotFound, "no skill"))},
		{rules.FnSkillFetch, surface.III, observe.IIICode(errors.New("state down"))},
		{"resources/read", surface.MCP, observe.JSONRPCCode(-32602)},
		{"skills::made-up", surface.III, observe.IIICode(nil)},
	} {
		_, call := o.Start(ctx, c.fn, c.s, tracing.TraceContext{})
		call.End(c.code, nil)
	}
	_, call := o.Start(ctx, "", surface.Web, tracing.TraceContext{})
	call.Rename("GET /skill/{id...}")
	call.End(observe.HTTPCode(404), nil)

	var none *observe.Observer
	_, nc := none.Start(ctx, rules.FnSkillFetch, surface.III, tracing.TraceContext{})
	nc.End("ok", nil)
	none.CountRead(ctx, "x", "")
	none.Notified(surface.MCP, 1)

	fams := testutil.Scrape(t, srv.URL, "")
	for _, want := range []struct {
		labels map[string]string
		n      float64
	}{
		{map[string]string{"function": rules.FnSkillFetch, "surface": "iii", "code": "ok"}, 1},
		{map[string]string{"function": rules.FnSkillFetch, "surface": "iii", "code": rules.CodeNotFound}, 1},
		{map[string]string{"function": rules.FnSkillFetch, "surface": "iii", "code": iii.CodeInvocationFailed}, 1},
		{map[string]string{"function": "resources/read", "surface": "mcp", "code": "invalid_params"}, 1},
		{map[string]string{"function": "other", "surface": "iii", "code": "ok"}, 1},
		{map[string]string{"function": "GET /skill/{id...}", "surface": "web", "code": "http_404"}, 1},
	} {
		if n, _ := testutil.Sample(fams, "skills_calls_total", want.labels); n != want.n {
			t.Errorf("skills_calls_total%v = %v; want %v", want.labels, n, want.n)
		}
	}
	if n, _ := testutil.Sample(fams, "skills_call_duration_seconds", map[string]string{"function": rules.FnSkillFetch, "surface": "iii"}); n != 3 {
		t.Errorf("fetch latency samples %v; want 3", n)
	}
}

// With tracing off the caller's trace context still goes on to the calls
// made while serving (sections, prompt handlers), as it came; with none
// nothing is added.
func TestStartHandsTheCallersTraceOn(t *testing.T) {
	tr, err := tracing.New(context.Background(), tracing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o := observe.New(observe.Options{Tracer: tr})
	tc := tracing.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Baggage: "k=v"}
	ctx, call := o.Start(context.Background(), "resources/read", surface.MCP, tc)
	if tp, bg := iii.TraceContextFromContext(ctx); tp != tc.Traceparent || bg != tc.Baggage {
		t.Fatalf("calls made while serving carry %q %q; want the caller's", tp, bg)
	}
	call.End("ok", nil)
	ctx, _ = o.Start(context.Background(), "resources/read", surface.MCP, tracing.TraceContext{})
	if tp, _ := iii.TraceContextFromContext(ctx); tp != "" {
		t.Fatalf("a call without a trace carries %q", tp)
	}
}

// engineList answers engine::workers::list with the names given, counting
// the calls.
type engineList struct {
	names map[string]string
	calls atomic.Int64
}

func (e *engineList) Trigger(_ context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	if req.FunctionID != iii.FnListWorkers {
		return nil, errors.New("unexpected call " + req.FunctionID)
	}
	e.calls.Add(1)
	var out struct {
		Workers []map[string]any `json:"workers"`
	}
	for id, name := range e.names {
		out.Workers = append(out.Workers, map[string]any{"id": id, "name": name, "pid": 1})
	}
	return json.Marshal(out)
}

// Reads are counted by the reader a surface put in ctx: its surface and
// client; an iii read by its worker's name, read from the engine off the
// read path, once per worker; an internal read (no reader) not at all.
func TestReadsAreCountedByWhoReads(t *testing.T) {
	c, err := usage.New(usage.Options{KV: kv.NewMemoryTable()})
	if err != nil {
		t.Fatal(err)
	}
	engine := &engineList{names: map[string]string{"w-1": "ci-worker", "w-2": ""}}
	o := observe.New(observe.Options{Usage: c, Engine: engine, Logger: quiet,
		Versions: func(id, sel string) string {
			if sel == "prod" {
				return "3"
			}
			return "4"
		}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go o.Run(ctx)

	base := context.Background()
	o.CountRead(base, "team/a", "1") // internal: not counted
	o.CountRead(observe.WithReader(base, surface.MCP, "claude-code"), "team/a", "1")
	o.ReadSkill(observe.WithReader(base, surface.Web, "web"), "team/a", "prod")
	o.ReadSkill(observe.WithReader(base, surface.RPC, "python-httpx"), "team/a", "")
	callerOf := func(_ context.Context, payload json.RawMessage) string {
		var p struct {
			W string `json:"_caller_worker_id"`
		}
		_ = json.Unmarshal(payload, &p)
		return p.W
	}
	for _, w := range []string{"w-1", "w-1", "w-2", "w-gone", ""} {
		payload, _ := json.Marshal(map[string]string{"uri": "iii://team/a", "_caller_worker_id": w})
		o.CountRead(observe.WithInvocation(base, payload, callerOf), "team/a", "1")
	}
	var rep usage.Report
	testutil.Eventually(t, 10*time.Second, "every read to be counted", func() bool {
		rep, err = c.Usage(base, usage.Query{ID: "team/a"})
		var n uint64
		for _, s := range rep.Skills {
			n += s.Reads
		}
		return err == nil && n == 8
	})
	got := map[string]map[string]uint64{}
	for _, s := range rep.Skills {
		got[s.Version] = s.ByClient
	}
	if got["1"]["claude-code"] != 1 || got["1"]["ci-worker"] != 2 || got["1"][usage.UnknownClient] != 3 ||
		got["3"]["web"] != 1 || got["4"]["python-httpx"] != 1 {
		t.Fatalf("reads by version and client %v", got)
	}
	// At most once a second: the reads that wait while it is read wait
	// for the next one.
	calls := engine.calls.Load()
	if calls == 0 || calls > 2 {
		t.Fatalf("the worker list was read %d times for 4 reads close together; want 1 or 2", calls)
	}
	// Workers named (or known to the engine by no name) are known now:
	// their reads count at once, without another read of the list.
	for _, w := range []string{"w-1", "w-gone"} {
		payload, _ := json.Marshal(map[string]string{"_caller_worker_id": w})
		o.CountRead(observe.WithInvocation(base, payload, callerOf), "team/b", "")
	}
	if rep, _ = c.Usage(base, usage.Query{ID: "team/b"}); len(rep.Skills) != 1 || rep.Skills[0].ByClient["ci-worker"] != 1 ||
		rep.Skills[0].ByClient[usage.UnknownClient] != 1 {
		t.Fatalf("known workers' reads: %+v", rep)
	}
	if n := engine.calls.Load(); n != calls {
		t.Fatalf("the worker list was read again (%d times) for workers already known", n)
	}
}

func TestCodes(t *testing.T) {
	for got, want := range map[string]string{
		observe.IIICode(nil): "ok", observe.IIICode(&iii.InvocationError{Code: rules.CodeForbidden}): rules.CodeForbidden,
		observe.JSONRPCCode(-32700): "parse_error", observe.JSONRPCCode(-32000): "server_busy", observe.JSONRPCCode(-1): "-1",
		observe.HTTPCode(303): "ok", observe.HTTPCode(401): "http_401",
	} {
		if got != want {
			t.Errorf("got %q; want %q", got, want)
		}
	}
}
