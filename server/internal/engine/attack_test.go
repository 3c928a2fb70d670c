package engine

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// These tests play an attacker on the same machine: a web page,
// a second worker, a third party, a client that never reads. Each asserts
// that the attack fails and that what was stored survives.

func dialStatus(t *testing.T, url string, h http.Header) int {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(url, h)
	if err == nil {
		_ = ws.Close()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return resp.StatusCode
}

func TestWebPagesCannotOpenTheWorkerSocket(t *testing.T) {
	e := startEngine(t, Config{AllowedOrigins: []string{"https://app.example"}})
	url := e.URL()
	cases := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no Origin (SDK clients)", nil, http.StatusSwitchingProtocols},
		{"foreign page", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"null origin (sandboxed iframe)", http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{"loopback page", http.Header{"Origin": {"http://localhost:3000"}}, http.StatusSwitchingProtocols},
		{"allow-listed browser client", http.Header{"Origin": {"https://app.example"}}, http.StatusSwitchingProtocols},
		{"DNS rebinding (foreign Host)", http.Header{"Host": {"rebind.evil.example:49134"}}, http.StatusForbidden},
	}
	for _, c := range cases {
		if got := dialStatus(t, url, c.header); got != c.want {
			t.Errorf("%s: status %d; want %d", c.name, got, c.want)
		}
	}
	if got := dialStatus(t, url+"/otel", http.Header{"Origin": {"https://evil.example"}}); got != http.StatusForbidden {
		t.Errorf("/otel from a foreign page: status %d; want 403", got)
	}
	e.logs.waitFor(t, "worker connection refused")
}

func TestWorkerTokenIsRequiredWhenSet(t *testing.T) {
	e := startEngine(t, Config{Token: "s3cret"})
	url := e.URL()
	if got := dialStatus(t, url, nil); got != http.StatusUnauthorized {
		t.Errorf("no token: status %d; want 401", got)
	}
	if got := dialStatus(t, url, http.Header{"Authorization": {"Bearer wrong"}}); got != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d; want 401", got)
	}
	if got := dialStatus(t, url, http.Header{"Authorization": {"Bearer s3cret"}}); got != http.StatusSwitchingProtocols {
		t.Errorf("header token: status %d; want 101", got)
	}
	if got := dialStatus(t, url+"/?token=s3cret", nil); got != http.StatusSwitchingProtocols {
		t.Errorf("query token: status %d; want 101", got)
	}
}

func TestBuiltinsCannotBeTakenOver(t *testing.T) {
	dir := t.TempDir()
	e := startEngine(t, Config{DataDir: dir})
	victim := dialWorker(t, e.URL())
	attacker := dialWorker(t, e.URL())
	for _, id := range []string{"state::set", "state::get", "engine::functions::list", "engine::future::thing"} {
		attacker.send(map[string]any{"type": "registerfunction", "id": id})
		rej := attacker.expect("registrationrejected")
		if rej.str("function_id") != id || rej.str("code") != "FUNCTION_NAMESPACE_CONFLICT" {
			t.Fatalf("rejection for %s = %s", id, rej.raw)
		}
		if v, ok := rej.m["owner_worker_id"]; !ok || v != "" {
			t.Fatalf("reserved ids are refused with owner_worker_id \"\": %s", rej.raw)
		}
	}
	// The victim's writes go to the store, never to the attacker.
	victim.result("state::set", map[string]any{"scope": "s", "key": "k", "value": "secret"})
	attacker.sync()
	attacker.close()
	victim.result("state::set", map[string]any{"scope": "s", "key": "k2", "value": "after"})
	_ = e.Close()

	e2 := startEngine(t, Config{DataDir: dir})
	w := dialWorker(t, e2.URL())
	for k, want := range map[string]string{"k": `"secret"`, "k2": `"after"`} {
		if got := string(w.result("state::get", map[string]any{"scope": "s", "key": k})); got != want {
			t.Fatalf("after restart %s = %s; want %s", k, got, want)
		}
	}
}

