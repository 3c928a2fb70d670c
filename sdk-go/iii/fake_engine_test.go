package iii

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// waitLimit bounds every wait in the tests so that a bug fails the test
// instead of hanging it. It is not an assertion on speed.
const waitLimit = 10 * time.Second

// frame is one frame the fake engine received: decoded and raw.
type frame struct {
	wire.Message
	raw []byte
}

// has reports whether the raw frame has the top-level key.
func (f frame) has(key string) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.raw, &m); err != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// fakeEngine is a small iii engine over a real socket: it answers the
// handshake, records every frame per connection, and routes invocations and
// trigger bindings between its connections the way the real engine does
// (docs/reference/engine-protocol.md §3, §4). Tests can intercept frames with hook.
type fakeEngine struct {
	t   testing.TB
	srv *httptest.Server
	url string

	refuse atomic.Bool // answer upgrades with 503 while set

	mu           sync.Mutex
	conns        []*fakeConn
	functions    map[string]*fakeConn
	triggerTypes map[string]*fakeConn
	bindings     map[string]wire.Message // registertrigger frames by id
	routes       map[string]*fakeConn
	builtins     map[string]func(data json.RawMessage) (json.RawMessage, *wire.ErrorBody)
	hook         func(fc *fakeConn, f frame) bool // true = handled, skip routing
	onUpgrade    func(r *http.Request)

	connCh chan *fakeConn
}

type fakeConn struct {
	e        *fakeEngine
	ws       *websocket.Conn
	n        int
	workerID string
	token    string

	wmu    sync.Mutex
	frames chan frame
	pings  atomic.Int64
	stall  atomic.Pointer[chan struct{}] // when set, the read loop blocks (after its current read) until it is closed
	closed chan struct{}
}

func newFakeEngine(t testing.TB) *fakeEngine {
	t.Helper()
	e := &fakeEngine{
		t:            t,
		functions:    map[string]*fakeConn{},
		triggerTypes: map[string]*fakeConn{},
		bindings:     map[string]wire.Message{},
		routes:       map[string]*fakeConn{},
		builtins:     map[string]func(json.RawMessage) (json.RawMessage, *wire.ErrorBody){},
		connCh:       make(chan *fakeConn, 100),
	}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serveHTTP))
	e.url = "ws" + strings.TrimPrefix(e.srv.URL, "http")
	t.Cleanup(func() {
		e.mu.Lock()
		conns := append([]*fakeConn(nil), e.conns...)
		e.mu.Unlock()
		for _, fc := range conns {
			fc.drop()
		}
		e.srv.Close()
	})
	return e
}

func (e *fakeEngine) setHook(h func(fc *fakeConn, f frame) bool) {
	e.mu.Lock()
	e.hook = h
	e.mu.Unlock()
}

func (e *fakeEngine) builtin(id string, f func(data json.RawMessage) (json.RawMessage, *wire.ErrorBody)) {
	e.mu.Lock()
	e.builtins[id] = f
	e.mu.Unlock()
}

func (e *fakeEngine) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if e.refuse.Load() {
		http.Error(w, "engine unavailable", http.StatusServiceUnavailable)
		return
	}
	e.mu.Lock()
	onUpgrade := e.onUpgrade
	e.mu.Unlock()
	if onUpgrade != nil {
		onUpgrade(r)
	}
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	fc := &fakeConn{e: e, ws: ws, workerID: uuid.NewString(), token: uuid.NewString(),
		frames: make(chan frame, 100000), closed: make(chan struct{})}
	ws.SetPingHandler(func(data string) error {
		fc.pings.Add(1)
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	e.mu.Lock()
	e.conns = append(e.conns, fc)
	fc.n = len(e.conns)
	e.mu.Unlock()
	fc.send(wire.Message{Type: wire.TypeWorkerRegistered, WorkerID: fc.workerID, ReattachToken: fc.token})
	e.connCh <- fc
	go fc.readLoop()
}

func (fc *fakeConn) readLoop() {
	defer close(fc.closed)
	defer fc.e.disconnected(fc)
	for {
		if ch := fc.stall.Load(); ch != nil {
			<-*ch
		}
		_, raw, err := fc.ws.ReadMessage()
		if err != nil {
			return
		}
		var m wire.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			fc.e.t.Errorf("fake engine: client sent undecodable frame %s: %v", raw, err)
			continue
		}
		f := frame{Message: m, raw: raw}
		fc.frames <- f
		fc.e.route(fc, f)
	}
}

