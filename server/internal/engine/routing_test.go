package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/iii-skills/skills/sdk-go/wire"
)

func TestWorkerRegisteredIsFirstFrame(t *testing.T) {
	e := startEngine(t, Config{})
	a := dialWorker(t, e.URL())
	b := dialWorker(t, e.URL())
	if !isUUID(a.id) || !isUUID(a.token) {
		t.Fatalf("worker_id %q / reattach_token %q are not UUIDs", a.id, a.token)
	}
	if a.id == b.id || a.token == b.token || a.id == a.token {
		t.Fatal("worker ids and tokens must be distinct per connection")
	}
}

func TestURLReportsRealPort(t *testing.T) {
	e := startEngine(t, Config{Addr: ":0"})
	if strings.HasSuffix(e.Addr(), ":0") {
		t.Fatalf("Addr() = %s; want the real port", e.Addr())
	}
	if !strings.HasPrefix(e.URL(), "ws://127.0.0.1:") || strings.HasSuffix(e.URL(), ":0") {
		t.Fatalf("URL() = %s", e.URL())
	}
	dialWorker(t, e.URL())
}

func TestServeStopsWithContext(t *testing.T) {
	e, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- e.Serve(ctx) }()
	w := dialWorker(t, e.URL())
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	w.waitClosed()
	if err := e.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestInvokeRoutesWithSameIDAndCallerID(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::echo", nil)
	caller.register("cli::back", nil)

	id := uuid.NewString()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "svc::echo",
		"data": map[string]any{"a": 1}, "metadata": map[string]any{"m": "x"}, "traceparent": "00-abc-def-01"})
	in := owner.expect("invokefunction")
	if in.str("invocation_id") != id || in.str("function_id") != "svc::echo" {
		t.Fatalf("owner got %s", in.raw)
	}
	data := in.obj("data")
	if data["a"] != float64(1) || data["_caller_worker_id"] != caller.id {
		t.Fatalf("data = %v; want a=1 and _caller_worker_id=%s", data, caller.id)
	}
	if in.obj("metadata")["m"] != "x" || in.str("traceparent") != "00-abc-def-01" {
		t.Fatalf("metadata/traceparent not passed: %s", in.raw)
	}
	if _, ok := in.m["action"]; ok {
		t.Fatalf("engine → owner frame must not carry action: %s", in.raw)
	}
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": id, "function_id": "svc::echo",
		"result": map[string]any{"ok": true}})
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != id || res.obj("result")["ok"] != true {
		t.Fatalf("caller got %s", res.raw)
	}

	// The other way round: the owner calls the caller's function.
	id2 := uuid.NewString()
	owner.send(map[string]any{"type": "invokefunction", "invocation_id": id2, "function_id": "cli::back", "data": "plain"})
	in2 := caller.expect("invokefunction")
	if in2.str("invocation_id") != id2 || in2.m["data"] != "plain" {
		t.Fatalf("non-object payloads must pass unchanged: %s", in2.raw)
	}
	caller.send(map[string]any{"type": "invocationresult", "invocation_id": id2, "function_id": "cli::back",
		"error": map[string]any{"code": "invocation_failed", "message": "boom"}})
	res2 := owner.expect("invocationresult")
	if res2.str("invocation_id") != id2 || res2.obj("error")["code"] != "invocation_failed" {
		t.Fatalf("owner got %s", res2.raw)
	}
}

func TestCallerWorkerIDInjection(t *testing.T) {
	cases := map[string]string{
		`{}`:                            `{"_caller_worker_id":"W"}`,
		` { } `:                         `{"_caller_worker_id":"W"}`,
		`{"a":1}`:                       `{"_caller_worker_id":"W","a":1}`,
		`{"_caller_worker_id":"x"}`:     `{"_caller_worker_id":"W"}`,
		`[1]`:                           `[1]`,
		`null`:                          `null`,
		`"s"`:                           `"s"`,
		`{"b":{"_caller_worker_id":1}}`: `{"_caller_worker_id":"W","b":{"_caller_worker_id":1}}`,
	}
	for in, want := range cases {
		got := injectCaller(json.RawMessage(in), "W")
		var g, w any
		mustUnmarshal(t, got, &g)
		mustUnmarshal(t, []byte(want), &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("injectCaller(%s) = %s; want %s", in, got, want)
		}
	}
}