func TestWorkerFunctionsCannotBeTakenOver(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	attacker := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("skills::register", nil)
	owner.serve(func(f frame) any { return map[string]any{"by": "owner"} })
	attacker.send(map[string]any{"type": "registerfunction", "id": "skills::register"})
	if rej := attacker.expect("registrationrejected"); rej.str("owner_worker_id") != owner.id {
		t.Fatalf("rejection = %s", rej.raw)
	}
	e.logs.waitFor(t, "first owner wins")
	var got map[string]string
	mustUnmarshal(t, caller.result("skills::register", map[string]any{}), &got)
	if got["by"] != "owner" {
		t.Fatalf("call reached %v", got)
	}
	attacker.close() // the attacker leaving changes nothing
	mustUnmarshal(t, caller.result("skills::register", map[string]any{}), &got)
	if got["by"] != "owner" {
		t.Fatalf("after the attacker left the call reached %v", got)
	}
}

func TestResultsOnlyFromTheInvokedConnection(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	forger := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::f", nil)
	id := caller.invoke("svc::f")
	owner.expect("invokefunction")
	forger.send(map[string]any{"type": "invocationresult", "invocation_id": id, "function_id": "svc::f", "result": "forged"})
	forger.sync()
	e.logs.waitFor(t, "invocationresult dropped: it came from a connection the invocation was not sent to")
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": id, "function_id": "svc::f", "result": "real"})
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != id || res.m["result"] != "real" {
		t.Fatalf("caller got %s", res.raw)
	}
}

// A result the scanner can locate but that is not JSON (garbage in a key
// the engine does not read) is not forwarded: the caller gets an error it
// can parse, and keeps its connection.
func TestMalformedResultIsNotForwarded(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("svc::f", nil)
	id := caller.invoke("svc::f")
	owner.expect("invokefunction")
	owner.sendRaw(websocket.TextMessage, []byte(`{"type":"invocationresult","invocation_id":"`+id+
		`","function_id":"svc::f","result":1,"extra":{"a":tru}}`))
	res := caller.expect("invocationresult")
	if res.str("invocation_id") != id || res.obj("error")["code"] != "deserialization_error" {
		t.Fatalf("caller got %s; want a deserialization_error", res.raw)
	}
	e.logs.waitFor(t, "invocationresult dropped: not valid JSON")
	caller.result("state::set", map[string]any{"scope": "s", "key": "k", "value": 1}) // still connected
}

// neverReads dials and never reads its socket.
func neverReads(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 1024}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func TestClientThatNeverReadsIsDisconnected(t *testing.T) {
	const value = 256 << 10
	e := startEngine(t, Config{MaxConnOutboundBytes: 8 << 20, MaxOutboundBytes: 64 << 20})
	seed := dialWorker(t, e.URL())
	seed.result("state::set", map[string]any{"scope": "s", "key": "big", "value": strings.Repeat("x", value)})
	hog := neverReads(t, e.URL())
	get, _ := json.Marshal(map[string]any{"type": "invokefunction", "function_id": "state::get",
		"data": map[string]any{"scope": "s", "key": "big"}, "invocation_id": "00000000-0000-0000-0000-000000000000"})
	for i := 0; i < 2000; i++ {
		// Fresh ids: a duplicate in-flight id is refused.
		f := strings.Replace(string(get), "00000000-0000-0000-0000-000000000000", uuid.NewString(), 1)
		if err := hog.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			break // disconnected, as it should be
		}
	}
	e.logs.waitFor(t, "closing worker connection: it is not reading its frames")
	// A well-behaved client still gets its value, and the backlog is gone.
	if got := seed.result("state::get", map[string]any{"scope": "s", "key": "big"}); len(got) != value+2 {
		t.Fatalf("value length %d", len(got))
	}
	deadline := time.Now().Add(waitLimit)
	for e.out.total.Load() > 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("outbound backlog still %d bytes after the hog left", e.out.total.Load())
		}
		seed.sync()
	}
}

// The per-connection cap bounds a backlog, not one frame: a reading client
// still gets a single answer larger than the cap (a registry's cold-load
// state::list of a big scope is one such frame).
func TestOneFrameLargerThanTheCapReachesAReadingClient(t *testing.T) {
	const value = 2 << 20
	e := startEngine(t, Config{MaxConnOutboundBytes: 1 << 20})
	w := dialWorker(t, e.URL())
	w.result("state::set", map[string]any{"scope": "s", "key": "big", "value": strings.Repeat("x", value)})
	if got := w.result("state::get", map[string]any{"scope": "s", "key": "big"}); len(got) != value+2 {
		t.Fatalf("value length %d; want %d", len(got), value+2)
	}
	if strings.Contains(e.logs.String(), "closing worker connection: it is not reading its frames") {
		t.Fatal("a reading client was disconnected for one large frame")
	}
}

