package engine

import (
	"testing"
)

// registerTT registers a trigger type and returns the bindings the engine
// delivered in response.
func registerTT(w *rawWorker, id string) []frame {
	w.send(map[string]any{"type": "registertriggertype", "id": id, "description": "test type"})
	return w.syncCollect()
}

func expectDelivered(t *testing.T, got []frame, id, typ, fn string) {
	t.Helper()
	if len(got) != 1 || got[0].str("type") != "registertrigger" || got[0].str("id") != id ||
		got[0].str("trigger_type") != typ || got[0].str("function_id") != fn {
		var raws []string
		for _, f := range got {
			raws = append(raws, string(f.raw))
		}
		t.Fatalf("delivered %v; want binding %s of %s → %s", raws, id, typ, fn)
	}
}

func bind(w *rawWorker, id, typ, fn string, config any) {
	m := map[string]any{"type": "registertrigger", "id": id, "trigger_type": typ, "function_id": fn,
		"metadata": map[string]any{"k": "v"}}
	if config != nil {
		m["config"] = config
	}
	w.send(m)
	w.sync()
}

func expectBinding(t *testing.T, p *rawWorker, id, typ, fn string) frame {
	t.Helper()
	f := p.expect("registertrigger")
	if f.str("id") != id || f.str("trigger_type") != typ || f.str("function_id") != fn {
		t.Fatalf("provider got %s; want binding %s", f.raw, id)
	}
	return f
}

func TestTriggerForwardedToProviderAndUnregistered(t *testing.T) {
	e := startEngine(t, Config{})
	p := dialWorker(t, e.URL())
	registerTT(p, "skills::on-change")
	r := dialWorker(t, e.URL())
	bind(r, "b1", "skills::on-change", "sub::cb", map[string]any{"filter": "x"})
	f := expectBinding(t, p, "b1", "skills::on-change", "sub::cb")
	if f.obj("config")["filter"] != "x" || f.obj("metadata")["k"] != "v" {
		t.Fatalf("config/metadata not forwarded: %s", f.raw)
	}
	// A missing config key is tolerated and forwarded as {}.
	bind(r, "b2", "skills::on-change", "sub::cb", nil)
	f2 := expectBinding(t, p, "b2", "skills::on-change", "sub::cb")
	if cfg, ok := f2.m["config"].(map[string]any); !ok || len(cfg) != 0 {
		t.Fatalf("missing config must be forwarded as {}: %s", f2.raw)
	}
	// Success results need nothing; the registrant hears nothing.
	p.send(map[string]any{"type": "triggerregistrationresult", "id": "b1", "trigger_type": "skills::on-change", "function_id": "sub::cb"})
	p.sync()
	r.send(map[string]any{"type": "unregistertrigger", "id": "b1", "trigger_type": "skills::on-change"})
	r.sync()
	u := p.expect("unregistertrigger")
	if u.str("id") != "b1" || u.str("trigger_type") != "skills::on-change" {
		t.Fatalf("provider got %s", u.raw)
	}
	// Registrant disconnect unregisters its remaining bindings.
	r.close()
	u2 := p.expect("unregistertrigger")
	if u2.str("id") != "b2" || u2.str("trigger_type") != "skills::on-change" {
		t.Fatalf("provider got %s", u2.raw)
	}
	p.sync()
}

func TestTriggerParkedUntilTypeRegisteredThenReplayed(t *testing.T) {
	e := startEngine(t, Config{})
	r := dialWorker(t, e.URL())
	bind(r, "early", "late::type", "sub::cb", map[string]any{})
	r.sync() // parked: no error to the registrant

	p1 := dialWorker(t, e.URL())
	expectDelivered(t, registerTT(p1, "late::type"), "early", "late::type", "sub::cb")

	// The provider disconnects: the binding is parked again and replayed to
	// the next provider.
	p1.close()
	p2 := dialWorker(t, e.URL())
	got := registerTT(p2, "late::type")
	if len(got) == 0 {
		// p1's cleanup had not run yet: p2 waited on standby and takes
		// the type over when it does.
		got = []frame{p2.expect("registertrigger")}
	}
	expectDelivered(t, got, "early", "late::type", "sub::cb")

	// Re-registering the type on a live provider re-delivers too.
	expectDelivered(t, registerTT(p2, "late::type"), "early", "late::type", "sub::cb")

	// unregistertriggertype from the provider parks the bindings.
	p2.send(map[string]any{"type": "unregistertriggertype", "id": "late::type"})
	p2.sync()
	p3 := dialWorker(t, e.URL())
	expectDelivered(t, registerTT(p3, "late::type"), "early", "late::type", "sub::cb")
}

