package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// The start-up claim of the registry's ids over real processes: the standalone registry cannot lose
// its ids to a client racing its start, and a --url worker that cannot get
// its ids is never ready and exits naming who holds them.

var raceIDs = []string{"skills::list", "skills::resources-read", "skills::publish-bundle", "skills::register",
	"skills::resources-list", "prompts::mcp-get", "skill::fetch", "directory::skills::list", "skills::catalog-list", "prompts::register"}

// raceRegistry dials addr as fast as it can from before the process
// binds it, registers ids on its first connection and returns what the
// engine answered up to its pong.
func raceRegistry(addr string, ids []string, deadline time.Time) ([]map[string]any, error) {
	var nc net.Conn
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			nc = c
			break
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(time.Millisecond) // a racer: retry at once
	}
	d := websocket.Dialer{NetDial: func(string, string) (net.Conn, error) { return nc, nil }, HandshakeTimeout: time.Until(deadline)}
	ws, _, err := d.Dial("ws://"+addr, nil)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	for _, id := range ids {
		if err := ws.WriteJSON(map[string]any{"type": "registerfunction", "id": id}); err != nil {
			return nil, err
		}
	}
	if err := ws.WriteJSON(map[string]any{"type": "ping"}); err != nil {
		return nil, err
	}
	var got []map[string]any
	_ = ws.SetReadDeadline(deadline)
	for {
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			return got, err
		}
		got = append(got, m)
		if m["type"] == "pong" {
			return got, nil
		}
	}
}

func TestStandaloneRegistryWinsTheStartUpRace(t *testing.T) {
	for round := 0; round < 4; round++ {
		addr := testutil.FreeAddr(t)
		type outcome struct {
			frames []map[string]any
			err    error
		}
		raced := make(chan outcome, 1)
		go func() {
			f, err := raceRegistry(addr, raceIDs, time.Now().Add(60*time.Second))
			raced <- outcome{f, err}
		}()
		cmd, out := startSkills(t, "--standalone", "--url", "ws://"+addr, "--data", t.TempDir(), "--mcp-addr", "", "--skills-folder", t.TempDir())
		r := <-raced
		if r.err != nil {
			t.Fatalf("round %d: racer: %v\n%s", round, r.err, out.String())
		}
		refused := map[string]string{}
		for _, f := range r.frames {
			if f["type"] == "registrationrejected" {
				owner, _ := f["owner_worker_id"].(string)
				refused[f["function_id"].(string)] = owner
			}
		}
		for _, id := range raceIDs {
			if owner, ok := refused[id]; !ok || owner == "" {
				t.Fatalf("round %d: the racer was not refused %s in favour of the registry: %v\n%s", round, id, r.frames, out.String())
			}
		}
		// The registry serves its own functions, not the racer's.
		c := iii.RegisterWorker("ws://"+addr, iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: "skills::list", Data: json.RawMessage(`{}`)})
		if err != nil || !strings.Contains(string(res), `"skills"`) {
			t.Fatalf("round %d: skills::list after the race: %s %v\n%s", round, res, err, out.String())
		}
		cancel()
		_ = c.Close()
		if strings.Contains(out.String(), "engine refused a function") {
			t.Fatalf("round %d: the registry was refused a function:\n%s", round, out.String())
		}
		stopSkills(t, cmd)
	}
}

// stopSkills stops a skills process with SIGTERM and waits for it.
func stopSkills(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("skills did not stop cleanly: %v", err)
	}
}