func TestGlobalOutboundCapShedsTheSlowestReader(t *testing.T) {
	const value = 256 << 10
	e := startEngine(t, Config{MaxConnOutboundBytes: 32 << 20, MaxOutboundBytes: 12 << 20})
	seed := dialWorker(t, e.URL())
	seed.result("state::set", map[string]any{"scope": "s", "key": "big", "value": strings.Repeat("x", value)})
	for h := 0; h < 3; h++ {
		hog := neverReads(t, e.URL())
		for i := 0; i < 200; i++ {
			f, _ := json.Marshal(map[string]any{"type": "invokefunction", "function_id": "state::get",
				"data": map[string]any{"scope": "s", "key": "big"}, "invocation_id": uuid.NewString()})
			if err := hog.WriteMessage(websocket.TextMessage, f); err != nil {
				break
			}
		}
	}
	e.logs.waitFor(t, "the engine's outbound memory cap is reached")
	seed.sync()
	if got := seed.result("state::get", map[string]any{"scope": "s", "key": "big"}); len(got) != value+2 {
		t.Fatalf("value length %d", len(got))
	}
}

func TestOversizeResultFailsTheCallAndKeepsThePublisher(t *testing.T) {
	e := startEngine(t, Config{MaxFrameBytes: 64 << 10})
	owner := dialWorker(t, e.URL())
	caller := dialWorker(t, e.URL())
	owner.register("pub::huge", nil)
	owner.register("pub::small", nil)
	id := caller.invoke("pub::huge")
	in := owner.expect("invokefunction")
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"),
		"function_id": "pub::huge", "result": strings.Repeat("y", 200<<10)})
	res := caller.expect("invocationresult")
	errb := res.obj("error")
	if res.str("invocation_id") != id || errb["code"] != CodeResultTooLarge ||
		!strings.Contains(errb["message"].(string), "bytes; max 65536)") {
		t.Fatalf("caller got %s", res.raw)
	}
	// The publisher is still connected and still owns its functions.
	owner.serve(func(frame) any { return "ok" })
	if got := string(caller.result("pub::small", nil)); got != `"ok"` {
		t.Fatalf("pub::small = %s", got)
	}
}

// Frames queued behind one frame larger than the cap are a backlog of
// their own: a registry's cold load (one state::list answer of tens of MiB)
// must not get the worker disconnected because a call for it arrived
// meanwhile. A second oversize frame behind the first still disconnects
// (a client that asks without reading cannot pile them up).
func TestFramesBehindOneOversizeFrameAreNotABacklog(t *testing.T) {
	const value = 4 << 20
	e := startEngine(t, Config{MaxConnOutboundBytes: 1 << 20})
	w := dialWorker(t, e.URL())
	w.result("state::set", map[string]any{"scope": "s", "key": "big", "value": strings.Repeat("x", value)})
	w.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "state::get",
		"data": map[string]any{"scope": "s", "key": "big"}})
	for range 20 {
		w.send(map[string]any{"type": "ping"})
	}
	got := 0
	for got < 21 {
		if f := w.next(); f.str("type") == "pong" || f.str("type") == "invocationresult" {
			got++
		}
	}
	if strings.Contains(e.logs.String(), "closing worker connection: it is not reading its frames") {
		t.Fatal("a reading client was disconnected for frames queued behind one large frame")
	}
}

// A local process cannot open sockets without end: past MaxConnections
// upgrades get 503 until some close; the in-process connection (the
// standalone registry worker) is never refused.
func TestOpenSocketsAreCapped(t *testing.T) {
	e := startEngine(t, Config{MaxConnections: 2, MaxConnectionsPerClient: 2})
	first := dialWorker(t, e.URL())
	dialWorker(t, e.URL())
	_, resp, err := websocket.DefaultDialer.Dial(e.URL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third socket: err %v, response %v; want 503", err, resp)
	}
	e.logs.waitFor(t, "connections refused: the engine has its maximum of open sockets")
	mem := dialWorkerWith(t, &websocket.Dialer{NetDialContext: e.DialContext}, e.URL())
	mem.result("state::set", map[string]any{"scope": "s", "key": "k", "value": 1})

	first.close()
	deadline := time.Now().Add(waitLimit)
	for {
		ws, _, err := websocket.DefaultDialer.Dial(e.URL(), nil)
		if err == nil {
			_ = ws.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket admitted after one closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
