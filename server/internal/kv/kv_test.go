package kv_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/testutil"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startEngine(t *testing.T) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

func connect(t *testing.T, eng *engine.Engine, name string) *iii.Client {
	t.Helper()
	c := iii.RegisterWorker(eng.URL(), iii.WithName(name), iii.WithLogger(quiet))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Every implementation keeps the same contract: what Commit stores, Get
// and List read back; existed says whether a key held a value; a Delete
// removes; Shared says who else writes.
func TestStoresKeepOneContract(t *testing.T) {
	eng := startEngine(t)
	mem := store.OpenMemory()
	t.Cleanup(func() { _ = mem.Close() })
	registry := connect(t, eng, "registry")
	for _, c := range []struct {
		name   string
		st     kv.Store
		shared bool
	}{
		{"Local", kv.Local(mem), false},
		{"Engine", kv.Engine(eng, registry.WorkerID), false},
		{"III", kv.III(connect(t, eng, "caller"), 5*time.Second), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			scope := "kv-" + strings.ToLower(c.name)
			if c.st.Shared() != c.shared {
				t.Fatalf("Shared() = %v, want %v", c.st.Shared(), c.shared)
			}
			if _, ok, err := c.st.Get(ctx, scope, "a"); ok || err != nil {
				t.Fatalf("Get of a missing key: ok %v, %v", ok, err)
			}
			existed, err := c.st.Commit(ctx,
				kv.Write{Scope: scope, Key: "a", Value: json.RawMessage(`{"n":1}`)},
				kv.Write{Scope: scope, Key: "b", Value: json.RawMessage(`"two"`)})
			if err != nil || len(existed) != 2 || existed[0] || existed[1] {
				t.Fatalf("first commit: %v, %v", existed, err)
			}
			existed, err = c.st.Commit(ctx,
				kv.Write{Scope: scope, Key: "a", Value: json.RawMessage(`{"n":2}`)},
				kv.Write{Scope: scope, Key: "c", Delete: true})
			if err != nil || !existed[0] || existed[1] {
				t.Fatalf("second commit: existed %v (want [true false]), %v", existed, err)
			}
			if v, ok, err := c.st.Get(ctx, scope, "a"); !ok || err != nil || string(v) != `{"n":2}` {
				t.Fatalf("Get a: %s %v %v", v, ok, err)
			}
			// Over iii the writes of one commit land in any order.
			list, err := c.st.List(ctx, scope)
			if err != nil || len(list) != 2 || !slices.ContainsFunc(list, func(v json.RawMessage) bool { return string(v) == `{"n":2}` }) ||
				!slices.ContainsFunc(list, func(v json.RawMessage) bool { return string(v) == `"two"` }) {
				t.Fatalf("List: %s %v", list, err)
			}
			if removed, err := kv.Delete(ctx, c.st, scope, "b"); !removed || err != nil {
				t.Fatalf("Delete b: %v %v", removed, err)
			}
			if removed, err := kv.Delete(ctx, c.st, scope, "b"); removed || err != nil {
				t.Fatalf("Delete b again: %v %v", removed, err)
			}
			if err := kv.Put(ctx, c.st, scope, "p", map[string]int{"x": 1}); err != nil {
				t.Fatal(err)
			}
			if v, _, _ := c.st.Get(ctx, scope, "p"); string(v) != `{"x":1}` {
				t.Fatalf("Put then Get: %s", v)
			}
		})
	}
}

// A commit through Engine fires the state trigger of every key it writes,
// as the same state::set would, and leaves out the writer's own bindings
// that asked for it (skip_own_writes).
func TestEngineCommitFiresStateTriggers(t *testing.T) {
	eng := startEngine(t)
	registry := connect(t, eng, "registry")
	watcher := connect(t, eng, "watcher")
	events := make(chan string, 16)
	if _, err := watcher.RegisterFunction("watch::state", func(_ context.Context, data json.RawMessage) (any, error) {
		var ev struct {
			EventType string `json:"event_type"`
			Key       string `json:"key"`
		}
		_ = json.Unmarshal(data, &ev)
		events <- ev.EventType + " " + ev.Key
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := watcher.RegisterTrigger("watch-state", "state", "watch::state", json.RawMessage(`{"scope":"kv"}`)); err != nil {
		t.Fatal(err)
	}
	own := make(chan string, 16)
	if _, err := registry.RegisterFunction("own::state", func(_ context.Context, data json.RawMessage) (any, error) {
		own <- string(data)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := registry.RegisterTrigger("own-state", "state", "own::state", json.RawMessage(`{"scope":"kv","skip_own_writes":true}`)); err != nil {
		t.Fatal(err)
	}
	st := kv.Engine(eng, registry.WorkerID)
	ctx := context.Background()
	// The engine names the connection in a frame after the handshake.
	testutil.Eventually(t, 10*time.Second, "the registry knows its worker id", func() bool { return registry.WorkerID() != "" })
	// The bindings travel asynchronously: write until the first event arrives.
	deadline := time.Now().Add(10 * time.Second)
	for first := true; ; first = false {
		if _, err := st.Commit(ctx, kv.Write{Scope: "kv", Key: "warm", Value: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			want := "state:updated warm"
			if first {
				want = "state:created warm"
			}
			if ev != want {
				t.Fatalf("event %q, want %q", ev, want)
			}
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no state event from a commit")
			}
			continue
		}
		break
	}
	for len(events) > 0 {
		<-events
	}
	if _, err := st.Commit(ctx, kv.Write{Scope: "kv", Key: "x", Value: json.RawMessage(`"x"`)},
		kv.Write{Scope: "kv", Key: "warm", Delete: true}, kv.Write{Scope: "other", Key: "y", Value: json.RawMessage(`2`)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"state:created x", "state:deleted warm"} {
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event; want %q", want)
		}
	}
	select {
	case got := <-own:
		t.Fatalf("the writer's own skip_own_writes binding got %s", got)
	case got := <-events:
		t.Fatalf("an event outside the bound scope: %q", got)
	case <-time.After(200 * time.Millisecond):
	}
}
