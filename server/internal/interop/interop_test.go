// Package interop proves that the official iii-sdk clients (Node from npm,
// Python from PyPI) work unchanged against our embedded engine, next to a
// worker written with our Go client: calls in both directions, a trigger bound
// to a Go-provided trigger type, and state they set and read back.
//
// The Node and Python sides are small scripts in node/ and python/. Their
// dependencies are installed by `make test` (mk/interop.mk); when they are
// missing, the tests skip, unless INTEROP_REQUIRED=1 makes that a failure.
package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/engine"
)

// goSide is the Go worker the scripts talk to.
type goSide struct {
	client   *iii.Client
	done     chan map[string]any
	bindings chan iii.TriggerConfig
}

type tickProvider struct{ bindings chan iii.TriggerConfig }

func (p tickProvider) RegisterTrigger(_ context.Context, cfg iii.TriggerConfig) error {
	p.bindings <- cfg
	return nil
}

func (p tickProvider) UnregisterTrigger(context.Context, iii.TriggerConfig) error { return nil }

func startGoSide(t *testing.T) (*goSide, string) {
	t.Helper()
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })

	g := &goSide{
		client:   iii.RegisterWorker(eng.URL(), iii.WithName("interop-go")),
		done:     make(chan map[string]any, 4),
		bindings: make(chan iii.TriggerConfig, 16),
	}
	t.Cleanup(func() { _ = g.client.Close() })
	mustRegister(t, g.client, "go::echo", func(_ context.Context, data json.RawMessage) (any, error) {
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			return nil, err
		}
		return map[string]any{"from": "go", "got": got}, nil
	})
	mustRegister(t, g.client, "go::done", func(_ context.Context, data json.RawMessage) (any, error) {
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			return nil, err
		}
		g.done <- got
		return map[string]any{"ok": true}, nil
	})
	if _, err := g.client.RegisterTriggerType("go::ticks", "Ticks fired by the Go side of the interop test", tickProvider{g.bindings}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.client.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	return g, eng.URL()
}

func mustRegister(t *testing.T, c *iii.Client, id string, h iii.Handler) {
	t.Helper()
	if _, err := c.RegisterFunction(id, h); err != nil {
		t.Fatal(err)
	}
}

func TestOfficialNodeClient(t *testing.T) {
	dir, _ := filepath.Abs("node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "iii-sdk")); err != nil {
		missing(t, "node_modules of "+dir+" (run: npm ci --prefix "+dir+")")
	}
	runScript(t, "node", exec.Command("node", filepath.Join(dir, "interop.mjs")))
}

func TestOfficialPythonClient(t *testing.T) {
	python := os.Getenv("INTEROP_PYTHON")
	if python == "" {
		python, _ = filepath.Abs(filepath.Join("..", "..", "..", ".venv", "bin", "python"))
	}
	if _, err := os.Stat(python); err != nil {
		missing(t, "a Python with iii-sdk at "+python+" (run: make venv, or set INTEROP_PYTHON)")
	}
	script, _ := filepath.Abs(filepath.Join("python", "interop.py"))
	runScript(t, "python", exec.Command(python, script))
}

func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("INTEROP_REQUIRED") == "1" {
		t.Fatalf("interop dependency missing: %s", what)
	}
	t.Skipf("interop dependency missing: %s", what)
}

// runScript plays the Go side of one official client's script.
func runScript(t *testing.T, runtime string, cmd *exec.Cmd) {
	g, url := startGoSide(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cmd.Env = append(os.Environ(), "III_URL="+url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	steps := make(chan string, 8)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct{ Step string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Step != "" {
				steps <- line.Step
			}
		}
	}()
	go func() { wg.Wait(); exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("%s script stderr:\n%s", runtime, stderr.String())
		}
	}()

	expectStep(ctx, t, steps, exited, "ready")

	// Call the function the script registered.
	out, err := g.client.Trigger(ctx, iii.TriggerRequest{FunctionID: runtime + "::echo", Data: json.RawMessage(`{"msg":"hi from go"}`)})
	if err != nil {
		t.Fatalf("calling %s::echo: %v", runtime, err)
	}
	var echoed struct {
		From string         `json:"from"`
		Got  map[string]any `json:"got"`
	}
	if err := json.Unmarshal(out, &echoed); err != nil || echoed.From != runtime || echoed.Got["msg"] != "hi from go" {
		t.Fatalf("%s::echo answered %s (decode error %v)", runtime, out, err)
	}

	// The script bound runtime::on-tick to go::ticks; fire it.
	binding := waitBinding(ctx, t, g.bindings, runtime+"::on-tick")
	if string(binding.Config) == "" || !strings.Contains(string(binding.Config), runtime) {
		t.Fatalf("binding config = %s, want the script's label %q", binding.Config, runtime)
	}
	if err := g.client.FireTrigger(ctx, binding, json.RawMessage(`{"tick":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-g.done:
		if got["runtime"] != runtime || got["tick"] != float64(1) {
			t.Fatalf("go::done got %v", got)
		}
	case err := <-exited:
		t.Fatalf("%s script exited before reporting the tick: %v", runtime, err)
	case <-ctx.Done():
		t.Fatal("timed out waiting for the script to report the tick")
	}
	expectStep(ctx, t, steps, exited, "done")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("%s script failed: %v", runtime, err)
		}
	case <-ctx.Done():
		t.Fatal("timed out waiting for the script to exit")
	}
}

func expectStep(ctx context.Context, t *testing.T, steps <-chan string, exited <-chan error, want string) {
	t.Helper()
	select {
	case got := <-steps:
		if got != want {
			t.Fatalf("script step = %q, want %q", got, want)
		}
	case err := <-exited:
		t.Fatalf("script exited before step %q: %v", want, errors.Join(err))
	case <-ctx.Done():
		t.Fatalf("timed out waiting for step %q", want)
	}
}

func waitBinding(ctx context.Context, t *testing.T, bindings <-chan iii.TriggerConfig, functionID string) iii.TriggerConfig {
	t.Helper()
	for {
		select {
		case b := <-bindings:
			if b.FunctionID == functionID {
				return b
			}
		case <-ctx.Done():
			t.Fatalf("no binding for %s reached the provider", functionID)
		}
	}
}
