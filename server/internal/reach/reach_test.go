package reach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/reach/reachtest"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/testutil"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startEngine is an embedded engine on a real socket; engines given one
// store share their state like real engines on one Redis.
func startEngine(t *testing.T, st *store.Store) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Addr: "127.0.0.1:0", Logger: quiet, Store: st, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// connect is a connected worker named name on e.
func connect(t *testing.T, e *engine.Engine, name string, register func(c *iii.Client)) *iii.Client {
	t.Helper()
	c := iii.New(e.URL(), iii.WithName(name), iii.WithLogger(quiet))
	if register != nil {
		register(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// publisher is a worker on e serving a prompt handler (internal, as the
// publishers mark theirs), a section and a handler that fails.
func publisher(t *testing.T, e *engine.Engine, prefix string) *iii.Client {
	t.Helper()
	return connect(t, e, prefix+"-publisher", func(c *iii.Client) {
		register(t, c, prefix+"::hello", func(_ context.Context, in json.RawMessage) (any, error) {
			var args struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(in, &args)
			return map[string]string{"content": "hello " + args.Name + " from " + prefix}, nil
		}, iii.RegisterFunctionOptions{Metadata: iii.InternalMetadata})
		register(t, c, prefix+"::fail", func(context.Context, json.RawMessage) (any, error) {
			return nil, iii.NewInvocationError("NOT_FOUND", "no such greeting")
		})
	})
}

func register(t *testing.T, c *iii.Client, id string, h iii.Handler, opts ...iii.RegisterFunctionOptions) {
	t.Helper()
	if _, err := c.RegisterFunction(id, h, opts...); err != nil {
		t.Fatal(err)
	}
}

func bridge(t *testing.T, e, remote *engine.Engine) { reachtest.Bridge(t, e.URL(), remote.URL()) }

// follow starts a Follower on a connected client of e.
func follow(t *testing.T, e *engine.Engine, o Options) (*Follower, *atomic.Int64) {
	t.Helper()
	var changes atomic.Int64
	o.Logger, o.Timeout = quiet, 5*time.Second
	o.OnChange = func() { changes.Add(1) }
	var f *Follower
	c := connect(t, e, "registry", func(c *iii.Client) {
		f = New(c, o)
		if err := f.Register(); err != nil {
			t.Fatal(err)
		}
	})
	_ = c
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx)
	testutil.Eventually(t, 10*time.Second, "the engine's functions are listed", func() bool { return f.Where("x").Known })
	return f, &changes
}

func render(f *Follower, fn, name string) (string, error) {
	out, err := f.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: json.RawMessage(`{"name":"` + name + `"}`), Timeout: 5 * time.Second})
	if err != nil {
		return "", err
	}
	var v struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", err
	}
	return v.Content, nil
}

func code(err error) string {
	var inv *iii.InvocationError
	if errors.As(err, &inv) {
		return inv.Code
	}
	return ""
}

// The Follower sees a publisher's handler come and go on its own engine
// through the engine's events, without being asked, and calls it there.
func TestFollowsTheEngine(t *testing.T) {
	e := startEngine(t, nil)
	f, changes := follow(t, e, Options{})
	if p := f.Where("pub::hello"); p.Reachable() || p.Local {
		t.Fatalf("before the publisher: %+v", p)
	}
	before := changes.Load()
	pub := publisher(t, e, "pub")
	testutil.Eventually(t, 10*time.Second, "the handler is seen", func() bool { return f.Where("pub::hello").Local })
	if changes.Load() == before {
		t.Fatal("OnChange was not called when the handler came")
	}
	if got, err := render(f, "pub::hello", "ada"); err != nil || got != "hello ada from pub" {
		t.Fatalf("render: %q, %v", got, err)
	}
	if f.Where("skills::list").Local || f.Where("engine::functions::list").Local {
		t.Fatal("functions in hidden namespaces are held as if they could back a prompt")
	}
	_ = pub.Close()
	testutil.Eventually(t, 10*time.Second, "the handler is seen gone", func() bool { return !f.Where("pub::hello").Reachable() })
	// One node, no bridge: the engine's own error, unchanged (upstream's).
	_, err := render(f, "pub::hello", "ada")
	if code(err) != iii.CodeFunctionNotFound || strings.Contains(err.Error(), ";") {
		t.Fatalf("after the publisher left: %v", err)
	}
}