func TestVoidCallGetsNoReplyAndOwnerGetsUUID(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::f", nil)

	caller.send(map[string]any{"type": "invokefunction", "function_id": "svc::f", "data": map[string]any{"n": 1},
		"action": map[string]any{"type": "void"}})
	in := owner.expect("invokefunction")
	if !isUUID(in.str("invocation_id")) {
		t.Fatalf("owner hop of a void call needs a UUID invocation_id: %s", in.raw)
	}
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"),
		"function_id": "svc::f", "result": "first"})

	// A void call that carries an id still gets no answer; the owner hop uses a fresh id.
	voidID := uuid.NewString()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": voidID, "function_id": "svc::f",
		"data": nil, "action": map[string]any{"type": "void"}})
	in2 := owner.expect("invokefunction")
	if in2.str("invocation_id") == voidID || !isUUID(in2.str("invocation_id")) {
		t.Fatalf("void owner hop reused the caller's id: %s", in2.raw)
	}
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": in2.str("invocation_id"),
		"function_id": "svc::f", "result": "second"})

	// The owner's frames are handled in order, so the first frame the caller
	// sees must be the answer to this synchronous call.
	id := caller.invoke("svc::f")
	in3 := owner.expect("invokefunction")
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": in3.str("invocation_id"),
		"function_id": "svc::f", "result": "third"})
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != id || res.m["result"] != "third" {
		t.Fatalf("caller got %s; void calls must not be answered", res.raw)
	}
}

func TestFunctionNotFound(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	code, msg := w.callErr("nope::missing", map[string]any{})
	if code != "function_not_found" || msg != "Function nope::missing not found" {
		t.Fatalf("got %s %q", code, msg)
	}
	// Without an invocation_id (or void) nothing comes back.
	w.send(map[string]any{"type": "invokefunction", "function_id": "nope::missing", "data": nil})
	w.send(map[string]any{"type": "invokefunction", "function_id": "nope::missing", "data": nil, "action": map[string]any{"type": "void"}})
	w.sync()
}

func TestInvocationStoppedWhenOwnerDisconnects(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::slow", nil)
	id := caller.invoke("svc::slow")
	owner.expect("invokefunction")
	owner.close()
	res := caller.expect("invocationresult")
	errb := res.obj("error")
	if res.str("invocation_id") != id || errb["code"] != "invocation_stopped" || errb["message"] != "Invocation stopped" {
		t.Fatalf("caller got %s", res.raw)
	}
	// The function went away with its owner.
	if code, _ := caller.callErr("svc::slow", nil); code != "function_not_found" {
		t.Fatalf("code = %s; want function_not_found", code)
	}
}

func TestCallerDisconnectDropsPendingAndCountsStayRight(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	owner.hello("owner", 1)
	owner.register("svc::f", nil)
	caller := dialWorker(t, e.URL())
	id := caller.invoke("svc::f")
	owner.expect("invokefunction")
	observer := dialWorker(t, e.URL())
	if n := activeInvocations(t, observer, "owner"); n != 1 {
		t.Fatalf("active_invocations = %d; want 1", n)
	}
	caller.close()
	e.logs.waitFor(t, "worker disconnected")
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": id, "function_id": "svc::f", "result": 1})
	owner.sync()
	if n := activeInvocations(t, observer, "owner"); n != 0 {
		t.Fatalf("active_invocations = %d; want 0 after the late result", n)
	}
}

func activeInvocations(t *testing.T, w *rawWorker, name string) int {
	t.Helper()
	var out struct {
		Workers []struct {
			Name   string `json:"name"`
			Active int    `json:"active_invocations"`
		} `json:"workers"`
	}
	mustUnmarshal(t, w.result("engine::workers::list", nil), &out)
	for _, wk := range out.Workers {
		if wk.Name == name {
			return wk.Active
		}
	}
	t.Fatalf("worker %s not listed", name)
	return 0
}

func TestInvocationsAreConcurrent(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::slow", nil)
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	for _, id := range ids {
		caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "svc::slow", "data": nil})
	}
	// All three reach the owner before it answers any: nothing waits for a reply.
	got := map[string]bool{}
	for range ids {
		got[owner.expect("invokefunction").str("invocation_id")] = true
	}
	// A built-in call from the same caller is answered while they are pending.
	caller.result("state::list_groups", nil)
	for i := len(ids) - 1; i >= 0; i-- {
		if !got[ids[i]] {
			t.Fatalf("owner never got %s", ids[i])
		}
		owner.send(map[string]any{"type": "invocationresult", "invocation_id": ids[i], "function_id": "svc::slow", "result": i})
		if res := caller.expect("invocationresult"); res.str("invocation_id") != ids[i] {
			t.Fatalf("got %s; want %s", res.raw, ids[i])
		}
	}
}

