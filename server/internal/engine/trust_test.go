package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// The trust boundaries of the engine (the registry's ids at start-up,
// ownership, scoped tokens): each test plays the attacker
// over real sockets and checks that the attack fails and nothing stored is
// lost.

var registryIDs = []string{"skills::list", "skills::resources-read", "skills::publish-bundle", "skills::register", "prompts::mcp-get"}

// racer is a client that connected its TCP socket before the engine
// accepted sockets (it waits in the listen backlog) and registers ids as
// soon as its upgrade is answered.
type racer struct {
	frames chan []frame
}

func startRacer(t *testing.T, url string, ids []string) *racer {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "ws://"))
	if err != nil {
		t.Fatalf("racer TCP connect: %v", err)
	}
	r := &racer{frames: make(chan []frame, 1)}
	d := websocket.Dialer{NetDial: func(string, string) (net.Conn, error) { return nc, nil }}
	go func() {
		var got []frame
		defer func() { r.frames <- got }()
		ws, _, err := d.Dial(url, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for _, id := range ids {
			_ = ws.WriteJSON(map[string]any{"type": "registerfunction", "id": id})
		}
		_ = ws.WriteJSON(map[string]any{"type": "ping"})
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) != nil {
				return
			}
			got = append(got, frame{m: m, raw: data})
			if m["type"] == "pong" {
				return
			}
		}
	}()
	return r
}