func TestProviderErrorForwardedAndBindingParked(t *testing.T) {
	e := startEngine(t, Config{})
	p := dialWorker(t, e.URL())
	registerTT(p, "t::x")
	r := dialWorker(t, e.URL())
	bind(r, "b", "t::x", "sub::cb", map[string]any{"bad": true})
	expectBinding(t, p, "b", "t::x", "sub::cb")

	// Only the provider of the type may report on it.
	r.send(map[string]any{"type": "triggerregistrationresult", "id": "b", "trigger_type": "t::x", "function_id": "sub::cb",
		"error": map[string]any{"code": "nope", "message": "not yours"}})
	r.sync()

	p.send(map[string]any{"type": "triggerregistrationresult", "id": "b", "trigger_type": "t::x", "function_id": "sub::cb",
		"error": map[string]any{"code": "trigger_registration_failed", "message": "bad config"}})
	got := r.expect("triggerregistrationresult")
	if got.str("id") != "b" || got.obj("error")["message"] != "bad config" {
		t.Fatalf("registrant got %s", got.raw)
	}
	// Parked: unregistering does not bother the provider, and a
	// re-registration of the type delivers it again.
	expectDelivered(t, registerTT(p, "t::x"), "b", "t::x", "sub::cb")
}

func TestProviderDisconnectRemovesTypeAndOwnBindings(t *testing.T) {
	e := startEngine(t, Config{})
	p := dialWorker(t, e.URL())
	registerTT(p, "t::mine")
	// The provider also binds to another provider's type.
	other := dialWorker(t, e.URL())
	registerTT(other, "t::other")
	bind(p, "pb", "t::other", "p::cb", map[string]any{})
	expectBinding(t, other, "pb", "t::other", "p::cb")
	p.close()
	u := other.expect("unregistertrigger")
	if u.str("id") != "pb" {
		t.Fatalf("other got %s", u.raw)
	}
	var out struct {
		Triggers []map[string]any `json:"triggers"`
	}
	mustUnmarshal(t, other.result("engine::triggers::list", nil), &out)
	for _, tt := range out.Triggers {
		if tt["id"] == "t::mine" {
			t.Fatal("trigger type of a disconnected provider still listed")
		}
	}
}

// triggerProvider is who engine::triggers::list names as the provider of id.
func triggerProvider(t *testing.T, w *rawWorker, id string) string {
	t.Helper()
	var out struct {
		Triggers []map[string]any `json:"triggers"`
	}
	mustUnmarshal(t, w.result("engine::triggers::list", nil), &out)
	for _, tt := range out.Triggers {
		if tt["id"] == id {
			name, _ := tt["worker_name"].(string)
			return name
		}
	}
	return ""
}

func TestBuiltinTriggerTypeCannotBeTakenOver(t *testing.T) {
	e := startEngine(t, Config{})
	sub := dialWorker(t, e.URL())
	sub.register("sub::cb", nil)
	bind(sub, "watch", "state", "sub::cb", map[string]any{"scope": "x"})

	attacker := dialWorker(t, e.URL())
	for _, id := range []string{"state", "engine::functions-available", "engine::workers-available"} {
		if got := registerTT(attacker, id); len(got) != 0 {
			t.Fatalf("the engine delivered bindings of %s to a worker: %v", id, got)
		}
		e.logs.waitFor(t, "registertriggertype refused: the trigger type is served by the engine itself")
	}
	if got := triggerProvider(t, sub, "state"); got != "iii-state" {
		t.Fatalf("state provider = %q; want the engine's", got)
	}
	// The engine still serves the binding: a write reaches the subscriber.
	writer := dialWorker(t, e.URL())
	writer.result("state::set", map[string]any{"scope": "x", "key": "k", "value": 1})
	in := sub.expect("invokefunction")
	if in.str("function_id") != "sub::cb" || in.obj("data")["event_type"] != "state:created" {
		t.Fatalf("state event after the refused takeover: %s", in.raw)
	}
}

