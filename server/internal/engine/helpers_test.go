package engine

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// waitLimit only guards against hangs; no test asserts on timing.
const waitLimit = 10 * time.Second

// logSink captures the engine's log lines so tests can check that bad
// input is reported.
type logSink struct{ testutil.Buffer }

// waitFor polls until the log contains s.
func (l *logSink) waitFor(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(l.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("log never contained %q; log:\n%s", s, l.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type testEngine struct {
	*Engine
	logs *logSink
}

func startEngine(t testing.TB, cfg Config) *testEngine {
	t.Helper()
	sink := &logSink{}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := e.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return &testEngine{Engine: e, logs: sink}
}

// frame is one decoded protocol frame plus its raw bytes.
type frame struct {
	m   map[string]any
	raw []byte
}

func (f frame) str(k string) string {
	s, _ := f.m[k].(string)
	return s
}

func (f frame) obj(k string) map[string]any {
	o, _ := f.m[k].(map[string]any)
	return o
}

// rawWorker is a worker speaking raw JSON frames over gorilla/websocket.
type rawWorker struct {
	t      testing.TB
	ws     *websocket.Conn
	id     string
	token  string
	frames chan frame
	closed chan struct{}
	wmu    sync.Mutex
}

func dialWorker(t testing.TB, url string) *rawWorker {
	t.Helper()
	return dialWorkerWith(t, websocket.DefaultDialer, url)
}

// dialWorkerWith connects a raw worker through d.
func dialWorkerWith(t testing.TB, d *websocket.Dialer, url string) *rawWorker {
	t.Helper()
	return dialWorkerHeader(t, d, url, nil)
}

// dialWorkerHeader connects a raw worker through d with upgrade headers h.
func dialWorkerHeader(t testing.TB, d *websocket.Dialer, url string, h http.Header) *rawWorker {
	t.Helper()
	ws, _, err := d.Dial(url, h)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	w := &rawWorker{t: t, ws: ws, frames: make(chan frame, 1024), closed: make(chan struct{})}
	go func() {
		defer close(w.closed)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Errorf("engine sent a frame that is not a JSON object: %q", data)
				return
			}
			w.frames <- frame{m: m, raw: data}
		}
	}()
	t.Cleanup(func() { _ = ws.Close() })
	first := w.next()
	if first.str("type") != "workerregistered" {
		t.Fatalf("first frame = %s; want workerregistered", first.raw)
	}
	w.id, w.token = first.str("worker_id"), first.str("reattach_token")
	return w
}

func (w *rawWorker) send(v any) {
	w.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		w.t.Fatal(err)
	}
	w.sendRaw(websocket.TextMessage, b)
}

func (w *rawWorker) sendRaw(mt int, b []byte) {
	w.t.Helper()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.ws.WriteMessage(mt, b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// next returns the next frame from the engine.
func (w *rawWorker) next() frame {
	w.t.Helper()
	select {
	case f := <-w.frames:
		return f
	case <-w.closed:
		select {
		case f := <-w.frames:
			return f
		default:
		}
		w.t.Fatal("connection closed while waiting for a frame")
	case <-time.After(waitLimit):
		w.t.Fatal("no frame from the engine")
	}
	return frame{}
}

// expect returns the next frame and checks its type.
func (w *rawWorker) expect(typ string) frame {
	w.t.Helper()
	f := w.next()
	if f.str("type") != typ {
		w.t.Fatalf("got frame %s; want type %q", f.raw, typ)
	}
	return f
}

// sync is a barrier: the engine processes a connection's frames in order,
// so once the pong arrives every earlier frame has been handled. It fails
// if any other frame arrives first.
func (w *rawWorker) sync() {
	w.t.Helper()
	w.send(map[string]any{"type": "ping"})
	w.expect("pong")
}

// syncCollect is sync for connections that may receive other frames
// first; it returns them in order.
func (w *rawWorker) syncCollect() []frame {
	w.t.Helper()
	w.send(map[string]any{"type": "ping"})
	var out []frame
	for {
		f := w.next()
		if f.str("type") == "pong" {
			return out
		}
		out = append(out, f)
	}
}

// waitClosed waits until the engine closes the connection.
func (w *rawWorker) waitClosed() {
	w.t.Helper()
	select {
	case <-w.closed:
	case <-time.After(waitLimit):
		w.t.Fatal("connection was not closed")
	}
}

func (w *rawWorker) close() {
	_ = w.ws.Close()
	<-w.closed
}

func (w *rawWorker) register(id string, extra map[string]any) {
	w.t.Helper()
	m := map[string]any{"type": "registerfunction", "id": id}
	for k, v := range extra {
		m[k] = v
	}
	w.send(m)
	w.sync()
}

// hello calls engine::workers::register like the SDKs (void).
func (w *rawWorker) hello(name string, pid int) {
	w.t.Helper()
	w.send(map[string]any{"type": "invokefunction", "function_id": "engine::workers::register",
		"data":   map[string]any{"name": name, "runtime": "go", "version": "1.0", "os": "linux", "pid": pid},
		"action": map[string]any{"type": "void"}})
}

// invoke sends an invokefunction of functionID with no data under a fresh
// invocation id and returns the id; the test reads what comes back.
func (w *rawWorker) invoke(functionID string) string {
	id := uuid.NewString()
	w.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": functionID, "data": nil})
	return id
}

// call invokes a function and returns the invocationresult.
func (w *rawWorker) call(functionID string, data any) frame {
	w.t.Helper()
	id := uuid.NewString()
	w.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": functionID, "data": data})
	f := w.expect("invocationresult")
	if f.str("invocation_id") != id {
		w.t.Fatalf("result for %s; want %s", f.str("invocation_id"), id)
	}
	return f
}

// result calls a function and fails unless it succeeded; it returns the
// raw result (nil when the frame has no result key).
func (w *rawWorker) result(functionID string, data any) json.RawMessage {
	w.t.Helper()
	f := w.call(functionID, data)
	if f.m["error"] != nil {
		w.t.Fatalf("%s failed: %s", functionID, f.raw)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(f.raw, &env); err != nil {
		w.t.Fatal(err)
	}
	return env.Result
}

// callErr calls a function and returns its error body, failing on success.
func (w *rawWorker) callErr(functionID string, data any) (code, message string) {
	w.t.Helper()
	f := w.call(functionID, data)
	e := f.obj("error")
	if e == nil {
		w.t.Fatalf("%s succeeded; want an error: %s", functionID, f.raw)
	}
	c, _ := e["code"].(string)
	m, _ := e["message"].(string)
	return c, m
}

// serve answers every invokefunction it receives with fn's result; it
// returns when the connection closes.
func (w *rawWorker) serve(fn func(f frame) any) {
	go func() {
		for {
			select {
			case f := <-w.frames:
				if f.str("type") != "invokefunction" {
					continue
				}
				b, _ := json.Marshal(map[string]any{"type": "invocationresult", "invocation_id": f.str("invocation_id"),
					"function_id": f.str("function_id"), "result": fn(f)})
				w.wmu.Lock()
				err := w.ws.WriteMessage(websocket.TextMessage, b)
				w.wmu.Unlock()
				if err != nil {
					return
				}
			case <-w.closed:
				return
			}
		}
	}()
}

func mustUnmarshal(t testing.TB, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}