// A client racing the standalone registry at start-up cannot take its ids:
// with HoldSockets the in-process registry registers first, every time.
func TestRacingClientCannotTakeRegistryIDsAtStartUp(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for round := 0; round < 25; round++ {
		e := startEngine(t, Config{HoldSockets: true})
		rc := startRacer(t, e.URL(), registryIDs)

		reg := iii.New(e.URL(), iii.WithName("skills"), iii.WithLogger(quiet), iii.WithNetDialer(e.DialContext))
		for _, id := range registryIDs {
			if _, err := reg.RegisterFunction(id, func(context.Context, json.RawMessage) (any, error) {
				return "registry", nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		if err := reg.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Trigger(ctx, iii.TriggerRequest{FunctionID: "engine::workers::identity", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if refused := reg.RefusedFunctions(); len(refused) != 0 {
			t.Fatalf("round %d: the in-process registry was refused %v", round, refused)
		}
		if err := e.AcceptSockets(); err != nil {
			t.Fatal(err)
		}
		frames := <-rc.frames
		rejected := map[string]string{}
		for _, f := range frames {
			if f.str("type") == "registrationrejected" {
				rejected[f.str("function_id")] = f.str("owner_worker_id")
			}
		}
		for _, id := range registryIDs {
			if owner, ok := rejected[id]; !ok || owner != reg.WorkerID() {
				t.Fatalf("round %d: %s not refused to the racer in favour of the registry (%s): %v", round, id, reg.WorkerID(), frames)
			}
		}
		caller := dialWorker(t, e.URL())
		if got := string(caller.result("skills::list", map[string]any{})); got != `"registry"` {
			t.Fatalf("round %d: skills::list answered %s; want the registry's answer", round, got)
		}
		cancel()
		_ = reg.Close()
		_ = e.Close()
	}
}

func TestAcceptSocketsOnlyOnceAndOnlyWhenHeld(t *testing.T) {
	e := startEngine(t, Config{})
	if err := e.AcceptSockets(); err == nil {
		t.Fatal("AcceptSockets on an engine that does not hold sockets succeeded")
	}
	h := startEngine(t, Config{HoldSockets: true})
	if err := h.AcceptSockets(); err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptSockets(); err == nil {
		t.Fatal("second AcceptSockets succeeded")
	}
	dialWorker(t, h.URL()).sync()
}

// Only the connection that registered a trigger replaces or removes it.
func TestTriggersCannotBeRemovedOrReplacedByOthers(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	attacker := dialWorker(t, e.URL())
	owner.register("own::on-state", nil)
	owner.send(map[string]any{"type": "registertrigger", "id": "t-owned", "trigger_type": "state",
		"function_id": "own::on-state", "config": map[string]any{"scope": "s"}})
	owner.sync()

	attacker.send(map[string]any{"type": "unregistertrigger", "id": "t-owned", "trigger_type": "state"})
	attacker.sync()
	e.logs.waitFor(t, "unregistertrigger refused: the trigger belongs to another worker")
	attacker.register("evil::fn", nil)
	attacker.send(map[string]any{"type": "registertrigger", "id": "t-owned", "trigger_type": "state",
		"function_id": "evil::fn", "config": map[string]any{"scope": "s"}})
	res := attacker.expect("triggerregistrationresult")
	if msg, _ := res.obj("error")["message"].(string); !strings.Contains(msg, "belongs to another worker") || !strings.Contains(msg, owner.id) {
		t.Fatalf("replacing another worker's trigger: %s", res.raw)
	}

	var list struct {
		Triggers []struct {
			ID         string `json:"id"`
			FunctionID string `json:"function_id"`
		} `json:"registered_triggers"`
	}
	mustUnmarshal(t, attacker.result("engine::registered-triggers::list", map[string]any{}), &list)
	found := false
	for _, tr := range list.Triggers {
		if tr.ID == "t-owned" {
			found = tr.FunctionID == "own::on-state"
		}
	}
	if !found {
		t.Fatalf("the owner's trigger was lost or rebound: %+v", list.Triggers)
	}
	// It still fires for the owner.
	attacker.result("state::set", map[string]any{"scope": "s", "key": "k", "value": 1})
	if in := owner.expect("invokefunction"); in.str("function_id") != "own::on-state" {
		t.Fatalf("owner got %s", in.raw)
	}
	// The owner removes it; a trigger whose owner left can be taken.
	owner.send(map[string]any{"type": "unregistertrigger", "id": "t-owned", "trigger_type": "state"})
	owner.sync()
	mustUnmarshal(t, attacker.result("engine::registered-triggers::list", map[string]any{}), &list)
	for _, tr := range list.Triggers {
		if tr.ID == "t-owned" {
			t.Fatalf("the owner could not remove its trigger: %+v", list.Triggers)
		}
	}
}

// The engine stamps the caller into invocation metadata; a client cannot
// pass itself off as another worker, however it spells the key.
func TestCallerStampCannotBeForged(t *testing.T) {
	e := startEngine(t, Config{})
	victim := dialWorker(t, e.URL())
	fn := dialWorker(t, e.URL())
	attacker := dialWorker(t, e.URL())
	fn.register("svc::whoami", nil)
	seen := make(chan map[string]any, 4)
	fn.serve(func(f frame) any {
		c, _ := f.obj("metadata")[CallerKey].(map[string]any)
		seen <- c
		return "ok"
	})
	forged := map[string]any{"worker_id": victim.id, "token": "acme"}
	for _, meta := range []string{
		`{"iii_caller":` + mustJSONString(forged) + `,"keep":1}`,
		`{"iii\u005fcaller":` + mustJSONString(forged) + `}`,
		`{"iii_caller":{"worker_id":"x"},"iii_caller":` + mustJSONString(forged) + `}`,
		`"not an object"`,
	} {
		id := uuid.NewString()
		attacker.sendRaw(websocket.TextMessage, []byte(`{"type":"invokefunction","invocation_id":"`+id+`","function_id":"svc::whoami","data":{},"metadata":`+meta+`}`))
		attacker.expect("invocationresult")
		c := <-seen
		if c["worker_id"] != attacker.id || c["token"] != "" {
			t.Fatalf("metadata %s reached the function as caller %v; want the attacker %s", meta, c, attacker.id)
		}
	}
}

func mustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func scopedEngine(t *testing.T) *testEngine {
	return startEngine(t, Config{Token: "operator-token-0123", ScopedTokens: []ScopedToken{
		{Name: "acme", Token: "acme-token-0123456789", Namespaces: []string{"acme"}},
		{Name: "billing", Token: "billing-token-012345", Namespaces: []string{"billing", "invoices"}},
	}})
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// A scoped token connects, publishes under its namespaces and nowhere else,
// and cannot touch engine state; the shared token keeps full access.
func TestScopedTokenPublishesOnlyInItsNamespace(t *testing.T) {
	e := scopedEngine(t)
	if got := dialStatus(t, e.URL(), nil); got != http.StatusUnauthorized {
		t.Fatalf("no token: %d; want 401", got)
	}
	if got := dialStatus(t, e.URL(), bearer("acme-token-wrong")); got != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d; want 401", got)
	}
	operator := dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), bearer("operator-token-0123"))
	acme := dialWorkerHeader(t, websocket.DefaultDialer, e.URL()+"/?token=acme-token-0123456789", nil)

	var me map[string]any
	mustUnmarshal(t, acme.result("engine::workers::identity", nil), &me)
	if me["worker_id"] != acme.id || me["token"] != "acme" || me["connected"] != true {
		t.Fatalf("identity of the acme connection = %v", me)
	}

	operator.register("billing::charge", nil)
	acme.register("acme::sync", nil) // accepted: no rejection before the pong
	for _, id := range []string{"billing::charge", "billing::other", "acmecorp::x", "skills::list"} {
		acme.send(map[string]any{"type": "registerfunction", "id": id})
		rej := acme.expect("registrationrejected")
		if rej.str("function_id") != id || !strings.Contains(rej.str("description"), `outside the namespaces of token "acme"`) {
			t.Fatalf("registering %s with the acme token: %s", id, rej.raw)
		}
	}
	if code, msg := acme.callErr("state::set", map[string]any{"scope": "skills", "key": "billing/x", "value": "pwned"}); code != rules.CodeForbidden || !strings.Contains(msg, "cannot call state::set") {
		t.Fatalf("state::set with the acme token: %s %s", code, msg)
	}
	if code, msg := acme.callErr("publish", map[string]any{"topic": "skills::changes", "data": map[string]any{"node": "x"}}); code != rules.CodeForbidden || !strings.Contains(msg, "cannot call publish") {
		t.Fatalf("publish with the acme token: %s %s", code, msg)
	}
	acme.send(map[string]any{"type": "registertrigger", "id": "spy", "trigger_type": "state", "function_id": "acme::sync", "config": map[string]any{"scope": "skills"}})
	if res := acme.expect("triggerregistrationresult"); !strings.Contains(string(res.raw), "cannot bind the engine's state trigger") {
		t.Fatalf("state trigger with the acme token: %s", res.raw)
	}
	acme.send(map[string]any{"type": "registertriggertype", "id": "billing::on-charge"})
	acme.sync()
	e.logs.waitFor(t, `registertriggertype refused: trigger type \"billing::on-charge\" is outside the namespaces`)

	// Nothing of billing's was lost, and the operator still has full access.
	var list struct {
		Functions []struct {
			FunctionID string `json:"function_id"`
		} `json:"functions"`
	}
	mustUnmarshal(t, operator.result("engine::functions::list", map[string]any{}), &list)
	ids := map[string]bool{}
	for _, f := range list.Functions {
		ids[f.FunctionID] = true
	}
	if !ids["billing::charge"] || !ids["acme::sync"] || ids["billing::other"] {
		t.Fatalf("functions after the attempts: %v", ids)
	}
	operator.result("state::set", map[string]any{"scope": "s", "key": "k", "value": 1})
}

func TestScopedTokenConfigIsValidated(t *testing.T) {
	for _, c := range []struct {
		tokens []ScopedToken
		want   string
	}{
		{[]ScopedToken{{Token: "0123456789abcdef", Namespaces: []string{"a"}}}, "name is required"},
		{[]ScopedToken{{Name: "a", Token: "short", Namespaces: []string{"a"}}}, "at least 16 characters"},
		{[]ScopedToken{{Name: "a", Token: "0123456789abcdef"}}, "at least one namespace"},
		{[]ScopedToken{{Name: "a", Token: "0123456789abcdef", Namespaces: []string{"A::b"}}}, `namespace "A::b"`},
		{[]ScopedToken{{Name: "a", Token: "0123456789abcdef", Namespaces: []string{"a"}}, {Name: "a", Token: "fedcba9876543210", Namespaces: []string{"b"}}}, "used twice"},
		{[]ScopedToken{{Name: "a", Token: "0123456789abcdef", Namespaces: []string{"a"}}, {Name: "b", Token: "0123456789abcdef", Namespaces: []string{"b"}}}, `also the token of "a"`},
	} {
		_, err := New(Config{ScopedTokens: c.tokens})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v; want %q", c.tokens, err, c.want)
		}
	}
	if _, err := New(Config{Token: "0123456789abcdef", ScopedTokens: []ScopedToken{{Name: "a", Token: "0123456789abcdef", Namespaces: []string{"a"}}}}); err == nil ||
		!strings.Contains(err.Error(), "shared engine token") {
		t.Errorf("a scoped token equal to the shared one: %v", err)
	}
}

// However a payload spells its own _caller_worker_id, the function sees
// exactly one: the engine's.
func TestCallerWorkerIDCannotBeForged(t *testing.T) {
	e := startEngine(t, Config{})
	fn := dialWorker(t, e.URL())
	attacker := dialWorker(t, e.URL())
	fn.register("svc::payload", nil)
	seen := make(chan frame, 8)
	fn.serve(func(f frame) any { seen <- f; return "ok" })
	for _, data := range []string{
		`{"_caller_worker_id":"victim"}`,
		`{"a":1,"_CALLER_WORKER_ID":"victim"}`,
		`{"\u005fcaller_worker_id":"victim"}`,
		`{"_caller_wor` + "\u212a" + `er_id":"victim","x":"é"}`,
		`{"_Caller_Worker_Id":"victim","_caller_worker_id":"victim2"}`,
	} {
		id := uuid.NewString()
		attacker.sendRaw(websocket.TextMessage, []byte(`{"type":"invokefunction","invocation_id":"`+id+`","function_id":"svc::payload","data":`+data+`}`))
		attacker.expect("invocationresult")
		in := <-seen
		var raw map[string]json.RawMessage
		mustUnmarshal(t, in.raw, &raw)
		var payload map[string]json.RawMessage
		mustUnmarshal(t, raw["data"], &payload)
		n := 0
		for k, v := range payload {
			if strings.EqualFold(k, "_caller_worker_id") {
				n++
				if string(v) != `"`+attacker.id+`"` {
					t.Fatalf("payload %s reached the function with %s = %s", data, k, v)
				}
			}
		}
		if n != 1 {
			t.Fatalf("payload %s reached the function as %s: %d caller keys", data, raw["data"], n)
		}
		// And Go's case-insensitive struct decoding reads the engine's.
		var st struct {
			Caller string `json:"_caller_worker_id"`
		}
		mustUnmarshal(t, raw["data"], &st)
		if st.Caller != attacker.id {
			t.Fatalf("payload %s decodes to caller %q", data, st.Caller)
		}
	}
}

// A queued job is delivered as the call of the connection that enqueued
// it: a scoped token cannot shed its scope (and pass for the engine, which
// has full access) by queueing a call to the registry.
func TestQueuedJobKeepsTheCallersStamp(t *testing.T) {
	e := scopedEngine(t)
	operator := dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), bearer("operator-token-0123"))
	acme := dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), bearer("acme-token-0123456789"))
	operator.register("skills::register", nil)
	seen := make(chan map[string]any, 1)
	operator.serve(func(f frame) any {
		c, _ := f.obj("metadata")[CallerKey].(map[string]any)
		seen <- c
		return "ok"
	})
	forged := `{"iii_caller":{"worker_id":"","token":""}}`
	acme.sendRaw(websocket.TextMessage, []byte(`{"type":"invokefunction","invocation_id":"`+uuid.NewString()+
		`","function_id":"skills::register","data":{"id":"billing/x"},"metadata":`+forged+`,"action":{"type":"enqueue","queue":"q"}}`))
	acme.expect("invocationresult")
	c := <-seen
	if c["worker_id"] != acme.id || c["token"] != "acme" {
		t.Fatalf("the queued job reached the function as caller %v; want the acme connection %s with token acme", c, acme.id)
	}
}
