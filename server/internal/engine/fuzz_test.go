package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// Fuzz targets for the engine's outside input: frames, state::update ops
// and built-in arguments. Their seeds run with `go test`; `make fuzz`
// explores each for FUZZTIME.

// panicLog fails the fuzz run when the engine logs a recovered panic
// (handleFrame contains panics, so they would otherwise go unseen).
type panicLog struct{ hit bool }

func (p *panicLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		p.hit = true
	}
	return nil
}
func (p *panicLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *panicLog) WithGroup(string) slog.Handler      { return p }

func FuzzHandleFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"ping"}`,
		`{"type":"invokefunction","invocation_id":"6f1c8f7e-4d3b-4b8a-9c1d-2e3f4a5b6c7d","function_id":"state::set","data":{"scope":"s","key":"k","value":1}}`,
		`{"type":"invokefunction","function_id":"engine::functions::list","data":null}`,
		`{"type":"invokefunction","invocation_id":"inv-1","function_id":"x","data":{}}`,
		`{"type":"invokefunction","function_id":"x"}`,
		`{"type":"invocationresult","invocation_id":"6f1c8f7e-4d3b-4b8a-9c1d-2e3f4a5b6c7d","result":{"a":1}}`,
		`{"type":"registerfunction","id":"a::b","request_format":{"type":"object"}}`,
		`{"type":"registerfunction","id":"state::set"}`,
		`{"type":"registertrigger","id":"t","trigger_type":"state","function_id":"a::b","config":{"scope":"s"}}`,
		`{"type":"registertriggertype","id":"x::y","description":"d"}`,
		`{"type":"reattach","previous_worker_id":"x","reattach_token":"y"}`,
		`{"type":"invokefunction","invocation_id":"6f1c8f7e-4d3b-4b8a-9c1d-2e3f4a5b6c7d","function_id":"a::b","data":{},"metadata":{"iii_caller":{"worker_id":"forged"},"iii\u005fcaller":1}}`,
		`{"type":"unregistertrigger","id":"t","trigger_type":"state"}`,
		`{"type":"unknown"}`, `[]`, `not json`, `{"type":"invokefunction","function_id":"a","data":{},"action":{"type":"enqueue"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pl := &panicLog{}
		e, err := New(Config{Logger: slog.New(pl)})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		// A connection without a socket: frames it is sent pile up in its
		// queue. It leaves the registry before Close, which would close
		// its socket.
		c := &conn{e: e, id: "fuzz", token: "t", wake: make(chan struct{}, 1), done: make(chan struct{})}
		e.mu.Lock()
		e.conns[c.id] = c
		e.mu.Unlock()
		e.handleFrame(c, websocket.TextMessage, data)
		e.mu.Lock()
		delete(e.conns, c.id)
		e.mu.Unlock()
		if pl.hit {
			t.Fatalf("frame %q made the engine panic", data)
		}
		// The scanner skips unknown values by bracket depth without
		// validating them (the frame is the owner's own result, forwarded
		// as is); on valid JSON it must agree with the decoder.
		if f, ok := wire.ScanResultFrame(data); ok && json.Valid(data) {
			var m struct {
				InvocationID string `json:"invocation_id"`
			}
			if json.Unmarshal(data, &m) != nil || m.InvocationID != f.InvocationID {
				t.Fatalf("ScanResultFrame accepted %q (id %q) but the JSON decode disagrees", data, f.InvocationID)
			}
		}
		typ, id := frameHead(data)
		_, _ = typ, id
	})
}

func FuzzStateUpdateOps(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1}`, `[{"type":"set","path":"a","value":2}]`},
		{`null`, `[{"type":"increment","path":["n"],"by":1}]`},
		{`{"l":[1]}`, `[{"type":"append","path":"l","value":2},{"type":"remove","path":"l"}]`},
		{`{"a":{"b":1}}`, `[{"type":"merge","path":"","value":{"c":2}},{"type":"decrement","path":"a.b","by":1.5}]`},
		{`5`, `[{"type":"set","path":["x","y"],"value":null}]`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, old, opsRaw []byte) {
		if !json.Valid(old) {
			return // stored values are JSON
		}
		var ops []updateOp
		if json.Unmarshal(opsRaw, &ops) != nil {
			return
		}
		out, _, err := applyOps(bytes.Clone(old), ops)
		if err == nil && out != nil && !json.Valid(out) {
			t.Fatalf("applyOps(%s, %s) = %s is not JSON", old, opsRaw, out)
		}
	})
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"scope":"s","key":"k"}`, `null`, `[]`, `{"scope":1}`, `{"include_internal":"yes"}`, `{"ids":["a",2]}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		a, errb := parseArgs("state::get", data, true, `{"scope":"s","key":"k"}`)
		if errb != nil {
			if errb.Message == "" || errb.Code == "" {
				t.Fatalf("empty error for %s", data)
			}
			return
		}
		_, _ = a.str("scope")
		_, _ = a.optStr("key")
		_, _ = a.optStrs("a", "b")
		_, _ = a.optBool("include_internal")
		_, _, _ = a.optStrings("ids")
	})
}

// FuzzScanState checks decodeState's one-pass path against encoding/json:
// whenever it takes an input, it must decode it exactly as json.Unmarshal
// does (the full path it replaces).
func FuzzScanState(f *testing.F) {
	for _, s := range []string{`{"scope":"s","key":"k","value":{"a":[1,"x"]}}`, `{"scope":"s","key":"k","data":"v"}`,
		`{"Scope":"s","key":"k","value":1}`, `{"scope":null,"key":"k"}`, `{"scope":"s","scope":"t","key":"k","value":null}`,
		`{"scope":"s\u0041","key":"k"}`, `{"scope":5,"key":"k"}`, `{"scope":"s","key":"k","ops":[{"type":"set"}]}`,
		"{\"scope\":\"\xff\",\"key\":\"k\"}", `{"scope":"s","key":"k","value":1,"other":{"x":2}}`, `{"sc\u006fpe":"s"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := scanState(raw)
		if !ok {
			return
		}
		want := &stateInput{}
		if err := json.Unmarshal(raw, want); err != nil {
			t.Fatalf("scanState took %q, which json.Unmarshal refuses: %v", raw, err)
		}
		same := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
		if !same(got.Scope, want.Scope) || !same(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) ||
			!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Ops, want.Ops) {
			t.Fatalf("scanState(%q) = %+v, json.Unmarshal gives %+v", raw, got, want)
		}
	})
}

// Whatever metadata a client sends, the invocation carries a JSON object
// whose iii_caller is the engine's stamp, and nothing else claims it.
func FuzzStampCaller(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"a":1}`, `{"iii_caller":{"worker_id":"x"}}`,
		`{"iii\u005fcaller":"x","iii_caller":"y"}`, `[1]`, `"s"`, `{"a":`, `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	c := &conn{id: "caller-id", scope: &ScopedToken{Name: "acme", Namespaces: []string{"acme"}}}
	f.Fuzz(func(t *testing.T, meta []byte) {
		out := stampCaller(meta, c)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("metadata %q stamped as %q: not a JSON object: %v", meta, out, err)
		}
		var got Caller
		if err := json.Unmarshal(m[CallerKey], &got); err != nil || got.WorkerID != "caller-id" || got.Token != "acme" {
			t.Fatalf("metadata %q stamped as %q: caller %+v", meta, out, got)
		}
	})
}
