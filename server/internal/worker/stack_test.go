package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/kv"
)

// stack is an embedded engine with the registry worker and a caller client
// on it, all over real loopback sockets, as in standalone mode.
type stack struct {
	engine *engine.Engine
	reg    *core.Local
	state  kv.Store
	worker *Worker
	wc     *iii.Client // the worker's client
	caller *iii.Client
}

// Options are the registry's options a test may change.
type Options = core.Options

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startStack starts the stack; opts may change the worker's Options once
// the engine is up.
func startStack(tb testing.TB, dataDir string, opts ...func(*stack, *Options)) *stack {
	tb.Helper()
	return startStackOn(tb, engine.Config{DataDir: dataDir}, nil, opts...)
}

// startStackOn is startStack on an engine configured by cfg; clientOpts go
// to the worker's and the caller's clients (a token, say).
func startStackOn(tb testing.TB, cfg engine.Config, clientOpts []iii.Option, opts ...func(*stack, *Options)) *stack {
	tb.Helper()
	cfg.Addr, cfg.Logger = "127.0.0.1:0", quiet
	eng, err := engine.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &stack{engine: eng}
	// The worker keeps ctx for its reloads after (re)connects, so it lives
	// as long as the stack; only the connects below are bounded.
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	connectCtx, cancelConnect := context.WithTimeout(ctx, 10*time.Second)
	defer cancelConnect()
	// New, not RegisterWorker, as in cmd/skills: the first handshake then
	// carries every function, so no test call meets a half-registered
	// registry.
	s.wc = iii.New(eng.URL(), append([]iii.Option{iii.WithName(Name), iii.WithLogger(quiet)}, clientOpts...)...)
	// Without an option, the worker keeps its state through state::*
	// calls, as against any engine (standalone: the standalone option).
	// The ownership refusals would each wait the full grace for a live owner.
	o := Options{Logger: quiet, State: kv.III(s.wc, core.DefaultConfig().StateTimeout()), OwnerGrace: 100 * time.Millisecond}
	for _, f := range opts {
		f(s, &o)
	}
	s.state = o.State
	s.reg = core.New(s.wc, core.DefaultConfig(), o)
	tb.Cleanup(s.reg.Close)
	s.worker = New(s.wc, s.reg, quiet)
	if err := s.worker.Register(); err != nil {
		tb.Fatal(err)
	}
	if err := s.wc.Connect(connectCtx); err != nil {
		tb.Fatal(err)
	}
	s.reg.Start(ctx)
	s.caller = iii.RegisterWorker(eng.URL(), append([]iii.Option{iii.WithName("caller"), iii.WithLogger(quiet)}, clientOpts...)...)
	if err := s.caller.Connect(connectCtx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	// Connect returns once the handshake is sent, not once the engine has
	// routed it: wait until the registry answers, as a real client does,
	// or a test's first call can meet function_not_found on a busy machine.
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := s.call(tb, rules.FnSkillsList, nil, nil)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "function_not_found") || time.Now().After(deadline) {
			tb.Fatalf("the registry's functions are not callable: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// standalone keeps the worker's state in the engine's store in-process,
// as the standalone binary does (kv.Engine).
func standalone(s *stack, o *Options) { o.State = kv.Engine(s.engine, s.wc.WorkerID) }

func (s *stack) stop() {
	_ = s.caller.Close()
	_ = s.wc.Close()
	_ = s.engine.Close()
}

// call triggers fn and decodes the result into out (when non-nil).
func (s *stack) call(tb testing.TB, fn string, payload any, out any) error {
	tb.Helper()
	if payload == nil {
		payload = struct{}{} // sent as {}, like an absent payload
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	raw, err := s.caller.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			tb.Fatalf("%s: decode %s: %v", fn, raw, err)
		}
	}
	return nil
}

func (s *stack) mustCall(tb testing.TB, fn string, payload any, out any) {
	tb.Helper()
	if err := s.call(tb, fn, payload, out); err != nil {
		tb.Fatalf("%s(%v): %v", fn, payload, err)
	}
}
