package main

// The trust-boundary attacks on the standalone registry's own engine,
// with the exact frames of the attack pass, over real sockets against the
// skills binary: a flood of 15 MiB calls beside a client that keeps asking
// for every registry id; a trigger binding that would make the registry
// unregister every new skill; a state::set that rewrites an immutable
// version; a worker that calls itself "skills". Each must fail, the
// registry stay connected and ready, and what was stored survive.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// registryFunctionIDs lists the functions the registry serves, as an
// attacker finds them (engine::functions::list, internal ones included).
func registryFunctionIDs(t *testing.T, c *iii.Client) []string {
	t.Helper()
	raw, err := trigger(t, c, iii.FnListFunctions, map[string]any{"include_internal": true})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Functions []iii.FunctionInfo `json:"functions"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range list.Functions {
		if f.WorkerName == "skills" {
			ids = append(ids, f.FunctionID)
		}
	}
	if len(ids) < 20 {
		t.Fatalf("the registry serves %d functions: %v; want its whole surface", len(ids), ids)
	}
	return ids
}

// claimer is the attack's waiting client: every 25 ms it sends
// registerfunction for each id, and it would answer every invocation with
// forged content. It counts what the engine answered.
type claimer struct {
	accepted, rejected atomic.Int64
	reasons            sync.Map
	invoked            atomic.Int64
	stop               chan struct{}
	done               chan struct{}
}

func startClaimer(t *testing.T, url string, ids []string) *claimer {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &claimer{stop: make(chan struct{}), done: make(chan struct{})}
	var wmu sync.Mutex
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return ws.WriteJSON(v)
	}
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m struct {
				Type, InvocationID, FunctionID, Description string
			}
			var raw map[string]any
			_ = json.Unmarshal(data, &raw)
			m.Type, _ = raw["type"].(string)
			m.InvocationID, _ = raw["invocation_id"].(string)
			m.FunctionID, _ = raw["function_id"].(string)
			m.Description, _ = raw["description"].(string)
			switch m.Type {
			case "registrationrejected":
				c.rejected.Add(1)
				c.reasons.Store(m.Description, true)
			case "invokefunction":
				c.invoked.Add(1)
				_ = write(map[string]any{"type": "invocationresult", "invocation_id": m.InvocationID, "function_id": m.FunctionID,
					"result": map[string]any{"resources": []any{map[string]any{"name": "FORGED", "uri": "iii://forged"}},
						"contents": []any{map[string]any{"uri": "iii://demo", "text": "ATTACKER CONTENT"}},
						"skills":   []any{map[string]any{"id": "FORGED"}}}})
			}
		}
	}()
	go func() {
		defer close(c.done)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, id := range ids {
				if write(map[string]any{"type": "registerfunction", "id": id}) != nil {
					return
				}
			}
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

// floodSockets sends frames invokefunction frames of 15 MiB on each of
// sockets connections, back to back, and reads what comes back; it
// returns the answers and too_many_invocations refusals it counted.
func floodSockets(t *testing.T, url, functionID string, sockets, frames int) (answered, refused int64) {
	t.Helper()
	pad := strings.Repeat("A", 15_728_640)
	var a, r atomic.Int64
	var wg sync.WaitGroup
	for range sockets {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ws.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			go func() {
				for range frames {
					frame := `{"type":"invokefunction","invocation_id":"` + uuid.NewString() + `","function_id":"` + functionID +
						`","data":{"pad":"` + pad + `"}}`
					if ws.WriteMessage(websocket.TextMessage, []byte(frame)) != nil {
						return
					}
				}
			}()
			_ = ws.SetReadDeadline(time.Now().Add(5 * time.Minute)) // bounds a broken run only
			for got := 0; got < frames; got++ {
				_, data, err := ws.ReadMessage()
				if err != nil {
					t.Errorf("flood socket: %v", err)
					return
				}
				switch {
				case strings.Contains(string(data), `"code":"too_many_invocations"`):
					r.Add(1)
				case strings.Contains(string(data), `"error"`):
					t.Errorf("flood call answered with another error: %.300s", data)
				default:
					a.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return a.Load(), r.Load()
}

func TestAttackFloodAndClaimerCannotTakeTheRegistry(t *testing.T) {
	// A skills folder: the directory surface (directory::*) is served too.
	s := startSPServer(t, "", "--skills-folder", "../../../examples/skills")
	httpBase := strings.TrimSuffix(s.rpcURL, "/rpc")
	victim := connectAttacker(t, s.url) // an ordinary publisher
	if _, err := trigger(t, victim, rules.FnSkillsRegister, map[string]any{"id": "victim/doc", "skill": "# Victim doc\n\nThe real text."}); err != nil {
		t.Fatal(err)
	}
	ids := registryFunctionIDs(t, victim)
	cl := startClaimer(t, s.url, ids)

	// Watch /readyz and the registry's answers for the whole attack.
	stop := make(chan struct{})
	var notReady, checks, forged, failed atomic.Int64
	var lastNotReady atomic.Value
	watch := make(chan struct{})
	go func() {
		defer close(watch)
		for {
			select {
			case <-stop:
				return
			default:
			}
			checks.Add(1)
			if code, body := do(t, http.MethodGet, httpBase+"/readyz", "", ""); code != http.StatusOK {
				notReady.Add(1)
				lastNotReady.Store(body)
			}
			out, err := triggerTB(t, victim, rules.FnSkillFetch, map[string]any{"uri": "iii://victim/doc"})
			switch {
			case err != nil:
				failed.Add(1)
			case strings.Contains(string(out), "ATTACKER") || strings.Contains(string(out), "FORGED"):
				forged.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	idle := testutil.ProcStatus(t, s.cmd.Process.Pid, "VmRSS")
	start := time.Now()
	answered, refused := floodSockets(t, s.url, "directory::engine::workers::list", 4, 8)
	took := time.Since(start)
	t.Logf("server memory: %d MiB before the flood, peak %d MiB (VmHWM, measured, not asserted)",
		idle>>20, testutil.ProcStatus(t, s.cmd.Process.Pid, "VmHWM")>>20)
	close(cl.stop)
	<-cl.done
	close(stop)
	<-watch
	t.Logf("flood: %d answered, %d refused in %v; /readyz checked %d times (%d not ready), honest fetches: %d failed, %d forged; claimer: %d refusals, %d invocations",
		answered, refused, took.Round(time.Millisecond), checks.Load(), notReady.Load(), failed.Load(), forged.Load(), cl.rejected.Load(), cl.invoked.Load())

	if notReady.Load() > 0 {
		t.Errorf("/readyz said not ready %d times during the flood (last: %v)", notReady.Load(), lastNotReady.Load())
	}
	if failed.Load() > 0 || forged.Load() > 0 {
		t.Errorf("honest fetches during the attack: %d failed, %d served forged content", failed.Load(), forged.Load())
	}
	if cl.invoked.Load() > 0 {
		t.Errorf("the claimer was sent %d invocations: it held a registry function", cl.invoked.Load())
	}
	reserved := false
	cl.reasons.Range(func(k, _ any) bool {
		reserved = reserved || strings.Contains(k.(string), "belongs to the worker running inside this engine's process")
		return true
	})
	if cl.rejected.Load() == 0 || !reserved {
		t.Errorf("the claimer's registrations were not refused as reserved (%d refusals)", cl.rejected.Load())
	}
	logs := s.logs.String()
	for _, bad := range []string{"closing worker connection", "another worker holds a function of the registry", "skills cannot serve"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the server logged %q during the attack:\n%s", bad, logs)
		}
	}
	if s.cmd.ProcessState != nil {
		t.Fatalf("the server exited: %v\n%s", s.cmd.ProcessState, logs)
	}
	// After the attack the registry still serves its own surfaces.
	out, err := trigger(t, victim, rules.FnSkillsList, map[string]any{})
	if err != nil || strings.Contains(string(out), "FORGED") || !strings.Contains(string(out), "victim/doc") {
		t.Fatalf("skills::list after the attack: %.300s %v", out, err)
	}
}

// The deputy: a client binds skills::on-change to skills::unregister (and
// prompts::on-change to prompts::unregister) and fires the event on
// demand with skills::rollback. The fire runs as that client, whom the
// registry's ownership rules refuse: every skill and prompt stays.
func TestAttackTriggerCannotMakeTheRegistryUnregister(t *testing.T) {
	s := startSPServer(t, "")
	victim := connectAttacker(t, s.url)
	register := func(fn string, payload map[string]any) {
		t.Helper()
		if _, err := trigger(t, victim, fn, payload); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
	}
	register(rules.FnSkillsRegister, map[string]any{"id": "victim/doc", "skill": "# Victim doc"})

	// An observer hears every change, so the test knows the events fired.
	events := make(chan string, 64)
	obs := connectAttacker(t, s.url)
	for _, typ := range []string{rules.TriggerSkillsOnChange, rules.TriggerPromptsOnChange} {
		fn := "observer::" + strings.ReplaceAll(typ, "::", "-")
		if _, err := obs.RegisterFunction(fn, func(_ context.Context, data json.RawMessage) (any, error) {
			events <- string(data)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := obs.RegisterTrigger("zz-observer-"+typ, typ, fn, nil); err != nil {
			t.Fatal(err)
		}
	}

	ws, _, err := websocket.DefaultDialer.Dial(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, f := range []string{
		`{"type":"registertrigger","id":"atk-t3","trigger_type":"skills::on-change","function_id":"skills::unregister","config":{}}`,
		`{"type":"registertrigger","id":"atk-t4","trigger_type":"prompts::on-change","function_id":"prompts::unregister","config":{}}`,
		`{"type":"invokefunction","invocation_id":"` + uuid.NewString() + `","function_id":"skills::rollback","data":{"id":"victim/doc","version":1}}`,
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	// New registrations after the binding, as in the attack.
	time.Sleep(200 * time.Millisecond) // the bindings reach the registry (the attack waits longer)
	register(rules.FnSkillsRegister, map[string]any{"id": "victim/new", "skill": "# New"})
	register(rules.FnPromptsRegister, map[string]any{"name": "victim-review", "description": "review", "function_id": "victim::review"})
	seen := map[string]bool{}
	for deadline := time.After(60 * time.Second); !(seen["victim/new"] && seen["victim-review"]); {
		select {
		case ev := <-events:
			for _, id := range []string{"victim/new", "victim-review"} {
				if strings.Contains(ev, `"`+id+`"`) && strings.Contains(ev, `"register"`) {
					seen[id] = true
				}
			}
		case <-deadline:
			t.Fatalf("the registrations were never announced: %v", seen)
		}
	}
	// The deputy's unregister would follow within milliseconds; give it
	// ample time (a delay, not a timing assertion), then check.
	time.Sleep(time.Second)
	for len(events) > 0 {
		if ev := <-events; strings.Contains(ev, `"unregister"`) {
			t.Errorf("an unregister was announced after the deputy's binding: %s", ev)
		}
	}
	for _, id := range []string{"victim/doc", "victim/new"} {
		if out, err := trigger(t, victim, rules.FnSkillFetch, map[string]any{"uri": "iii://" + id}); err != nil || !strings.Contains(string(out), "#") {
			t.Errorf("%s after the deputy's binding: %v %s", id, err, out)
		}
	}
	out, err := trigger(t, victim, rules.FnPromptsList, map[string]any{})
	if err != nil || !strings.Contains(string(out), "victim-review") {
		t.Errorf("prompts after the deputy's binding: %s %v", out, err)
	}
}

// An immutable version cannot be rewritten with state::set on
// skills.versions (the attack's frame): refused naming the scope; after
// a restart iii://victim/doc@1 serves what was published.
func TestAttackStateCannotRewriteVersions(t *testing.T) {
	s := startSPServer(t, "")
	victim := connectAttacker(t, s.url)
	if _, err := trigger(t, victim, rules.FnSkillsRegister, map[string]any{"id": "victim/doc", "skill": "# Victim v1"}); err != nil {
		t.Fatal(err)
	}
	attacker := s.attacker()
	raw, err := trigger(t, attacker, iii.StateList, map[string]any{"scope": "skills.versions"})
	if err != nil {
		t.Fatalf("reading skills.versions (reads stay allowed): %v", err)
	}
	var rows []map[string]any
	_ = json.Unmarshal(raw, &rows)
	key := "0000000000000004"
	for _, r := range rows {
		if k, ok := r["key"].(string); ok {
			key = k
		}
	}
	for _, fn := range []string{iii.StateSet, iii.StateDelete} {
		_, err := trigger(t, attacker, fn, map[string]any{"scope": "skills.versions", "key": key,
			"value": map[string]any{"content": "# ATTACKER", "sha256": "unchanged"}})
		var ie *iii.InvocationError
		if !errors.As(err, &ie) || ie.Code != rules.CodeForbidden || !strings.Contains(ie.Message, `scope "skills.versions" is private`) {
			t.Fatalf("%s on skills.versions: %v; want forbidden naming the scope", fn, err)
		}
	}
	s.restart()
	victim = connectAttacker(t, s.url)
	out, err := trigger(t, victim, rules.FnSkillFetch, map[string]any{"uri": "iii://victim/doc@1"})
	if err != nil || !strings.Contains(string(out), "Victim v1") || strings.Contains(string(out), "ATTACKER") {
		t.Fatalf("iii://victim/doc@1 after the attack and a restart: %s %v", out, err)
	}
}

// A worker that calls itself "skills" is not listed as the registry: the
// engine refuses it the name, and the only worker listed as "skills" is
// the registry's own connection.
func TestAttackWorkerCannotPassForTheRegistry(t *testing.T) {
	s := startSPServer(t, "")
	impostor := iii.New(s.url, iii.WithName("skills"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := impostor.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	waitFor(t, s.logs, "worker name refused")
	raw, err := trigger(t, impostor, iii.FnListWorkers, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	_ = json.Unmarshal(raw, &list)
	named := 0
	for _, w := range list.Workers {
		if w.StringName() == "skills" {
			named++
			if w.StringID() == impostor.WorkerID() {
				t.Fatalf("the impostor is listed as %q", w.StringName())
			}
		}
	}
	if named != 1 {
		t.Fatalf("%d workers listed as \"skills\"; want the registry alone: %s", named, raw)
	}
}