func (fc *fakeConn) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	fc.sendRaw(b)
}

func (fc *fakeConn) sendRaw(b []byte) {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	_ = fc.ws.WriteMessage(websocket.TextMessage, b)
}

// drop closes the socket abruptly (no close frame), like a crashed engine.
func (fc *fakeConn) drop() { _ = fc.ws.Close() }

// next returns the next frame the client sent on this connection.
func (fc *fakeConn) next(t testing.TB) frame {
	t.Helper()
	select {
	case f := <-fc.frames:
		return f
	case <-time.After(waitLimit):
		t.Fatalf("fake engine conn %d: no frame from the client", fc.n)
		return frame{}
	}
}

// waitFor skips frames until one satisfies pred.
func (fc *fakeConn) waitFor(t testing.TB, what string, pred func(frame) bool) frame {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case f := <-fc.frames:
			if pred(f) {
				return f
			}
		case <-deadline:
			t.Fatalf("fake engine conn %d: never received %s", fc.n, what)
			return frame{}
		}
	}
}

func (e *fakeEngine) waitConn(t testing.TB) *fakeConn {
	t.Helper()
	select {
	case fc := <-e.connCh:
		return fc
	case <-time.After(waitLimit):
		t.Fatal("fake engine: no client connected")
		return nil
	}
}

func (e *fakeEngine) disconnected(fc *fakeConn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, owner := range e.functions {
		if owner == fc {
			delete(e.functions, id)
		}
	}
	for id, owner := range e.triggerTypes {
		if owner == fc {
			delete(e.triggerTypes, id)
		}
	}
}

// route plays the engine's part for one inbound frame.
func (e *fakeEngine) route(fc *fakeConn, f frame) {
	e.mu.Lock()
	hook := e.hook
	e.mu.Unlock()
	if hook != nil && hook(fc, f) {
		return
	}
	m := f.Message
	switch m.Type {
	case wire.TypePing:
		fc.send(wire.Message{Type: wire.TypePong})
	case wire.TypeRegisterFunction:
		e.mu.Lock()
		e.functions[m.ID] = fc
		e.mu.Unlock()
	case wire.TypeUnregisterFunction:
		e.mu.Lock()
		if e.functions[m.ID] == fc {
			delete(e.functions, m.ID)
		}
		e.mu.Unlock()
	case wire.TypeRegisterTriggerType:
		e.mu.Lock()
		e.triggerTypes[m.ID] = fc
		var replay []wire.Message
		for _, b := range e.bindings {
			if b.TriggerType == m.ID {
				replay = append(replay, b)
			}
		}
		e.mu.Unlock()
		for _, b := range replay {
			fc.send(b)
		}
	case wire.TypeRegisterTrigger:
		fwd := wire.Message{Type: wire.TypeRegisterTrigger, ID: m.ID, TriggerType: m.TriggerType, FunctionID: m.FunctionID,
			Config: m.Config, Metadata: m.Metadata}
		e.mu.Lock()
		e.bindings[m.ID] = fwd
		provider := e.triggerTypes[m.TriggerType]
		e.mu.Unlock()
		if provider != nil {
			provider.send(fwd)
		}
	case wire.TypeUnregisterTrigger:
		e.mu.Lock()
		b, ok := e.bindings[m.ID]
		delete(e.bindings, m.ID)
		provider := e.triggerTypes[b.TriggerType]
		e.mu.Unlock()
		if ok && provider != nil {
			provider.send(wire.Message{Type: wire.TypeUnregisterTrigger, ID: m.ID, TriggerType: b.TriggerType})
		}
	case wire.TypeInvokeFunction:
		e.invoke(fc, m)
	case wire.TypeInvocationResult:
		e.mu.Lock()
		caller := e.routes[m.InvocationID]
		delete(e.routes, m.InvocationID)
		e.mu.Unlock()
		if caller != nil {
			caller.send(&wire.Message{Type: wire.TypeInvocationResult, InvocationID: m.InvocationID,
				Result: m.Result, Error: m.Error, FunctionID: m.FunctionID})
		}
	}
}

