package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// --standalone --engine-only hosts workers but registers no registry
// function: a worker connects, registers its own function and another
// worker calls it, while skills::list is not found.
func TestStandaloneEngineOnly(t *testing.T) {
	url := "ws://" + testutil.FreeAddr(t)
	cmd, out := startSkills(t, "--standalone", "--engine-only", "--url", url, "--data", t.TempDir(), "--mcp-addr", "")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	connect := func(name string) *iii.Client {
		c := iii.RegisterWorker(url, iii.WithName(name), iii.WithLogger(quiet))
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Connect(ctx); err != nil {
			t.Fatalf("%s cannot connect to the engine-only process: %v\n%s", name, err, out.String())
		}
		return c
	}
	provider := connect("engine-only-provider")
	if _, err := provider.RegisterFunction("enginetest::echo", func(_ context.Context, data json.RawMessage) (any, error) {
		var in struct{ Say string }
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, err
		}
		return map[string]string{"echo": in.Say}, nil
	}); err != nil {
		t.Fatal(err)
	}
	caller := connect("engine-only-caller")

	// The registration travels over the provider's socket; poll until the
	// engine routes the call.
	var got struct{ Echo string }
	for {
		raw, err := caller.Trigger(ctx, iii.TriggerRequest{FunctionID: "enginetest::echo",
			Data: json.RawMessage(`{"say":"hi"}`), Timeout: 5 * time.Second})
		if err == nil {
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("enginetest::echo returned %s: %v", raw, err)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("enginetest::echo never answered: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Echo != "hi" {
		t.Fatalf("enginetest::echo answered %+v, want echo hi", got)
	}

	// No registry worker: its functions are not there at all.
	for _, fn := range []string{"skills::list", "prompts::list", "skills::resources-read"} {
		_, err := caller.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: json.RawMessage(`{}`), Timeout: 5 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s on an engine-only process: err %v, want Function %s not found", fn, err, fn)
		}
	}
	raw, err := caller.Trigger(ctx, iii.TriggerRequest{FunctionID: "engine::functions::list",
		Data: json.RawMessage(`{}`), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Functions []struct {
			FunctionID string `json:"function_id"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("engine::functions::list: %s: %v", raw, err)
	}
	var ids []string
	for _, f := range list.Functions {
		ids = append(ids, f.FunctionID)
		if strings.HasPrefix(f.FunctionID, "skills::") || strings.HasPrefix(f.FunctionID, "prompts::") {
			t.Errorf("engine-only process lists the registry function %s", f.FunctionID)
		}
	}
	if !strings.Contains(strings.Join(ids, " "), "enginetest::echo") {
		t.Errorf("engine::functions::list %v omits the worker's own enginetest::echo", ids)
	}

	// SIGINT stops it cleanly.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("engine-only process exited with %v on SIGINT:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "embedded engine only") {
		t.Errorf("the log does not say the engine runs alone:\n%s", out.String())
	}
}