// A handler on the engine across this engine's iii-bridge is reachable:
// calls go through the bridge, its errors read as the other engine's, and
// a function neither engine has says so.
func TestTriggerThroughTheBridge(t *testing.T) {
	a, b := startEngine(t, nil), startEngine(t, nil)
	publisher(t, a, "pub")
	bridge(t, b, a)
	f, _ := follow(t, b, Options{UseBridge: true})
	testutil.Eventually(t, 10*time.Second, "the handler across the bridge is seen", func() bool {
		p := f.Where("pub::hello")
		return p.Bridge && !p.Local && p.Reachable()
	})
	if !f.Bridge() {
		t.Fatal("the bridge is not seen")
	}
	if got, err := render(f, "pub::hello", "grace"); err != nil || got != "hello grace from pub" {
		t.Fatalf("render through the bridge: %q, %v", got, err)
	}
	_, err := render(f, "pub::fail", "")
	var inv *iii.InvocationError
	if !errors.As(err, &inv) || inv.Code != "NOT_FOUND" || inv.Message != "no such greeting" {
		t.Fatalf("a handler's error through the bridge: %#v", err)
	}
	_, err = render(f, "pub::none", "")
	if code(err) != iii.CodeFunctionNotFound || !strings.Contains(err.Error(), "neither") || !strings.Contains(err.Error(), "iii-bridge") {
		t.Fatalf("a function neither engine has: %v", err)
	}
	// A function that appears on this engine is called here, not across.
	local := publisher(t, b, "pub2")
	testutil.Eventually(t, 10*time.Second, "the local handler is seen", func() bool { return f.Where("pub2::hello").Local })
	if got, err := render(f, "pub2::hello", "x"); err != nil || got != "hello x from pub2" {
		t.Fatalf("local render: %q, %v", got, err)
	}
	_ = local.Close()
}

// Without UseBridge (one engine) a worker offering bridge.invoke under the
// bridge's name receives nothing.
func TestBridgeOnlyWhenAsked(t *testing.T) {
	a, b := startEngine(t, nil), startEngine(t, nil)
	publisher(t, a, "pub")
	bridge(t, b, a)
	f, _ := follow(t, b, Options{})
	if f.Bridge() || f.Where("pub::hello").Reachable() {
		t.Fatalf("the bridge is used unasked: %+v", f.Where("pub::hello"))
	}
	if _, err := render(f, "pub::hello", "x"); code(err) != iii.CodeFunctionNotFound {
		t.Fatalf("a call went across the bridge unasked: %v", err)
	}
}

// A call made before the sets caught up (a handler registered a moment
// ago across the bridge) still finds it: the other way is tried once.
func TestTriggerTriesTheOtherWayOnce(t *testing.T) {
	a, b := startEngine(t, nil), startEngine(t, nil)
	bridge(t, b, a)
	f, _ := follow(t, b, Options{UseBridge: true, Backstop: time.Hour})
	testutil.Eventually(t, 10*time.Second, "the bridge is seen", f.Bridge)
	publisher(t, a, "late") // a's events do not reach b's Follower
	// Connect returns before engine a has taken the registrations: wait
	// until a serves the handler to its own clients.
	probe := connect(t, a, "probe", nil)
	testutil.Eventually(t, 10*time.Second, "late::hello served on engine a", func() bool {
		_, err := probe.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "late::hello", Data: json.RawMessage(`{}`), Timeout: time.Second})
		return err == nil
	})
	if f.Where("late::hello").Bridge {
		t.Fatal("the set across the bridge was listed again unprompted")
	}
	if got, err := render(f, "late::hello", "z"); err != nil || got != "hello z from late" {
		t.Fatalf("render of a handler the sets did not hold yet: %q, %v", got, err)
	}
	testutil.Eventually(t, 10*time.Second, "the miss woke the Follower", func() bool { return f.Where("late::hello").Bridge })
}

// Nodes on shared state tell each other which functions their engines
// hold; a node that cannot reach one names the node that holds it.
func TestNodesNameWhereAFunctionIs(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	a, b := startEngine(t, st), startEngine(t, st)
	// What package cluster does between registries: a node's announce
	// makes the other re-read its row.
	var toB atomic.Pointer[Follower]
	shared := func(e *engine.Engine, name string) Options {
		c := connect(t, e, "state-"+name, nil)
		return Options{Node: name, Shared: kv.III(c, 5*time.Second), Scope: "skills.nodes",
			Announce: func(ctx context.Context, key string) {
				if fb := toB.Load(); fb != nil {
					_ = fb.Scope().Apply(ctx, key)
				}
			}}
	}
	fa, _ := follow(t, a, shared(a, "node-a (ws://a)"))
	fb, _ := follow(t, b, shared(b, "node-b (ws://b)"))
	toB.Store(fb)
	publisher(t, a, "pub")
	testutil.Eventually(t, 10*time.Second, "b learns that a holds the handler", func() bool {
		p := fb.Where("pub::hello")
		return len(p.Nodes) == 1 && p.Nodes[0].Name == "node-a (ws://a)"
	})
	if p := fb.Where("pub::hello"); p.Reachable() {
		t.Fatalf("b reaches a's handler without a bridge: %+v", p)
	}
	_, err := render(fb, "pub::hello", "")
	if code(err) != iii.CodeFunctionNotFound || !strings.Contains(err.Error(), `node "node-a (ws://a)"`) ||
		!strings.Contains(err.Error(), "no iii-bridge worker") || !strings.Contains(err.Error(), DeployDoc) {
		t.Fatalf("b's answer for a's handler: %v", err)
	}
	_, err = render(fb, "pub::none", "")
	if !strings.Contains(fmt.Sprint(err), "no node of this cluster reports it") {
		t.Fatalf("b's answer for a handler no node has: %v", err)
	}
	// A node that starts later lists the others' rows (a connect's re-list).
	if err := fb.Scope().Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := fb.Where("pub::hello"); len(p.Nodes) != 1 {
		t.Fatalf("after a re-list: %+v", p)
	}
	_ = fa
}