// squat connects a worker named name to url and registers ids on it.
func squat(t *testing.T, url, name string, ids ...string) *iii.Client {
	t.Helper()
	c := iii.RegisterWorker(url, iii.WithName(name), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = c.Close() })
	for _, id := range ids {
		if _, err := c.RegisterFunction(id, func(context.Context, json.RawMessage) (any, error) { return "squatter", nil }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	// A round trip: the engine has processed the registrations.
	if _, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: "engine::workers::identity", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestURLWorkerRefusedItsFunctionsExitsNamingTheHolder(t *testing.T) {
	url := startEngine(t)
	holder := squat(t, url, "squatter", "skills::list", "skills::register")
	if _, err := holder.RegisterTriggerType("skills::on-change", "squatted", acceptBindings{}); err != nil {
		t.Fatal(err)
	}
	// A round trip: the engine has processed the trigger type.
	if _, err := holder.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "engine::workers::identity", Data: json.RawMessage(`{}`), Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	cmd, out := startSkills(t, "--url", url, "--data", t.TempDir(), "--mcp-addr", "", "--claim-timeout", "1s")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(120 * time.Second):
		t.Fatalf("the worker beside a holder of its ids did not exit:\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit = %v; want status 1\n%s", err, out.String())
	}
	logs := out.String()
	for _, want := range []string{
		`skills::list is held by worker ` + holder.WorkerID() + ` (name "squatter")`,
		`skills::register is held by worker ` + holder.WorkerID(),
		`trigger type skills::on-change is provided by worker ` + holder.WorkerID(),
		"skills: not ready:",
		"--claim-timeout",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("output does not say %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "skills ready") {
		t.Errorf("the worker reported ready without its functions:\n%s", logs)
	}
}

func TestURLWorkerGetsItsFunctionsWhenTheHolderLeaves(t *testing.T) {
	url := startEngine(t)
	holder := squat(t, url, "squatter", "skills::list")
	_, out := startSkills(t, "--url", url, "--data", t.TempDir(), "--mcp-addr", "", "--claim-timeout", "5m")
	waitFor(t, out, "another worker holds a function of the registry; not ready")
	_ = holder.Close()
	waitFor(t, out, "skills ready")
	c := squat(t, url, "caller")
	res, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skills::list", Data: json.RawMessage(`{}`), Timeout: 30 * time.Second})
	if err != nil || !strings.Contains(string(res), `"skills"`) {
		t.Fatalf("skills::list once the worker got its ids: %s %v\n%s", res, err, out.String())
	}
}

// waitFor waits until the process output contains s (the deadline only
// bounds a broken run).
func waitFor(t *testing.T, out *testutil.Buffer, s string) {
	t.Helper()
	for deadline := time.Now().Add(120 * time.Second); !strings.Contains(out.String(), s); {
		if time.Now().After(deadline) {
			t.Fatalf("output never said %q:\n%s", s, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// acceptBindings provides a trigger type and accepts every binding.
type acceptBindings struct{}

func (acceptBindings) RegisterTrigger(context.Context, iii.TriggerConfig) error   { return nil }
func (acceptBindings) UnregisterTrigger(context.Context, iii.TriggerConfig) error { return nil }

// Worker mode after an engine restart: an engine the registry cannot
// reserve its ids on may hand them to a client that connects first. The
// worker is then not ready, and /readyz and the log say who holds what,
// until the holder leaves and the worker has its ids again.
func TestURLWorkerIsNotReadyWhileAnotherHoldsItsIDsAfterAnEngineRestart(t *testing.T) {
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	startEngineAt := func() *engine.Engine {
		t.Helper()
		e, err := engine.New(engine.Config{Addr: engineAddr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	first := startEngineAt()
	_, logs := startSkills(t, "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", httpAddr, "--claim-timeout", "5m")
	readyz := "http://" + httpAddr + "/readyz"
	waitForStatus(t, readyz, http.StatusOK, "ready\n", logs)

	// The engine restarts; a squatter is on it before the worker is back
	// (the worker re-dials after about a second). If the worker won the
	// race, restart again.
	_ = first.Close()
	waitForStatus(t, readyz, http.StatusServiceUnavailable, "not ready: not connected to the iii engine\n", logs)
	var holder *iii.Client
	for attempt := 0; holder == nil; attempt++ {
		e := startEngineAt()
		c := squat(t, "ws://"+engineAddr, "squatter", "skills::list")
		if len(c.RefusedFunctions()) == 0 {
			holder = c
			break
		}
		if attempt == 5 {
			t.Fatal("the worker took its ids back before the squatter five times in a row")
		}
		_ = c.Close()
		_ = e.Close()
	}
	want := `not ready: other workers hold 1 of the registry's functions and trigger types: skills::list is held by worker ` +
		holder.WorkerID() + ` (name "squatter")`
	deadline := time.Now().Add(90 * time.Second)
	for {
		status, body := do(t, http.MethodGet, readyz, "", "")
		if status == http.StatusServiceUnavailable && strings.Contains(body, want) {
			break
		}
		if status == http.StatusOK {
			t.Fatalf("/readyz said ready while the squatter holds skills::list:\n%s", logs.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never named the holder (last %d %q); logs:\n%s", status, body, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, logs, `skills::list is held by worker `+holder.WorkerID()+` (name \"squatter\")`)
	// The holder leaves: the worker claims its ids and is ready again.
	_ = holder.Close()
	waitForStatus(t, readyz, http.StatusOK, "ready\n", logs)
}
