package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/engine"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol revisions under test.
const (
	v2026 = "2026-07-28"
	v2025 = "2025-11-25"
)

// quiet is the logger of every in-process component (SKILLS_TEST_LOG=1
// shows them).
func quiet() *slog.Logger {
	if os.Getenv("SKILLS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// stack is an embedded engine running the registry worker, a publisher
// client (another worker) and the MCP server on its own client.
type stack struct {
	t      *testing.T
	ctx    context.Context
	url    string
	pub    *iii.Client
	mcp    *skillsmcp.Server
	mcpCli *iii.Client
	// cat is the registry's catalog (fed with the published skills),
	// published over iii as skills::catalog-*; reg the registry itself.
	cat *catalog.Catalog
	reg *core.Local
	// remote makes startMCP read the registry over iii (core.Remote, as
	// `skills mcp` does), asking for catalog listings cut at pageBytes
	// when set.
	remote    bool
	pageBytes int
}

// startEngine starts an embedded engine on a free port and returns it
// with a context both end with the test.
func startEngine(t *testing.T) (context.Context, *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return ctx, eng
}

// newStack starts the server as `skills --standalone` does (app.Start:
// the embedded engine, the registry, the catalog's functions) and the
// publisher; startMCP starts the MCP server under test (seed before it, so
// that no change event of the fixture is still in flight when a test
// client connects).
func newStack(t *testing.T) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := appstack.Config(t)
	cfg.Logger = quiet()
	srv := appstack.Start(t, cfg)

	pub := iii.RegisterWorker(srv.EngineURL, iii.WithName("publisher"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = pub.Close() })
	connect(t, pub)

	return &stack{t: t, ctx: ctx, url: srv.EngineURL, pub: pub, cat: srv.Catalog, reg: srv.Registry}
}

func (s *stack) startMCP(opts skillsmcp.Options) {
	t := s.t
	t.Helper()
	mcpCli := iii.RegisterWorker(s.url, iii.WithName("skills-mcp-test"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = mcpCli.Close() })
	connect(t, mcpCli)
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	// The registry in this process (what `skills --standalone` serves),
	// or over iii as `skills mcp` reads it (and always for a stand-in
	// registry without one).
	if opts.Registry == nil {
		if s.remote || s.reg == nil {
			opts.Registry = core.NewRemote(mcpCli, core.RemoteOptions{Timeout: opts.CallTimeout, RetryAfter: opts.ReadRetryAfter,
				PageBytes: s.pageBytes, Logger: opts.Logger})
			opts.SkillsExtension = true
		} else {
			opts.Registry = s.reg
		}
	}
	srv := skillsmcp.New(mcpCli, opts)
	if err := srv.Start(s.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s.mcp, s.mcpCli = srv, mcpCli
}

func connect(t *testing.T, c *iii.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
}

// trigger calls fn as the publisher and fails the test on error.
func (s *stack) trigger(fn string, payload any) json.RawMessage {
	s.t.Helper()
	if payload == nil {
		payload = struct{}{} // sent as {}, like an absent payload
	}
	data, err := json.Marshal(payload)
	if err != nil {
		s.t.Fatalf("%s: encode payload: %v", fn, err)
	}
	out, err := s.pub.Trigger(s.ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second})
	if err != nil {
		s.t.Fatalf("%s: %v", fn, err)
	}
	return out
}

func (s *stack) registerSkill(id, body string) {
	s.t.Helper()
	s.trigger("skills::register", map[string]string{"id": id, "skill": body})
}

// seed registers the fixture every surface test reads.
func (s *stack) seed() {
	s.t.Helper()
	s.registerSkill("demo", "# Demo skill\n\nHow to use the demo worker.\n\nSee [echo](iii://fn/demo/echo).\n")
	s.registerSkill("demo/nested", "# Nested demo\n\nA sub-skill.\n")
	s.registerSkill("other", "no title here\n")
	s.function("demo::echo", func(_ context.Context, data json.RawMessage) (any, error) {
		var in map[string]any
		_ = json.Unmarshal(data, &in)
		delete(in, "_caller_worker_id")
		if len(in) == 0 {
			return "# Echo section\n\nrendered by demo::echo", nil
		}
		return map[string]any{"echo": in}, nil
	}, iii.RegisterFunctionOptions{Description: "Echoes its input", Metadata: readOnlyMeta, RequestFormat: json.RawMessage(
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"text":{"type":"string"},"flag":true}}`)})
	s.function("demo::fail", func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("demo failure: the widget is broken")
	}, iii.RegisterFunctionOptions{Description: "Always fails", Metadata: readOnlyMeta})
	s.function("demo::secret", func(context.Context, json.RawMessage) (any, error) { return "x", nil },
		iii.RegisterFunctionOptions{Metadata: map[string]any{"internal": true}})
	s.function("greet::render", func(_ context.Context, data json.RawMessage) (any, error) {
		var in struct {
			To string `json:"to"`
		}
		_ = json.Unmarshal(data, &in)
		return map[string]any{"content": "Say hello to " + in.To}, nil
	}, iii.RegisterFunctionOptions{Metadata: readOnlyMeta})
	s.trigger("prompts::register", map[string]any{"name": "greet", "description": "Greets someone", "function_id": "greet::render",
		"arguments": []map[string]any{{"name": "to", "description": "Who to greet", "required": true}, {"name": "tone"}}})
}

// readOnlyMeta is the registration metadata of a publisher function that
// declares itself read-only, so MCP exposes it by default.
var readOnlyMeta = map[string]any{"mcp": map[string]any{"readOnlyHint": true, "openWorldHint": false}}

// function registers a function on the publisher and waits until the
// engine lists it.
func (s *stack) function(id string, h iii.Handler, opts ...iii.RegisterFunctionOptions) {
	s.t.Helper()
	if _, err := s.pub.RegisterFunction(id, h, opts...); err != nil {
		s.t.Fatal(err)
	}
	data, err := json.Marshal(map[string]string{"function_id": id})
	if err != nil {
		s.t.Fatal(err)
	}
	testutil.Eventually(s.t, 5*time.Second, "function "+id+" registered", func() bool {
		out, err := s.pub.Trigger(s.ctx, iii.TriggerRequest{FunctionID: "engine::functions::info", Data: data})
		return err == nil && strings.Contains(string(out), id)
	})
}

// notes collects MCP notifications a client received.
type notes struct {
	mu   sync.Mutex
	seen map[string][]string // method → params (URI for updates)
}

func (n *notes) add(method, detail string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string][]string{}
	}
	n.seen[method] = append(n.seen[method], detail)
}

func (n *notes) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.seen[method])
}

func (n *notes) dump() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	b, _ := json.Marshal(n.seen)
	return string(b)
}

func (n *notes) has(method, detail string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, d := range n.seen[method] {
		if d == detail {
			return true
		}
	}
	return false
}

func (n *notes) clientOptions() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
			n.add("notifications/resources/list_changed", "")
		},
		PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) {
			n.add("notifications/prompts/list_changed", "")
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			n.add("notifications/tools/list_changed", "")
		},
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			n.add("notifications/resources/updated", r.Params.URI)
		},
	}
}

// connectInMemory connects a go-sdk client to the server over an
// in-memory transport, asking for protocol version v.
func (s *stack) connectInMemory(v string, n *notes) *sdk.ClientSession {
	s.t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.mcp.SDK().Connect(s.ctx, st, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = ss.Close() })
	return s.connectClient(ct, v, n)
}

func (s *stack) connectClient(t sdk.Transport, v string, n *notes) *sdk.ClientSession {
	s.t.Helper()
	if n == nil {
		n = &notes{}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "go-test", Version: "1"}, n.clientOptions())
	cs, err := c.Connect(s.ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != v {
		s.t.Fatalf("negotiated protocol %q, want %q", got, v)
	}
	return cs
}

// serveHTTP serves the MCP endpoint on a free loopback port.
func (s *stack) serveHTTP(opts skillsmcp.HTTPOptions) string {
	s.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.mcp.ServeHTTP(ctx, ln, opts)
	}()
	s.t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String() + skillsmcp.Path
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// rpcCode extracts the JSON-RPC error code of err (0 if none).
func rpcCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

func text(c sdk.Content) string {
	if tc, ok := c.(*sdk.TextContent); ok {
		return tc.Text
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// startMCPView starts the MCP server with its skill:// catalog read from
// view (a fixture catalog of the test) and everything else from the
// registry.
func (s *stack) startMCPView(view *skillsext.View, opts skillsmcp.Options) {
	s.t.Helper()
	opts.Registry, opts.SkillsExtension = viewRegistry{Registry: s.reg, view: view}, true
	s.startMCP(opts)
}

// viewRegistry is the stack's registry with its catalog view replaced by
// a fixture's (skills/list, skills/get, skill:// reads and their changes).
type viewRegistry struct {
	core.Registry
	view *skillsext.View
}

func (r viewRegistry) CatalogSkills(ctx context.Context, after string, limit int) ([]skillsext.Skill, bool, error) {
	return r.view.ListSkills(ctx, after, limit)
}

func (r viewRegistry) CatalogSkill(ctx context.Context, path string) (skillsext.Skill, bool, error) {
	return r.view.Skill(ctx, path)
}

func (r viewRegistry) CatalogFile(ctx context.Context, path, file string) ([]byte, error) {
	return r.view.ReadFile(ctx, path, file)
}

// Watch reports the registry's skill and prompt changes and the fixture
// view's catalog changes.
func (r viewRegistry) Watch(ctx context.Context, fn func(core.Change)) (func(), error) {
	var mu sync.Mutex
	stopReg, err := r.Registry.Watch(ctx, func(c core.Change) {
		if c.Kind != core.ChangeCatalog {
			mu.Lock()
			defer mu.Unlock()
			fn(c)
		}
	})
	if err != nil {
		return nil, err
	}
	stopView, err := r.view.Watch(ctx, func(p string) {
		mu.Lock()
		defer mu.Unlock()
		fn(core.Change{Kind: core.ChangeCatalog, ID: p})
	})
	if err != nil {
		stopReg()
		return nil, err
	}
	return func() { stopReg(); stopView() }, nil
}
