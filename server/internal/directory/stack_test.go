package directory

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stack is the standalone shape over real loopback sockets: an embedded
// engine, the registry worker and the directory surface on one client
// (as `skills --standalone --skills-folder …` runs them), the folders
// watched, and a caller client.
type stack struct {
	engine *engine.Engine
	cat    *catalog.Catalog
	set    *fsource.Set
	dir    *Directory
	reg    *core.Local
	w      *worker.Worker
	wc     *iii.Client
	caller *iii.Client
}

func startStack(tb testing.TB, folders []string, cfg Config, opts Options) *stack {
	tb.Helper()
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", DataDir: tb.TempDir(), Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &stack{engine: eng, cat: catalog.New()}
	tb.Cleanup(func() { _ = eng.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	s.wc = iii.RegisterWorker(eng.URL(), iii.WithName(worker.Name), iii.WithLogger(quiet))
	s.reg = core.New(s.wc, core.DefaultConfig(), core.Options{Logger: quiet, Catalog: s.cat,
		State: kv.III(s.wc, core.DefaultConfig().StateTimeout())})
	tb.Cleanup(s.reg.Close)
	s.w = worker.New(s.wc, s.reg, quiet)
	if err := s.w.Register(); err != nil {
		tb.Fatal(err)
	}
	s.set, err = fsource.Open(fsource.Options{Folders: folders, Catalog: s.cat, Logger: quiet, Watch: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.set.Close)
	if cfg.DownloadTimeout == 0 {
		cfg.DownloadTimeout = 20 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s.dir = New(s.wc, s.set, s.cat, cfg, opts)
	if err := s.dir.Register(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.dir.Close)
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if err := s.wc.Connect(cctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.wc.Close() })
	s.reg.Start(ctx)
	s.caller = iii.RegisterWorker(eng.URL(), iii.WithName("caller"), iii.WithLogger(quiet))
	if err := s.caller.Connect(cctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.caller.Close() })
	return s
}

// call triggers fn and returns the raw result.
func (s *stack) call(fn string, payload any) (json.RawMessage, error) {
	if payload == nil {
		payload = struct{}{}
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return s.caller.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 30 * time.Second})
}

func (s *stack) must(tb testing.TB, fn string, payload any, out any) json.RawMessage {
	tb.Helper()
	raw, err := s.call(fn, payload)
	if err != nil {
		tb.Fatalf("%s(%v): %v", fn, payload, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			tb.Fatalf("%s: decode %s: %v", fn, raw, err)
		}
	}
	return raw
}

// text calls fn and decodes a JSON string result.
func (s *stack) text(tb testing.TB, fn string, payload any) string {
	tb.Helper()
	var out string
	s.must(tb, fn, payload, &out)
	return out
}

func (s *stack) fails(tb testing.TB, fn string, payload any, want string) {
	tb.Helper()
	_, err := s.call(fn, payload)
	if err == nil || !strings.Contains(err.Error(), want) {
		tb.Fatalf("%s(%v) error = %v, want one containing %q", fn, payload, err, want)
	}
}

// refused is fails for a verdict: the error carries code and a message
// containing want.
func (s *stack) refused(tb testing.TB, fn string, payload any, code, want string) {
	tb.Helper()
	_, err := s.call(fn, payload)
	if got, msg := verdict(err); got != code || !strings.Contains(msg, want) {
		tb.Fatalf("%s(%v) error = %v, want code %s and a message containing %q", fn, payload, err, code, want)
	}
}

// sink registers a function bound to trigger type tt and returns the
// payloads it receives (without the engine's _caller_worker_id).
func (s *stack) sink(tb testing.TB, tt string, bound func() int) <-chan string {
	tb.Helper()
	ch := make(chan string, 256)
	fn := "sink::" + strings.NewReplacer("::", "-").Replace(tt)
	if _, err := s.caller.RegisterFunction(fn, func(_ context.Context, data json.RawMessage) (any, error) {
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		delete(m, "_caller_worker_id")
		b, _ := json.Marshal(m)
		ch <- string(b)
		return nil, nil
	}); err != nil {
		tb.Fatal(err)
	}
	if err := s.caller.RegisterTrigger(uuid.NewString(), tt, fn, json.RawMessage(`{}`)); err != nil {
		tb.Fatal(err)
	}
	testutil.Eventually(tb, 5*time.Second, "the subscription to "+tt+" is bound", func() bool { return bound() >= 1 })
	return ch
}

// expect waits until every payload in wants arrived on ch, in any order
// (the engine delivers separate invocations concurrently), skipping
// others.
func expect(tb testing.TB, ch <-chan string, wants ...string) {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	missing := map[string]bool{}
	for _, w := range wants {
		missing[w] = true
	}
	var seen []string
	for len(missing) > 0 {
		select {
		case got := <-ch:
			delete(missing, got)
			seen = append(seen, got)
		case <-deadline:
			tb.Fatalf("no event %v; saw %v", missing, seen)
		}
	}
}

func put(tb testing.TB, root, rel, content string) {
	tb.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