func (e *fakeEngine) invoke(caller *fakeConn, m wire.Message) {
	if m.FunctionID == "engine::workers::register" {
		return
	}
	reply := func(result json.RawMessage, eb *wire.ErrorBody) {
		if m.InvocationID == "" {
			return
		}
		caller.send(&wire.Message{Type: wire.TypeInvocationResult, InvocationID: m.InvocationID,
			Result: result, Error: eb, FunctionID: m.FunctionID})
	}
	e.mu.Lock()
	builtin := e.builtins[m.FunctionID]
	owner := e.functions[m.FunctionID]
	e.mu.Unlock()
	enqueue := m.Action != nil && m.Action.Type == wire.ActionEnqueue
	switch {
	case builtin != nil:
		reply(builtin(m.Data))
	case owner == nil && enqueue:
		reply(nil, &wire.ErrorBody{Code: wire.CodeEnqueueError, Message: "Function " + m.FunctionID + " not found"})
	case owner == nil:
		reply(nil, &wire.ErrorBody{Code: wire.CodeFunctionNotFound, Message: "Function " + m.FunctionID + " not found"})
	default:
		data := m.Data
		if !enqueue && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			var obj map[string]json.RawMessage
			if json.Unmarshal(data, &obj) == nil {
				obj["_caller_worker_id"], _ = json.Marshal(caller.workerID)
				data, _ = json.Marshal(obj)
			}
		}
		id := m.InvocationID
		if id == "" || enqueue {
			id = uuid.NewString()
		} else {
			e.mu.Lock()
			e.routes[id] = caller
			e.mu.Unlock()
		}
		owner.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: id, FunctionID: m.FunctionID, Data: data, Metadata: m.Metadata,
			Traceparent: m.Traceparent, Baggage: m.Baggage})
		if enqueue {
			reply(json.RawMessage(`{"messageReceiptId":"`+uuid.NewString()+`"}`), nil)
		}
	}
}

// testLogger discards logs unless IIITEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("IIITEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fastReconnect keeps reconnect tests quick without asserting on time.
var fastReconnect = ReconnectConfig{InitialDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond, BackoffMultiplier: 2, JitterFactor: 0.1, MaxRetries: -1}

// newTestClient builds a client for e that is closed at test end. It is
// built with New, so each test decides when it connects.
func newTestClient(t testing.TB, e *fakeEngine, opts ...Option) *Client {
	t.Helper()
	all := append([]Option{WithLogger(testLogger()), WithReconnectConfig(fastReconnect), WithName("test-worker")}, opts...)
	c := New(e.url, all...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// connect connects c and returns the engine side of the connection, after
// consuming the handshake frames (hello and replayed registrations).
func connect(t testing.TB, e *fakeEngine, c *Client) *fakeConn {
	t.Helper()
	ctx, cancel := contextWithLimit()
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	fc := e.waitConn(t)
	fc.waitFor(t, "the worker hello", func(f frame) bool {
		return f.Type == wire.TypeInvokeFunction && f.FunctionID == "engine::workers::register"
	})
	// The hello comes before the replayed registrations: wait until the
	// engine routes every function the client holds, so a call made right
	// after connect cannot race them.
	c.mu.Lock()
	ids := make([]string, 0, len(c.functions))
	for id := range c.functions {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	eventually(t, "the replayed functions routed", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, id := range ids {
			if e.functions[id] != fc {
				return false
			}
		}
		return true
	})
	return fc
}

func contextWithLimit() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitLimit)
}

// eventually polls cond until it holds or waitLimit passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition never held: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