func TestLiveProvidersTriggerTypeStaysWithIt(t *testing.T) {
	e := startEngine(t, Config{})
	owner := dialWorker(t, e.URL())
	owner.register("own::name", nil)
	registerTT(owner, "t::mine")
	sub := dialWorker(t, e.URL())
	sub.register("sub::cb", nil)
	bind(sub, "b1", "t::mine", "sub::cb", nil)
	expectBinding(t, owner, "b1", "t::mine", "sub::cb")

	attacker := dialWorker(t, e.URL())
	if got := registerTT(attacker, "t::mine"); len(got) != 0 {
		t.Fatalf("bindings delivered to a second provider: %v", got)
	}
	e.logs.waitFor(t, "registertriggertype deferred: the trigger type belongs to another live worker (first owner wins)")
	// The owner's re-registration re-delivers, as upstream does.
	expectDelivered(t, registerTT(owner, "t::mine"), "b1", "t::mine", "sub::cb")
	// Once the owner leaves, the worker on standby provides the type (a
	// provider that reconnected before its old connection was cleaned up
	// gets its type this way) and receives the binding.
	owner.close()
	expectBinding(t, attacker, "b1", "t::mine", "sub::cb")
}

func TestFunctionsAvailableTrigger(t *testing.T) {
	e := startEngine(t, Config{})
	sub := dialWorker(t, e.URL())
	sub.register("sub::cb", nil)
	bind(sub, "fa", "engine::functions-available", "sub::cb", map[string]any{})

	functionsIn := func() []string {
		t.Helper()
		in := sub.expect("invokefunction")
		if in.str("function_id") != "sub::cb" || in.obj("data")["event"] != "functions_changed" || in.obj("metadata")["k"] != "v" {
			t.Fatalf("event = %s", in.raw)
		}
		sub.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"), "function_id": "sub::cb", "result": nil})
		var ids []string
		for _, f := range in.m["data"].(map[string]any)["functions"].([]any) {
			fm := f.(map[string]any)
			if _, has := fm["request_format"]; has {
				t.Fatalf("events carry summaries without schemas: %v", fm)
			}
			ids = append(ids, fm["function_id"].(string))
		}
		return ids
	}
	has := func(ids []string, id string) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}
	pub := dialWorker(t, e.URL())
	pub.register("skills::register", nil)
	pub.register("skills::list", nil)
	ids := functionsIn()
	if !has(ids, "skills::register") || !has(ids, "sub::cb") || has(ids, "engine::functions::list") {
		t.Fatalf("functions = %v", ids)
	}
	pub.close() // the registry leaves
	if ids := functionsIn(); has(ids, "skills::register") {
		t.Fatalf("after the owner left: %v", ids)
	}
	// An internal function (a publisher's prompt handler) coming and going
	// fires the event too, as the real engine's hash of every function
	// does; the entries still list only what engine::functions::list shows
	// by default.
	handler := dialWorker(t, e.URL())
	handler.register("prompt::hidden", map[string]any{"metadata": map[string]any{"internal": true}})
	if ids := functionsIn(); has(ids, "prompt::hidden") || !has(ids, "sub::cb") {
		t.Fatalf("after an internal function came: %v", ids)
	}
	handler.close()
	if ids := functionsIn(); has(ids, "prompt::hidden") || !has(ids, "sub::cb") {
		t.Fatalf("after an internal function went: %v", ids)
	}
}

func TestWorkersAvailableTriggerInOrder(t *testing.T) {
	e := startEngine(t, Config{})
	sub := dialWorker(t, e.URL())
	sub.register("sub::cb", nil)
	bind(sub, "wa", "engine::workers-available", "sub::cb", nil)
	w := dialWorker(t, e.URL())
	w.hello("someone", 9)
	w.sync()
	w.close()
	for _, want := range []string{"worker_connected", "worker_metadata_updated", "worker_disconnected"} {
		in := sub.expect("invokefunction")
		d := in.obj("data")
		if d["event"] != want || d["worker_id"] != w.id {
			t.Fatalf("event = %s; want %s of %s", in.raw, want, w.id)
		}
		sub.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"), "function_id": "sub::cb", "result": nil})
	}
}