func TestFirstOwnerWinsAndOnlyOwnerRemoves(t *testing.T) {
	e := startEngine(t, Config{})
	a := dialWorker(t, e.URL())
	b := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	a.register("svc::f", nil)
	b.send(map[string]any{"type": "registerfunction", "id": "svc::f"})
	rej := b.expect("registrationrejected")
	if rej.str("code") != "FUNCTION_NAMESPACE_CONFLICT" || rej.str("function_id") != "svc::f" || rej.str("owner_worker_id") != a.id {
		t.Fatalf("rejection = %s", rej.raw)
	}
	b.sync()                                                             // the loser keeps its connection
	b.send(map[string]any{"type": "unregisterfunction", "id": "svc::f"}) // not the owner
	b.sync()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "svc::f", "data": nil})
	a.expect("invokefunction")
	a.close() // the owner leaving frees the id
	if stop := caller.expect("invocationresult"); stop.obj("error")["code"] != "invocation_stopped" {
		t.Fatalf("got %s", stop.raw)
	}
	if code, _ := caller.callErr("svc::f", nil); code != "function_not_found" {
		t.Fatalf("code = %s", code)
	}
	b.register("svc::f", nil) // now b may claim it
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "svc::f", "data": nil})
	b.expect("invokefunction")
}

func TestDuplicateInFlightInvocationIDIsRefused(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::f", nil)
	id := caller.invoke("svc::f")
	owner.expect("invokefunction")
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "svc::f", "data": nil})
	res := caller.expect("invocationresult")
	if res.obj("error")["code"] != "invalid_request" {
		t.Fatalf("got %s", res.raw)
	}
}

func TestMissingDataKeyIsRefused(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::f", nil)
	id := uuid.NewString()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "svc::f"})
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != id || res.obj("error")["code"] != "invalid_request" ||
		!strings.Contains(res.obj("error")["message"].(string), `"data": null`) {
		t.Fatalf("got %s", res.raw)
	}
	e.logs.waitFor(t, "missing=data")
	owner.sync() // the owner never saw the frame
}

func TestNonUUIDInvocationIDIsDropped(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::f", nil)
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": "inv-1", "function_id": "svc::f", "data": nil})
	caller.sync()
	owner.sync()
	e.logs.waitFor(t, "invocation_id is not a UUID")
}

func TestEnqueueRunsThroughInProcessQueue(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::job", nil)
	id := uuid.NewString()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "svc::job",
		"data": map[string]any{"n": 1}, "action": map[string]any{"type": "enqueue", "queue": "q1"}})
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != id || !isUUID(res.obj("result")["messageReceiptId"].(string)) {
		t.Fatalf("enqueue reply = %s", res.raw)
	}
	in := owner.expect("invokefunction")
	if _, ok := in.obj("data")["_caller_worker_id"]; ok || in.obj("data")["n"] != float64(1) {
		t.Fatalf("queued job payload = %s (no _caller_worker_id for enqueue)", in.raw)
	}
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"), "function_id": "svc::job", "result": nil})

	if code, _ := caller.callErrAction("nope::x", map[string]any{"type": "enqueue", "queue": "q1"}); code != "function_not_found" {
		t.Fatalf("enqueue of unknown function: %s", code)
	}
	if code, _ := caller.callErrAction("svc::job", map[string]any{"type": "enqueue"}); code != "enqueue_error" {
		t.Fatalf("enqueue without queue: %s", code)
	}
}

func (w *rawWorker) callErrAction(functionID string, action any) (string, string) {
	w.t.Helper()
	id := uuid.NewString()
	w.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": functionID, "data": nil, "action": action})
	f := w.expect("invocationresult")
	errb := f.obj("error")
	if errb == nil {
		w.t.Fatalf("expected an error: %s", f.raw)
	}
	c, _ := errb["code"].(string)
	m, _ := errb["message"].(string)
	return c, m
}

func TestMalformedFramesKeepConnection(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	bad := []struct{ frame, log string }{
		{`not json`, "not a valid iii protocol message"},
		{`{"type":"bogus"}`, "unknown message type"},
		{`{"type":"invokefunction","data":{}}`, "missing=function_id"},
		{`{"type":"registertrigger","id":"t","function_id":"f"}`, "missing=trigger_type"},
		{`{"type":"invocationresult","result":1}`, "missing=invocation_id"},
		{`{"no":"type"}`, "missing=type"},
		{`{"type":"invokefunction","function_id":"x","action":"void"}`, "not a valid iii protocol message"},
		{`[1,2]`, "not a valid iii protocol message"},
	}
	for _, b := range bad {
		w.sendRaw(websocket.TextMessage, []byte(b.frame))
	}
	w.sendRaw(websocket.TextMessage, []byte("   "))
	w.sendRaw(websocket.BinaryMessage, []byte("OTLP\x00\x01binary telemetry"))
	w.sync()
	for _, b := range bad {
		if !strings.Contains(e.logs.String(), b.log) {
			t.Errorf("frame %s: log lacks %q", b.frame, b.log)
		}
	}
	// A JSON frame sent as binary is still a protocol frame.
	w.sendRaw(websocket.BinaryMessage, []byte(`{"type":"ping"}`))
	w.expect("pong")
	w.result("state::list_groups", nil)
}

