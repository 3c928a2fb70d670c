package mcp_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawCall sends one JSON-RPC request and returns its result or error.
type rawCall func(method string, params any) (json.RawMessage, *jsonrpc.Error)

// rawStream connects a raw JSON-RPC client to the server over an
// in-memory stream transport (as stdio).
func (s *stack) rawStream() rawCall {
	t := s.t
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.mcp.SDK().Connect(s.ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	conn, err := ct.Connect(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	next := int64(100)
	return func(method string, params any) (json.RawMessage, *jsonrpc.Error) {
		next++
		id, _ := jsonrpc.MakeID(float64(next))
		p, _ := json.Marshal(params)
		if err := conn.Write(s.ctx, &jsonrpc.Request{ID: id, Method: method, Params: p}); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := conn.Read(s.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
				if r.Error != nil {
					var we *jsonrpc.Error
					if e, ok := r.Error.(*jsonrpc.Error); ok {
						we = e
					} else {
						we = &jsonrpc.Error{Code: -1, Message: r.Error.Error()}
					}
					return nil, we
				}
				return r.Result, nil
			}
		}
	}
}

// serverInfoMeta is the _meta["io.modelcontextprotocol/serverInfo"] of a
// result (nil when absent).
func serverInfoMeta(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var r struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return r.Meta[sdk.MetaKeyServerInfo]
}

// newMeta is the _meta a 2026-07-28 request carries instead of initialize.
func newMeta(params map[string]any) map[string]any {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    v2026,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	return params
}

// Extension results go through go-sdk's dispatch (custom methods): on
// 2026-07-28 they name the server in _meta exactly as its own results do,
// over HTTP and over a stream transport, and not on 2025-11-25.
func TestExtensionResultsNameTheServer(t *testing.T) {
	s := newStack(t)
	s.seed()
	view := skillsext.NewView(s.cat)
	t.Cleanup(view.Close)
	s.startMCPView(view, skillsmcp.Options{Name: "skills-test", Version: "9.9.9"})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})
	httpCall := func(method string, params any) (json.RawMessage, *jsonrpc.Error) {
		return rpc(t, endpoint, map[string]string{"Mcp-Protocol-Version": v2026, "Mcp-Method": method}, method, params)
	}
	sdkRes, rerr := httpCall("resources/list", newMeta(map[string]any{}))
	if rerr != nil {
		t.Fatal(rerr)
	}
	want := serverInfoMeta(t, sdkRes)
	if want == nil {
		t.Fatalf("go-sdk's own 2026-07-28 result has no serverInfo _meta: %s", sdkRes)
	}
	calls := []struct {
		method string
		params map[string]any
	}{
		{"skills/list", map[string]any{}},
		{"skills/get", map[string]any{"uri": "skill://demo/SKILL.md"}},
		{"resources/directory/read", map[string]any{"uri": "skill://demo/"}},
	}
	stream := s.rawStream()
	for _, c := range calls {
		raw, rerr := httpCall(c.method, newMeta(c.params))
		if rerr != nil {
			t.Fatalf("%s over HTTP: %v", c.method, rerr)
		}
		if got := serverInfoMeta(t, raw); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s over HTTP: serverInfo %v, want %v (as go-sdk's own results)", c.method, got, want)
		}
		raw, rerr = stream(c.method, newMeta(c.params))
		if rerr != nil {
			t.Fatalf("%s over a stream: %v", c.method, rerr)
		}
		if got := serverInfoMeta(t, raw); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s over a stream: serverInfo %v, want %v", c.method, got, want)
		}
	}

	old := s.rawStream()
	if _, err := old("initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}); err != nil {
		t.Fatal(err)
	}
	raw, rerr := old("skills/list", map[string]any{})
	if rerr != nil {
		t.Fatal(rerr)
	}
	if got := serverInfoMeta(t, raw); got != nil {
		t.Fatalf("2025-11-25 skills/list carries serverInfo %v (go-sdk adds it on 2026-07-28 only)", got)
	}
}

// On a stream transport a 2025-11-25 session answers the extension methods
// only after initialize, with the same error go-sdk gives its own methods
// before it; a 2026-07-28 request (its _meta) needs no initialize.
func TestExtensionBeforeInitialize(t *testing.T) {
	s := newStack(t)
	s.seed()
	view := skillsext.NewView(s.cat)
	t.Cleanup(view.Close)
	s.startMCPView(view, skillsmcp.Options{})
	call := s.rawStream()

	_, sdkErr := call("resources/list", map[string]any{})
	if sdkErr == nil {
		t.Fatal("go-sdk answered resources/list before initialize")
	}
	for _, m := range []string{"skills/list", "skills/get", "resources/directory/read"} {
		_, err := call(m, map[string]any{"uri": "skill://demo/SKILL.md"})
		if err == nil {
			t.Fatalf("%s answered before initialize", m)
		}
		if err.Code != sdkErr.Code || err.Message != strings.ReplaceAll(sdkErr.Message, `"resources/list"`, `"`+m+`"`) {
			t.Fatalf("%s before initialize: %d %q; go-sdk answers its own methods %d %q", m, err.Code, err.Message, sdkErr.Code, sdkErr.Message)
		}
	}
	if _, err := call("initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := call("skills/list", map[string]any{}); err != nil {
		t.Fatalf("skills/list after initialize: %v", err)
	}
	// A 2026-07-28 request (its own connection: go-sdk takes the _meta as
	// the session's initialization) needs no initialize.
	if _, err := s.rawStream()("skills/list", newMeta(map[string]any{})); err != nil {
		t.Fatalf("2026-07-28 skills/list without initialize: %v", err)
	}
}
