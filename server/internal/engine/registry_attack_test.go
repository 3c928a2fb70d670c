package engine

// Attacks on the worker that runs inside the engine's process (the
// standalone registry) and on the workers beside it, over real sockets:
// a flood of large calls, a client waiting to take its ids, triggers that
// would run as the registry, writes into its private state, a name that
// passes for it, one client holding every socket. Each asserts that the
// attack fails and that honest traffic is still answered.

import (
	"context"
	"encoding/json"
	"fmt"
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
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// inProcessWorker is a worker on the engine's in-process connection, as
// skills --standalone runs its registry: name "skills", the functions
// given (each answers its payload's size), connected.
func inProcessWorker(t testing.TB, e *testEngine, name string, ids ...string) *iii.Client {
	t.Helper()
	c := iii.New(e.URL(), iii.WithName(name), iii.WithLogger(quietLog), iii.WithNetDialer(e.DialContext))
	for _, id := range ids {
		if _, err := c.RegisterFunction(id, sizeHandler); err != nil {
			t.Fatal(err)
		}
	}
	connectClient(t, c)
	return c
}

// socketWorker is the same over a socket (an honest remote publisher).
func socketWorker(t testing.TB, url, name string, ids ...string) *iii.Client {
	t.Helper()
	c := iii.New(url, iii.WithName(name), iii.WithLogger(quietLog))
	for _, id := range ids {
		if _, err := c.RegisterFunction(id, sizeHandler); err != nil {
			t.Fatal(err)
		}
	}
	connectClient(t, c)
	return c
}

func sizeHandler(_ context.Context, data json.RawMessage) (any, error) { return len(data), nil }

func connectClient(t testing.TB, c *iii.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// A round trip: every registration has been processed.
	if _, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.FnWorkerIdentity, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// floodFrame is the flood of big calls: an invokefunction of functionID whose
// payload carries pad bytes.
func floodFrame(functionID string, pad []byte) []byte {
	b := make([]byte, 0, len(pad)+160)
	b = append(b, `{"type":"invokefunction","invocation_id":"`...)
	b = append(b, uuid.NewString()...)
	b = append(b, `","function_id":"`...)
	b = append(b, functionID...)
	b = append(b, `","data":{"pad":"`...)
	b = append(b, pad...)
	return append(b, `"}}`...)
}

// floodResult is what one flood socket got back.
type floodResult struct {
	answered, refused int
	other             []string
}

// flood opens sockets connections and sends each frames calls of
// functionID with pad bytes back to back, reading every answer; it
// returns once all are answered or refused.
func flood(t *testing.T, url, functionID string, sockets, frames int, pad []byte) []floodResult {
	t.Helper()
	out := make([]floodResult, sockets)
	var wg sync.WaitGroup
	for i := range sockets {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatalf("flood socket %d: %v", i, err)
		}
		t.Cleanup(func() { _ = ws.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			go func() {
				for range frames {
					if err := ws.WriteMessage(websocket.TextMessage, floodFrame(functionID, pad)); err != nil {
						return
					}
				}
			}()
			r := &out[i]
			_ = ws.SetReadDeadline(time.Now().Add(5 * time.Minute)) // bounds a broken run only
			for r.answered+r.refused+len(r.other) < frames {
				_, data, err := ws.ReadMessage()
				if err != nil {
					r.other = append(r.other, "read: "+err.Error())
					return
				}
				var m struct {
					Type  string                 `json:"type"`
					Error *struct{ Code string } `json:"error"`
				}
				_ = json.Unmarshal(data, &m)
				switch {
				case m.Type != "invocationresult":
				case m.Error == nil:
					r.answered++
				case m.Error.Code == CodeTooManyInvocations:
					r.refused++
				default:
					r.other = append(r.other, string(data))
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// honestCaller calls each of ids in a loop until stop, and counts answers
// and failures; it reports the slowest answer.
type honestCaller struct {
	answered, failed atomic.Int64
	slowestNs        atomic.Int64
	errs             sync.Map
	done             chan struct{}
}

func callHonestly(t *testing.T, url string, stop <-chan struct{}, ids ...string) *honestCaller {
	t.Helper()
	c := iii.New(url, iii.WithName("honest-caller"), iii.WithLogger(quietLog))
	connectClient(t, c)
	h := &honestCaller{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			_, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: ids[i%len(ids)],
				Data: json.RawMessage(`{"honest":true}`), Timeout: 2 * time.Minute})
			if err != nil {
				h.failed.Add(1)
				h.errs.Store(err.Error(), true)
				continue
			}
			h.answered.Add(1)
			if d := time.Since(start).Nanoseconds(); d > h.slowestNs.Load() {
				h.slowestNs.Store(d)
			}
		}
	}()
	return h
}

// The flood of big calls: four sockets send eight 15 MiB calls each to one
// function of the in-process worker, then of an honest remote worker.
// Neither is disconnected (the engine's outbound cap used to close the
// registry's own connection within 1.2 s, and the remote one likewise);
// each flooder gets a bounded share and clear too_many_invocations
// refusals; an honest caller's calls during the flood are all answered.
func TestFloodCannotDropTheInProcessWorkerOrAnHonestOne(t *testing.T) {
	e := startEngine(t, Config{})
	reg := inProcessWorker(t, e, "skills", "skills::list", "directory::engine::workers::list")
	pub := socketWorker(t, e.URL(), "publisher", "acme::section")
	regID, pubID := reg.WorkerID(), pub.WorkerID()
	pad := []byte(strings.Repeat("A", 15<<20))

	for _, target := range []string{"directory::engine::workers::list", "acme::section"} {
		stop := make(chan struct{})
		honest := callHonestly(t, e.URL(), stop, "skills::list", "acme::section")
		start := time.Now()
		results := flood(t, e.URL(), target, 4, 8, pad)
		close(stop)
		<-honest.done
		answered, refused := 0, 0
		for i, r := range results {
			if len(r.other) > 0 {
				t.Fatalf("flood of %s, socket %d got something else than answers and refusals: %.300q", target, i, r.other)
			}
			answered += r.answered
			refused += r.refused
		}
		t.Logf("flood of %s: %d of 32 answered, %d refused (too_many_invocations) in %v; honest calls meanwhile: %d answered, %d failed, slowest %v",
			target, answered, refused, time.Since(start).Round(time.Millisecond), honest.answered.Load(), honest.failed.Load(),
			time.Duration(honest.slowestNs.Load()).Round(time.Millisecond))
		if refused == 0 || answered == 0 {
			t.Errorf("flood of %s: %d answered, %d refused; want each flooder held to its budget (some refused) and served within it", target, answered, refused)
		}
		if n := honest.failed.Load(); n > 0 || honest.answered.Load() == 0 {
			var errs []string
			honest.errs.Range(func(k, _ any) bool { errs = append(errs, k.(string)); return true })
			t.Errorf("honest calls during the flood of %s: %d answered, %d failed: %v", target, honest.answered.Load(), n, errs)
		}
	}
	if strings.Contains(e.logs.String(), "closing worker connection") {
		t.Fatalf("the flood disconnected a worker:\n%s", grepLog(e.logs.String(), "closing worker connection"))
	}
	if reg.WorkerID() != regID || pub.WorkerID() != pubID {
		t.Fatalf("a worker reconnected during the flood: in-process %s → %s, remote %s → %s", regID, reg.WorkerID(), pubID, pub.WorkerID())
	}
	for _, c := range []*iii.Client{reg, pub} {
		if _, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: iii.FnWorkerIdentity, Data: json.RawMessage(`{}`), Timeout: waitLimit}); err != nil {
			t.Fatalf("worker %s after the flood: %v", c.WorkerID(), err)
		}
	}
}

// grepLog returns the log lines holding s.
func grepLog(log, s string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// One connection's calls carry at most MaxCallerBytes at once: past it
// (with a call already in flight) it is refused at once with a message
// naming the budget; its first call always passes, however large.
func TestCallerByteBudget(t *testing.T) {
	e := startEngine(t, Config{MaxCallerBytes: 1 << 20})
	owner := dialWorker(t, e.URL())
	owner.register("slow::f", nil)
	caller := dialWorker(t, e.URL())
	big := strings.Repeat("x", 2<<20)
	first := uuid.NewString()
	caller.send(map[string]any{"type": "invokefunction", "invocation_id": first, "function_id": "slow::f", "data": map[string]any{"pad": big}})
	inv := owner.expect("invokefunction")
	if inv.str("invocation_id") != first {
		t.Fatalf("owner got %s; want the first call", inv.raw)
	}
	code, msg := caller.callErr("slow::f", map[string]any{"small": true})
	if code != CodeTooManyInvocations || !strings.Contains(msg, "max 1048576 in all") {
		t.Fatalf("second call while 2 MiB are in flight: %s %q; want too_many_invocations naming the budget", code, msg)
	}
	owner.send(map[string]any{"type": "invocationresult", "invocation_id": first, "function_id": "slow::f", "result": 1})
	if f := caller.expect("invocationresult"); f.str("invocation_id") != first {
		t.Fatalf("caller got %s", f.raw)
	}
	// Once answered, the budget is free again.
	go owner.serve(func(frame) any { return "ok" })
	if got := string(caller.result("slow::f", map[string]any{"small": true})); got != `"ok"` {
		t.Fatalf("call after the budget freed: %s", got)
	}
}

// A worker gets at most MaxWorkerBytes of invocations at once; the rest
// wait at its gate in arrival order and go as answers come back.
func TestWorkerGateHoldsCallsInOrder(t *testing.T) {
	e := startEngine(t, Config{MaxWorkerBytes: 1 << 20})
	owner := dialWorker(t, e.URL())
	owner.register("w::f", nil)
	var callers []*rawWorker
	var ids []string
	for i := range 3 {
		c := dialWorker(t, e.URL())
		callers = append(callers, c)
		id := uuid.NewString()
		ids = append(ids, id)
		c.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "w::f",
			"data": map[string]any{"n": i, "pad": strings.Repeat("y", 700<<10)}})
		c.sync() // handled in this order
	}
	for i, id := range ids {
		inv := owner.expect("invokefunction")
		if inv.str("invocation_id") != id {
			t.Fatalf("delivery %d is %s; want the calls in arrival order", i, inv.str("invocation_id"))
		}
		// Only one 700 KiB call fits a 1 MiB budget: the next waits for
		// this answer.
		owner.sync()
		owner.send(map[string]any{"type": "invocationresult", "invocation_id": id, "function_id": "w::f", "result": i})
		if f := callers[i].expect("invocationresult"); f.str("invocation_id") != id {
			t.Fatalf("caller %d got %s", i, f.raw)
		}
	}
}

// A client waiting to take the in-process worker's ids (the
// claimer, repeating registerfunction) is refused each of them with a
// clear reason, even after the in-process connection left: they are
// reserved for in-process connections for the engine's life. The same
// holds for its trigger types, and its name cannot be taken either.
func TestInProcessWorkerIDsTypesAndNameAreReserved(t *testing.T) {
	e := startEngine(t, Config{})
	ids := []string{"skills::list", "skill::fetch", "skills::resources-read"}
	reg := inProcessWorker(t, e, "skills", ids...)
	if _, err := reg.RegisterTriggerType("skills::on-change", "changes", acceptAll{}); err != nil {
		t.Fatal(err)
	}
	connectClient(t, reg) // a round trip after the type

	claimer := dialWorker(t, e.URL())
	check := func(when string) {
		t.Helper()
		for _, id := range ids {
			claimer.send(map[string]any{"type": "registerfunction", "id": id})
			f := claimer.expect("registrationrejected")
			if f.str("function_id") != id || !strings.Contains(f.str("description"), "reserved: function "+id+" belongs to the worker running inside this engine's process") {
				t.Fatalf("%s: claimer registering %s got %s; want a reserved refusal", when, id, f.raw)
			}
		}
		claimer.send(map[string]any{"type": "registertriggertype", "id": "skills::on-change", "description": "mine"})
		claimer.sync()
		e.logs.waitFor(t, "registertriggertype refused: reserved: trigger type skills::on-change")
		f := claimer.call(iii.FnInfoTriggers, map[string]any{"id": "skills::on-change"})
		if f.obj("error") == nil { // NOT_FOUND once the registry left: nobody provides it
			var info iii.TriggerTypeDetail
			mustUnmarshal(t, []byte(f.raw), &struct{ Result *iii.TriggerTypeDetail }{&info})
			if info.ProviderWorkerID == nil || *info.ProviderWorkerID != reg.WorkerID() {
				t.Fatalf("%s: skills::on-change is provided by %v; want the registry %s", when, info.ProviderWorkerID, reg.WorkerID())
			}
		}
	}
	check("while the registry is connected")
	_ = reg.Close()
	e.logs.waitFor(t, "worker left")
	check("after the registry's connection left")

	// The registry's name, in any guise, is refused to a socket: the
	// worker is listed without a name, never as "skills".
	for _, name := range []string{"skills", "SKILLS", "ѕkills" /* Cyrillic ѕ */, "s k i l l s", "iii-state"} {
		w := dialWorker(t, e.URL())
		code, msg := w.callErr(iii.FnRegisterWorker, map[string]any{"name": name, "pid": 7})
		if code != rules.CodeForbidden || !strings.Contains(msg, "a socket connection must choose another name") {
			t.Fatalf("a socket naming itself %q: %s %q; want forbidden", name, code, msg)
		}
		var list struct{ Workers []iii.WorkerInfo }
		mustUnmarshal(t, w.result(iii.FnListWorkers, map[string]any{}), &list)
		for _, x := range list.Workers {
			if x.StringID() == w.id && x.StringName() != "" {
				t.Fatalf("the refused %q is listed as %q; want no name", name, x.StringName())
			}
		}
	}
	ok := dialWorker(t, e.URL())
	ok.result(iii.FnRegisterWorker, map[string]any{"name": "skills-publisher-acme", "pid": 8})
}

type acceptAll struct{}

func (acceptAll) RegisterTrigger(context.Context, iii.TriggerConfig) error   { return nil }
func (acceptAll) UnregisterTrigger(context.Context, iii.TriggerConfig) error { return nil }

// callerOfMetadata reads the engine's caller stamp of an invocation.
func callerOfMetadata(ctx context.Context) string {
	meta, _ := iii.MetadataFromContext(ctx)
	var m map[string]json.RawMessage
	var c Caller
	if json.Unmarshal(meta, &m) == nil {
		_ = json.Unmarshal(m[CallerKey], &c)
	}
	return c.WorkerID
}

// A trigger fire runs as whoever registered the binding, never as the
// provider of the type: the confused deputy binds skills::on-change to
// skills::unregister, and the registry's fire then arrives stamped with
// the attacker's identity, so the registry's ownership rules apply to it.
// A fire naming a binding the sender does not provide is refused, and so
// are the engine's own fires (state, subscribe) into a private scope.
func TestTriggerFireRunsAsItsRegistrant(t *testing.T) {
	e := startEngine(t, Config{PrivateScopes: []string{"skills.versions"}})
	seen := make(chan string, 16)
	reg := iii.New(e.URL(), iii.WithName("skills"), iii.WithLogger(quietLog), iii.WithNetDialer(e.DialContext))
	if _, err := reg.RegisterFunction("skills::unregister", func(ctx context.Context, _ json.RawMessage) (any, error) {
		seen <- callerOfMetadata(ctx)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	ref, err := reg.RegisterTriggerType("skills::on-change", "changes", acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	connectClient(t, reg)

	attacker := dialWorker(t, e.URL())
	attacker.send(map[string]any{"type": "registertrigger", "id": "atk-t3", "trigger_type": "skills::on-change",
		"function_id": "skills::unregister", "config": map[string]any{}})
	attacker.sync()
	waitBindings(t, ref, 1)
	if err := ref.FireJSON(context.Background(), map[string]string{"op": "register", "id": "victim/doc"}); err != nil {
		t.Fatal(err)
	}
	select {
	case who := <-seen:
		if who != attacker.id {
			t.Fatalf("the fire of the attacker's binding ran as %q; want the attacker %s (the registry is %s)", who, attacker.id, reg.WorkerID())
		}
	case <-time.After(waitLimit):
		t.Fatal("the fire never arrived")
	}

	// A fire naming the binding from a connection that does not provide
	// its type is refused: only the provider fires.
	id := uuid.NewString()
	attacker.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "skills::unregister",
		"data": map[string]any{}, "trigger_id": "atk-t3"})
	f := attacker.expect("invocationresult")
	if e := f.obj("error"); e == nil || e["code"] != rules.CodeForbidden || !strings.Contains(e["message"].(string), "only its type's provider fires it") {
		t.Fatalf("a fire from a non-provider: %s; want forbidden", f.raw)
	}
	select {
	case who := <-seen:
		t.Fatalf("a fire from a non-provider reached the function (as %q)", who)
	default:
	}

	// Bindings of the engine's own types run as their registrant too: a
	// subscribe trigger bound to state::set, fired by a publish, cannot
	// write a private scope.
	attacker.send(map[string]any{"type": "registertrigger", "id": "atk-sub", "trigger_type": "subscribe",
		"function_id": "state::set", "config": map[string]any{"topic": "atk"}})
	attacker.sync()
	attacker.result("publish", map[string]any{"topic": "atk", "data": map[string]any{"scope": "skills.versions", "key": "1", "value": "FORGED"}})
	e.logs.waitFor(t, `scope \"skills.versions\" is private`)
	if got := attacker.result("state::get", map[string]any{"scope": "skills.versions", "key": "1"}); got != nil {
		t.Fatalf("skills.versions/1 = %s after the attacker's trigger; want nothing", got)
	}
}

// waitBindings waits until the provider holds n bindings.
func waitBindings(t *testing.T, ref *iii.TriggerTypeRef, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for len(ref.Bindings()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the provider has %d bindings; want %d", len(ref.Bindings()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The registry's private scopes (its immutable versions) are written only
// over the in-process connection: a socket's state::set, update and
// delete are refused naming the scope, directly or queued; reads stay
// open.
func TestPrivateScopesAreWrittenOnlyInProcess(t *testing.T) {
	e := startEngine(t, Config{PrivateScopes: []string{"skills.versions"}})
	mem := dialWorkerWith(t, &websocket.Dialer{NetDialContext: e.DialContext}, e.URL())
	mem.result("state::set", map[string]any{"scope": "skills.versions", "key": "0000000000000004", "value": map[string]any{"content": "# real", "sha256": "abc"}})

	sock := dialWorker(t, e.URL())
	for fn, args := range map[string]map[string]any{
		"state::set":    {"scope": "skills.versions", "key": "0000000000000004", "value": map[string]any{"content": "ATTACKER", "sha256": "abc"}},
		"state::update": {"scope": "skills.versions", "key": "0000000000000004", "ops": []any{map[string]any{"type": "set", "path": "content", "value": "ATTACKER"}}},
		"state::delete": {"scope": "skills.versions", "key": "0000000000000004"},
	} {
		code, msg := sock.callErr(fn, args)
		if code != rules.CodeForbidden || !strings.Contains(msg, `scope "skills.versions" is private`) {
			t.Fatalf("%s from a socket: %s %q; want forbidden naming the scope", fn, code, msg)
		}
	}
	// Queued, the write runs as its enqueuer and is refused the same way.
	sock.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "state::set",
		"data":   map[string]any{"scope": "skills.versions", "key": "0000000000000004", "value": "QUEUED"},
		"action": map[string]any{"type": "enqueue", "queue": "q"}})
	sock.expect("invocationresult")
	e.logs.waitFor(t, "queued job failed")
	var got struct{ Content string }
	mustUnmarshal(t, sock.result("state::get", map[string]any{"scope": "skills.versions", "key": "0000000000000004"}), &got)
	if got.Content != "# real" {
		t.Fatalf("the version after the attacks = %+v; want it unchanged", got)
	}
	sock.result("state::list", map[string]any{"scope": "skills.versions"})
	sock.result("state::set", map[string]any{"scope": "skills", "key": "k", "value": 1}) // other scopes stay writable
}

// One client holds at most MaxConnectionsPerClient sockets: the rest of
// the engine's slots stay for the others. A scoped token is a client of
// its own wherever it connects from; the in-process connection never
// counts.
func TestOneClientCannotTakeEverySocket(t *testing.T) {
	const acme = "acme-token-0123456789"
	e := startEngine(t, Config{MaxConnections: 8, MaxConnectionsPerClient: 2, Token: "shared-token-0123456789",
		ScopedTokens: []ScopedToken{{Name: "acme", Token: acme, Namespaces: []string{"acme"}}}})
	shared := http.Header{"Authorization": {"Bearer shared-token-0123456789"}}
	for range 2 {
		dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), shared)
	}
	_, resp, err := websocket.DefaultDialer.Dial(e.URL(), shared)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third socket from 127.0.0.1: %v %v; want 429", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "too many open connections from this client (127.0.0.1 holds 2") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("429 body %q, Retry-After %q; want the client, its share and a Retry-After", body, resp.Header.Get("Retry-After"))
	}
	e.logs.waitFor(t, "a client holds its share of the engine's sockets")
	// Another client (a team's scoped token) still connects, up to its own share.
	team := http.Header{"Authorization": {"Bearer " + acme}}
	w := dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), team)
	dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), team)
	if _, resp, err := websocket.DefaultDialer.Dial(e.URL(), team); err == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("acme's third socket: %v; want 429", err)
	}
	dialWorkerWith(t, &websocket.Dialer{NetDialContext: e.DialContext}, e.URL()).sync()
	// A socket that closes gives its slot back.
	w.close()
	deadline := time.Now().Add(waitLimit)
	for {
		ws, _, err := websocket.DefaultDialer.Dial(e.URL(), team)
		if err == nil {
			_ = ws.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket for acme after one closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A worker that sends each result twice (--result-resend, against an
// engine that loses early results) never answers a new call with an old
// result, even when the caller reuses the invocation id.
func TestResultResendCannotAnswerAReusedInvocationID(t *testing.T) {
	e := startEngine(t, Config{})
	var n atomic.Int32
	release := make(chan struct{})
	w := iii.New(e.URL(), iii.WithName("resender"), iii.WithLogger(quietLog), iii.WithResultResend(20*time.Millisecond))
	if _, err := w.RegisterFunction("w::count", func(context.Context, json.RawMessage) (any, error) {
		k := n.Add(1)
		if k == 2 {
			<-release
		}
		return fmt.Sprintf("answer %d", k), nil
	}); err != nil {
		t.Fatal(err)
	}
	connectClient(t, w)
	caller := dialWorker(t, e.URL())
	id := uuid.NewString()
	call := func() {
		caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "w::count", "data": map[string]any{}})
	}
	call()
	if f := caller.expect("invocationresult"); string(f.m["result"].(string)) != "answer 1" {
		t.Fatalf("first call: %s", f.raw)
	}
	call()
	time.Sleep(200 * time.Millisecond) // room for a copy that was not cancelled
	close(release)
	if f := caller.expect("invocationresult"); f.m["result"] != "answer 2" {
		t.Fatalf("the call reusing invocation_id %s was answered %s; want answer 2, not a copy of the first result", id, f.raw)
	}
}

// What waits at one worker's gate is bounded too: large calls past four
// times MaxWorkerBytes (and any past 65 536 calls) are refused at once,
// naming the worker's function, instead of held in the engine's memory;
// small calls still wait their turn.
func TestWorkerGateIsBounded(t *testing.T) {
	e := startEngine(t, Config{MaxWorkerBytes: 4 << 10})
	owner := dialWorker(t, e.URL()) // never answers
	owner.register("stuck::f", nil)
	pad := strings.Repeat("z", 5<<10) // over smallCall: counted in the gate's bytes
	refused := ""
	for i := 0; i < 16 && refused == ""; i++ {
		c := dialWorker(t, e.URL()) // a caller of its own each time: no caller budget applies
		id := uuid.NewString()
		c.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "stuck::f", "data": map[string]any{"pad": pad}})
		c.send(map[string]any{"type": "ping"})
		for {
			f := c.next()
			if f.str("type") == "pong" {
				break
			}
			if f.str("type") == "invocationresult" && f.obj("error") != nil {
				refused, _ = f.obj("error")["message"].(string)
				if f.obj("error")["code"] != CodeTooManyInvocations {
					t.Fatalf("call %d: %s; want too_many_invocations", i, f.raw)
				}
			}
		}
	}
	if !strings.Contains(refused, "worker busy:") || !strings.Contains(refused, "the worker serving stuck::f") {
		t.Fatalf("calls past the gate's bound: refusal %q; want worker busy naming the function", refused)
	}
	// Large calls filling the gate do not shut a small one out: it waits
	// for its turn instead of being refused.
	small := dialWorker(t, e.URL())
	small.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "stuck::f", "data": map[string]any{"small": true}})
	if got := small.syncCollect(); len(got) != 0 {
		t.Fatalf("a small call behind a gate full of large ones got %s; want it to wait", got[0].raw)
	}
}