func TestOversizeFrameIsDroppedAndConnectionKept(t *testing.T) {
	e := startEngine(t, Config{MaxFrameBytes: 1024})
	big := dialWorker(t, e.URL())
	big.sendRaw(websocket.TextMessage, []byte(`{"type":"ping","pad":"`+strings.Repeat("x", 2048)+`"}`))
	e.logs.waitFor(t, "dropping frame larger than MaxFrameBytes")
	big.sync()
}

func TestLargeOutboundFrameIsLogged(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	w.result("state::set", map[string]any{"scope": "s", "key": "k", "value": strings.Repeat("x", 1<<20+10)})
	if !strings.Contains(e.logs.String(), "larger than 1 MiB") {
		t.Fatal("no warning for a frame over 1 MiB")
	}
}

func TestPanicInBuiltinIsContained(t *testing.T) {
	e := startEngine(t, Config{})
	e.builtins["test::panic"] = &builtin{id: "test::panic", call: func(context.Context, *conn, json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
		panic("kaboom")
	}}
	w := dialWorker(t, e.URL())
	code, msg := w.callErr("test::panic", nil)
	if code != "invocation_failed" || !strings.Contains(msg, "kaboom") {
		t.Fatalf("got %s %q", code, msg)
	}
	w.sync()
}

func TestOtelSocketAcceptedAndDiscarded(t *testing.T) {
	e := startEngine(t, Config{})
	ws, _, err := websocket.DefaultDialer.Dial(e.URL()+"/otel", nil)
	if err != nil {
		t.Fatalf("dial /otel: %v", err)
	}
	defer ws.Close()
	for _, f := range [][]byte{[]byte("OTLP\x01\x02"), []byte("anything")} {
		if err := ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	// The engine never answers on /otel; Close ends the socket.
	go func() { _ = e.Close() }()
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("engine sent a frame on /otel")
	}
}

func TestReattachEvictsPreviousConnection(t *testing.T) {
	e := startEngine(t, Config{})
	old := dialWorker(t, e.URL())
	old.register("svc::f", nil)
	caller := dialWorker(t, e.URL())

	// A wrong token is ignored.
	imposter := dialWorker(t, e.URL())
	imposter.send(map[string]any{"type": "reattach", "previous_worker_id": old.id, "reattach_token": uuid.NewString()})
	imposter.sync()
	old.sync()

	pendingID := uuid.NewString()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": pendingID, "function_id": "svc::f", "data": nil})
	old.expect("invokefunction")

	fresh := dialWorker(t, e.URL())
	fresh.send(map[string]any{"type": "reattach", "previous_worker_id": old.id, "reattach_token": old.token})
	fresh.sync() // cleanup of the old connection finished before this pong
	old.waitClosed()
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != pendingID || res.obj("error")["code"] != "invocation_stopped" {
		t.Fatalf("pending call on the evicted connection: %s", res.raw)
	}
	if code, _ := caller.callErr("svc::f", nil); code != "function_not_found" {
		t.Fatalf("function of the evicted connection still routable: %s", code)
	}
	fresh.register("svc::f", nil)
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "svc::f", "data": nil})
	fresh.expect("invokefunction")
}

func TestToleratedFrames(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	for _, f := range []string{
		`{"type":"registerservice","id":"svc","name":"svc"}`,
		`{"type":"pong"}`,
		`{"type":"workerregistered","worker_id":"x"}`,
		`{"type":"unregistertriggertype","id":"nope","description":"x"}`,
		`{"type":"reattach","previous_worker_id":"not-a-uuid"}`,
		`{"type":"invocationresult","invocation_id":"` + uuid.NewString() + `","function_id":"x","result":1}`,
		`{"type":"unregistertrigger","id":"unknown"}`,
		`{"type":"triggerregistrationresult","id":"unknown","trigger_type":"t","function_id":"f","error":{"code":"x","message":"y"}}`,
	} {
		w.sendRaw(websocket.TextMessage, []byte(f))
	}
	w.sync()
}
