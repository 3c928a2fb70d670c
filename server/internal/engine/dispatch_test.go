package engine

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// A client that sends MaxInFlightPerConn calls to a worker function and
// never reads gets only a window of them computed; the rest wait in the
// engine and are dropped, never computed, when it leaves. A well-behaved
// client is served meanwhile.
func TestNeverReadingCallerCannotQueueWorkOnAWorker(t *testing.T) {
	const answer = 1 << 20
	e := startEngine(t, Config{MaxConnOutboundBytes: 512 << 20, MaxOutboundBytes: 1 << 30})
	worker := dialWorker(t, e.URL())
	worker.register("big::get", nil)
	var received atomic.Int64
	body := strings.Repeat("x", answer)
	worker.serve(func(frame) any { received.Add(1); return body })

	hog := neverReads(t, e.URL())
	for range DefaultMaxInFlightPerConn {
		f, _ := json.Marshal(map[string]any{"type": "invokefunction", "function_id": "big::get",
			"data": map[string]any{}, "invocation_id": uuid.NewString()})
		if err := hog.WriteMessage(websocket.TextMessage, f); err != nil {
			t.Fatalf("hog write: %v", err)
		}
	}
	hc := findConn(t, e, func(c *conn) bool { return c.id != worker.id })

	// Settled: every call is either answered or held, none is out.
	deadline := time.Now().Add(waitLimit)
	for {
		hc.hmu.Lock()
		held, sent := len(hc.held), hc.sent
		hc.hmu.Unlock()
		if sent == 0 && int(received.Load())+held == DefaultMaxInFlightPerConn {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls did not settle: %d computed, %d held, %d out", received.Load(), held, sent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := received.Load(); n >= DefaultMaxInFlightPerConn/2 {
		t.Fatalf("the worker computed %d of the never-reading client's %d calls; want only a window of them", n, DefaultMaxInFlightPerConn)
	}

	client := dialWorker(t, e.URL())
	if got := client.result("big::get", map[string]any{}); len(got) != answer+2 {
		t.Fatalf("well-behaved client got %d bytes", len(got))
	}

	computed := received.Load()
	_ = hog.Close()
	deadline = time.Now().Add(waitLimit)
	for {
		e.pmu.Lock()
		n := len(e.pending)
		e.pmu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d invocations still pending after the never-reading client left", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := received.Load(); n != computed {
		t.Fatalf("the worker computed %d calls; want %d (the held calls of a client that left are dropped)", n, computed)
	}
}

// A client may have more calls in flight than the window: they all get
// their answers, in the order the worker gives them.
func TestCallsBeyondTheWindowAreHeldNotRefused(t *testing.T) {
	e := startEngine(t, Config{})
	worker := dialWorker(t, e.URL())
	worker.register("echo", nil)
	worker.serve(func(f frame) any { return f.obj("data")["n"] })

	client := dialWorker(t, e.URL())
	const calls = 4 * callWindow
	ids := make(map[string]float64, calls)
	for i := range calls {
		id := uuid.NewString()
		ids[id] = float64(i)
		client.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "echo",
			"data": map[string]any{"n": i}})
	}
	for range calls {
		f := client.expect("invocationresult")
		want, ok := ids[f.str("invocation_id")]
		if !ok || f.m["error"] != nil || f.m["result"] != want {
			t.Fatalf("unexpected answer %s", f.raw)
		}
		delete(ids, f.str("invocation_id"))
	}
}

// findConn returns the engine's connection that matches.
func findConn(t *testing.T, e *testEngine, match func(*conn) bool) *conn {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		e.mu.RLock()
		var found *conn
		for _, c := range e.conns {
			if match(c) {
				found = c
			}
		}
		e.mu.RUnlock()
		if found != nil {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatal("connection not found")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