// Rows other writers put into the nodes scope are checked before they are
// held: a row under another node's key, an oversized one, a bad key.
func TestNodeRowsAreChecked(t *testing.T) {
	ok := func(name string, fns int) json.RawMessage {
		ids := make([]string, fns)
		for i := range ids {
			ids[i] = fmt.Sprintf("f::%d", i)
		}
		raw, _ := json.Marshal(nodeRow{Node: name, Functions: ids})
		return raw
	}
	if _, valid := nodeOf(nodeKey("a"), ok("a", 3)); !valid {
		t.Fatal("a good row is refused")
	}
	for what, c := range map[string]struct {
		key string
		raw json.RawMessage
	}{
		"another node's key": {nodeKey("b"), ok("a", 1)},
		"too many functions": {nodeKey("a"), ok("a", maxNodeFunctions+1)},
		"no node":            {nodeKey(""), json.RawMessage(`{"functions":[]}`)},
		"not an object":      {nodeKey("a"), json.RawMessage(`[1]`)},
		"a long name":        {nodeKey(strings.Repeat("n", maxNodeName+1)), ok(strings.Repeat("n", maxNodeName+1), 1)},
	} {
		if _, valid := nodeOf(c.key, c.raw); valid {
			t.Errorf("%s: held", what)
		}
	}
	for _, key := range []string{"", "xyz", strings.Repeat("g", 16), nodeKey("a") + "0"} {
		if validKey(key) {
			t.Errorf("key %q accepted", key)
		}
	}
}

// The bridge's errors read as the function's own.
func TestBridgeErrors(t *testing.T) {
	for _, c := range []struct {
		in         error
		code, text string
	}{
		{iii.NewInvocationError("bridge_error", "remote error (NOT_FOUND): no such greeting"), "NOT_FOUND", "no such greeting"},
		{iii.NewInvocationError("bridge_error", "remote error (function_not_found): Function x::y not found in namespace default."),
			iii.CodeFunctionNotFound, "Function x::y not found in namespace default."},
		{iii.NewInvocationError(iii.CodeFunctionNotFound, "Function bridge.invoke not found"), iii.CodeFunctionNotFound, "Function x::y not found"},
		{iii.NewInvocationError("bridge_error", "iii is not connected"), "bridge_error", "through the iii-bridge: iii is not connected"},
		{iii.NewInvocationError("deserialization_error", "Failed to parse"), "deserialization_error", "Failed to parse"},
	} {
		err := bridgeError("x::y", c.in)
		var inv *iii.InvocationError
		if !errors.As(err, &inv) || inv.Code != c.code || inv.Message != c.text {
			t.Errorf("%v → %#v; want %s %q", c.in, err, c.code, c.text)
		}
	}
	if err := bridgeError("x::y", iii.NewInvocationError("bridge_error", "invocation timed out")); !errors.Is(err, iii.ErrTimeout) {
		t.Errorf("a timeout across the bridge → %v", err)
	}
}

// Misses wake the Follower at most once per minNudge: a client rendering a
// prompt whose handler is gone, over and over, costs one listing a second.
func TestMissesWakeAtMostOncePerSecond(t *testing.T) {
	f := New(nil, Options{Logger: quiet})
	woke := func() bool {
		select {
		case <-f.wake:
			return true
		default:
			return false
		}
	}
	f.nudge()
	if !woke() {
		t.Fatal("the first miss did not wake the Follower")
	}
	for range 100 {
		f.nudge()
	}
	if woke() {
		t.Fatal("misses within a second woke the Follower again")
	}
	f.lastNudge.Add(-int64(minNudge))
	f.nudge()
	if !woke() {
		t.Fatal("a miss a second later did not wake the Follower")
	}
	f.Wake() // events and connects are not limited
	if !woke() {
		t.Fatal("Wake was limited")
	}
}
