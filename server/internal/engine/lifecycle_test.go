package engine

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCloseReleasesEverything starts and closes engines with live workers,
// pending invocations, queued jobs and state writes, and checks that no
// goroutine survives Close (so embedding programs and tests that start many
// engines do not leak).
func TestCloseReleasesEverything(t *testing.T) {
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	before := settle()
	for i := range 5 {
		e, err := New(Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		owner := dialWorker(t, e.URL())
		owner.register("svc::f", nil)
		caller := dialWorker(t, e.URL())
		caller.result("state::set", map[string]any{"scope": "s", "key": fmt.Sprint(i), "value": strings.Repeat("x", 1000)})
		caller.send(map[string]any{"type": "invokefunction", "invocation_id": fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			"function_id": "svc::f", "data": nil})
		owner.expect("invokefunction") // left unanswered
		caller.send(map[string]any{"type": "invokefunction", "function_id": "svc::f", "data": nil,
			"action": map[string]any{"type": "enqueue", "queue": "q"}})
		owner.send(map[string]any{"type": "registertrigger", "id": "st", "trigger_type": "state", "function_id": "svc::f", "config": map[string]any{}})
		// The queued job may arrive before the pong.
		owner.syncCollect()
		// This write fires the state trigger at a worker that never answers.
		caller.result("state::set", map[string]any{"scope": "s", "key": "fire", "value": 1})
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		owner.waitClosed()
		caller.waitClosed()
	}
	deadline := time.Now().Add(waitLimit)
	for {
		n := settle()
		if n <= before+2 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after closing the engines:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
