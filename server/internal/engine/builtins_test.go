package engine

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestWorkersRegisterAndList(t *testing.T) {
	e := startEngine(t, Config{})
	b := dialWorker(t, e.URL())
	res := b.result("engine::workers::register", map[string]any{"name": "zeta\u202e-worker\x07", "runtime": "node",
		"version": "0.22.1", "os": "linux", "pid": 42, "description": "  the z one ",
		"telemetry": map[string]any{"language": "en", "extra": 1}})
	if string(res) != `{"success":true}` {
		t.Fatalf("register result = %s", res)
	}
	b.register("zeta::f", nil)
	b.register("zeta::g", nil)
	a := dialWorker(t, e.URL())
	a.hello("alpha", 7)
	a.sync()
	hidden := dialWorker(t, e.URL()) // registers without pid: hidden
	hidden.result("engine::workers::register", map[string]any{"name": "no-pid"})

	var out struct {
		Workers []map[string]any `json:"workers"`
	}
	mustUnmarshal(t, hidden.result("engine::workers::list", nil), &out)
	if len(out.Workers) != 2 {
		t.Fatalf("workers = %v; want alpha and zeta only", out.Workers)
	}
	if out.Workers[0]["name"] != "alpha" || out.Workers[1]["name"] != "zeta-worker" {
		t.Fatalf("order/sanitizing wrong: %v", out.Workers)
	}
	z := out.Workers[1]
	want := map[string]any{"id": b.id, "runtime": "node", "version": "0.22.1", "os": "linux", "pid": float64(42),
		"status": "connected", "function_count": float64(2), "active_invocations": float64(0),
		"namespace": "default", "description": "the z one", "ip_address": "127.0.0.1"}
	for k, v := range want {
		if z[k] != v {
			t.Errorf("%s = %v; want %v", k, z[k], v)
		}
	}
	if ms, _ := z["connected_at_ms"].(float64); ms <= 0 {
		t.Errorf("connected_at_ms = %v", z["connected_at_ms"])
	}
	mustUnmarshal(t, hidden.result("engine::workers::list", map[string]any{"runtime": "go"}), &out)
	if len(out.Workers) != 1 || out.Workers[0]["name"] != "alpha" {
		t.Fatalf("runtime filter: %v", out.Workers)
	}
	if code, msg := hidden.callErr("engine::workers::register", map[string]any{"pid": "x"}); code != "deserialization_error" || !strings.Contains(msg, ": pid must be a non-negative integer") {
		t.Fatalf("bad pid: %s %q", code, msg)
	}
}

func TestFunctionsList(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	w.hello("pub-worker", 1)
	w.register("pub::b", map[string]any{"description": "Second", "request_format": map[string]any{"type": "object"},
		"response_format": map[string]any{"type": "string"}, "metadata": map[string]any{"owner": "me"}})
	w.register("pub::a", nil)
	w.register("pub::secret", map[string]any{"metadata": map[string]any{"internal": true}})
	anon := dialWorker(t, e.URL())
	anon.register("anon::x", map[string]any{"description": "no worker name"})

	list := func(input any) []map[string]any {
		var out struct {
			Functions []map[string]any `json:"functions"`
		}
		mustUnmarshal(t, w.result("engine::functions::list", input), &out)
		return out.Functions
	}
	ids := func(fs []map[string]any) string {
		var s []string
		for _, f := range fs {
			s = append(s, f["function_id"].(string))
		}
		return strings.Join(s, ",")
	}
	all := list(nil)
	if got := ids(all); got != "anon::x,pub::a,pub::b,publish,state::delete,state::get,state::list,state::list_groups,state::set,state::update" {
		t.Fatalf("ids = %s", got)
	}
	byID := map[string]map[string]any{}
	for _, f := range all {
		byID[f["function_id"].(string)] = f
	}
	pb := byID["pub::b"]
	if pb["worker_name"] != "pub-worker" || pb["namespace"] != "default" || pb["description"] != "Second" ||
		pb["request_format"].(map[string]any)["type"] != "object" || pb["response_format"].(map[string]any)["type"] != "string" ||
		pb["metadata"].(map[string]any)["owner"] != "me" {
		t.Fatalf("pub::b = %v", pb)
	}
	pa := byID["pub::a"]
	if v, ok := pa["request_format"]; !ok || v != nil {
		t.Fatalf("missing formats must be listed as null: %v", pa)
	}
	if _, ok := pa["description"]; ok {
		t.Fatalf("empty description must be omitted: %v", pa)
	}
	if byID["anon::x"]["worker_name"] != "anon" || byID["state::set"]["worker_name"] != "state" {
		t.Fatalf("worker_name fallback to the first segment: %v %v", byID["anon::x"], byID["state::set"])
	}
	if byID["state::set"]["request_format"] == nil {
		t.Fatal("built-ins must carry their schemas")
	}
	withInternal := ids(list(map[string]any{"include_internal": true}))
	if !strings.Contains(withInternal, "pub::secret") || !strings.Contains(withInternal, "engine::functions::list") {
		t.Fatalf("include_internal: %s", withInternal)
	}
	if got := ids(list(map[string]any{"prefix": "pub::"})); got != "pub::a,pub::b" {
		t.Fatalf("prefix: %s", got)
	}
	if got := ids(list(map[string]any{"search": "SECOND"})); got != "pub::b" {
		t.Fatalf("search: %s", got)
	}
	if got := ids(list(map[string]any{"worker": "pub-worker"})); got != "pub::a,pub::b" {
		t.Fatalf("worker: %s", got)
	}
	if got := ids(list(map[string]any{"workers": []string{"anon", "state"}})); !strings.HasPrefix(got, "anon::x,state::") {
		t.Fatalf("workers: %s", got)
	}
	if code, msg := w.callErr("engine::functions::list", map[string]any{"prefix": 3}); code != "deserialization_error" || !strings.Contains(msg, ": prefix must be a string, got 3") {
		t.Fatalf("bad prefix: %s %q", code, msg)
	}
}

func TestFunctionsInfo(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	w.register("pub::f", map[string]any{"description": "F", "request_format": map[string]any{"type": "object"}})
	w.send(map[string]any{"type": "registertrigger", "id": "t1", "trigger_type": "state", "function_id": "pub::f", "config": map[string]any{"scope": "s"}})
	w.sync()

	var d map[string]any
	mustUnmarshal(t, w.result("engine::functions::info", map[string]any{"function_id": "pub::f"}), &d)
	if d["function_id"] != "pub::f" || d["worker_name"] != "pub" || d["request_schema"].(map[string]any)["type"] != "object" {
		t.Fatalf("detail = %v", d)
	}
	if _, ok := d["response_schema"]; ok {
		t.Fatalf("absent response_schema must be omitted: %v", d)
	}
	if _, ok := d["request_format"]; ok {
		t.Fatalf("info renames request_format to request_schema: %v", d)
	}
	trig := d["registered_triggers"].([]any)
	if len(trig) != 1 || trig[0].(map[string]any)["id"] != "t1" || trig[0].(map[string]any)["trigger_type"] != "state" {
		t.Fatalf("registered_triggers = %v", trig)
	}

	var batch struct {
		Functions []map[string]any `json:"functions"`
	}
	mustUnmarshal(t, w.result("engine::functions::info", map[string]any{"function_ids": []string{"pub::f", "nope", "pub::f", "state::get"}}), &batch)
	if len(batch.Functions) != 3 || batch.Functions[1]["error"] != "not_found" || batch.Functions[2]["function_id"] != "state::get" {
		t.Fatalf("batch = %v", batch.Functions)
	}
	if code, msg := w.callErr("engine::functions::info", map[string]any{"function_id": "nope::x"}); code != "NOT_FOUND" || !strings.Contains(msg, "nope::x") {
		t.Fatalf("not found: %s %q", code, msg)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"function_id": "a", "function_ids": []string{"b"}},
		map[string]any{"function_ids": []string{}}} {
		if code, _ := w.callErr("engine::functions::info", bad); code != "INVALID_ARGUMENTS" {
			t.Fatalf("%v: code %s", bad, code)
		}
	}
	if code, _ := w.callErr("engine::functions::info", nil); code != "deserialization_error" {
		t.Fatalf("null input: %s", code)
	}
}

func TestTriggerIntrospection(t *testing.T) {
	e := startEngine(t, Config{})
	p := dialWorker(t, e.URL())
	p.hello("skills", 3)
	p.send(map[string]any{"type": "registertriggertype", "id": "skills::on-change", "description": "Skill changes",
		"trigger_request_format": map[string]any{"type": "object"}})
	p.sync()
	r := dialWorker(t, e.URL())
	r.register("sub::cb", nil)
	r.send(map[string]any{"type": "registertrigger", "id": "b1", "trigger_type": "skills::on-change", "function_id": "sub::cb",
		"config": map[string]any{"filter": strings.Repeat("long", 50)}})
	r.sync()
	p.expect("registertrigger")

	var tl struct {
		Triggers []map[string]any `json:"triggers"`
	}
	mustUnmarshal(t, r.result("engine::triggers::list", nil), &tl)
	if len(tl.Triggers) != 3 || tl.Triggers[0]["id"] != "skills::on-change" || tl.Triggers[0]["worker_name"] != "skills" ||
		tl.Triggers[0]["description"] != "Skill changes" || tl.Triggers[1]["id"] != "state" || tl.Triggers[0]["namespace"] != "default" ||
		tl.Triggers[2]["id"] != "subscribe" || tl.Triggers[2]["worker_name"] != "iii-pubsub" {
		t.Fatalf("triggers = %v", tl.Triggers)
	}
	var ti map[string]any
	mustUnmarshal(t, r.result("engine::triggers::info", map[string]any{"id": "skills::on-change"}), &ti)
	if ti["instance_count"] != float64(1) || ti["configuration_schema"].(map[string]any)["type"] != "object" {
		t.Fatalf("info = %v", ti)
	}
	if code, _ := r.callErr("engine::triggers::info", map[string]any{"id": "nope"}); code != "NOT_FOUND" {
		t.Fatalf("code = %s", code)
	}
	var rl struct {
		Registered []map[string]any `json:"registered_triggers"`
	}
	mustUnmarshal(t, r.result("engine::registered-triggers::list", map[string]any{"trigger_type": "skills::on-change"}), &rl)
	if len(rl.Registered) != 1 {
		t.Fatalf("registered = %v", rl.Registered)
	}
	reg := rl.Registered[0]
	if reg["id"] != "b1" || reg["function_id"] != "sub::cb" || reg["worker_name"] != "sub" ||
		!strings.HasSuffix(reg["config_summary"].(string), "…") || reg["config"].(map[string]any)["filter"] == nil {
		t.Fatalf("registered trigger = %v", reg)
	}
}

func TestStateFunctions(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())

	if got := string(w.result("state::set", map[string]any{"scope": "s", "key": "b", "value": map[string]any{"n": 1}})); got != `{"old_value":null,"new_value":{"n":1}}` {
		t.Fatalf("first set = %s", got)
	}
	if got := string(w.result("state::set", map[string]any{"scope": "s", "key": "b", "data": map[string]any{"n": 2}})); got != `{"old_value":{"n":1},"new_value":{"n":2}}` {
		t.Fatalf("set with data alias = %s", got)
	}
	w.result("state::set", map[string]any{"scope": "s", "key": "a", "value": "A"})
	w.result("state::set", map[string]any{"scope": "other", "key": "k", "value": nil})
	if got := string(w.result("state::get", map[string]any{"scope": "s", "key": "b"})); got != `{"n":2}` {
		t.Fatalf("get = %s", got)
	}
	missing := w.call("state::get", map[string]any{"scope": "s", "key": "nope"})
	if _, ok := missing.m["result"]; ok || missing.m["error"] != nil {
		t.Fatalf("get of a missing key must have no result key: %s", missing.raw)
	}
	if got := string(w.result("state::get", map[string]any{"scope": "other", "key": "k"})); got != `null` {
		t.Fatalf("stored null = %s", got)
	}
	if got := string(w.result("state::list", map[string]any{"scope": "s"})); got != `[{"n":2},"A"]` {
		t.Fatalf("list = %s (values in insertion order)", got)
	}
	if got := string(w.result("state::list", map[string]any{"scope": "empty"})); got != `[]` {
		t.Fatalf("list of unknown scope = %s", got)
	}
	if got := string(w.result("state::list_groups", map[string]any{})); got != `{"groups":["other","s"]}` {
		t.Fatalf("list_groups = %s", got)
	}
	if got := string(w.result("state::delete", map[string]any{"scope": "s", "key": "b"})); got != `{"n":2}` {
		t.Fatalf("delete returns the raw old value, got %s", got)
	}
	gone := w.call("state::delete", map[string]any{"scope": "s", "key": "b"})
	if _, ok := gone.m["result"]; ok {
		t.Fatalf("delete of a missing key must have no result: %s", gone.raw)
	}

	// Input errors name the field.
	for _, c := range []struct {
		fn    string
		input any
		field string
	}{
		{"state::get", map[string]any{"scope": "s"}, ": key is required (expected a string)"},
		{"state::get", nil, "JSON object"},
		{"state::set", map[string]any{"scope": "s", "key": "k"}, ": value is required"},
		{"state::set", map[string]any{"scope": 1, "key": "k", "value": 1}, ": scope must be a string, got 1"},
		{"state::set", map[string]any{"scope": "", "key": "k", "value": 1}, "scope must be a non-empty string"},
		{"state::list", map[string]any{}, ": scope is required"},
		{"state::update", map[string]any{"scope": "s", "key": "k"}, ": ops is required"},
		{"state::update", map[string]any{"scope": "s", "key": "k", "ops": "x"}, ": ops must be an array"},
		{"state::delete", []int{1}, "got an array"},
	} {
		code, msg := w.callErr(c.fn, c.input)
		if code != "deserialization_error" || !strings.Contains(msg, c.field) {
			t.Errorf("%s(%v): %s %q; want deserialization_error naming %s", c.fn, c.input, code, msg, c.field)
		}
	}
}

func TestStateUpdate(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	var r struct {
		Old    json.RawMessage  `json:"old_value"`
		New    json.RawMessage  `json:"new_value"`
		Errors []map[string]any `json:"errors"`
	}
	mustUnmarshal(t, w.result("state::update", map[string]any{"scope": "u", "key": "k", "ops": []any{
		map[string]any{"type": "set", "path": "name", "value": "x"},
		map[string]any{"type": "increment", "path": "count", "by": 5},
		map[string]any{"type": "decrement", "path": "count", "by": 2},
		map[string]any{"type": "append", "path": "tags", "value": "t1"},
		map[string]any{"type": "merge", "value": map[string]any{"m": true}},
		map[string]any{"type": "merge", "path": []string{"nested", "deep"}, "value": map[string]any{"z": 1}},
	}}), &r)
	if string(r.Old) != "null" || string(r.New) != `{"count":3,"m":true,"name":"x","nested":{"deep":{"z":1}},"tags":["t1"]}` || r.Errors != nil {
		t.Fatalf("update = %s %s %v", r.Old, r.New, r.Errors)
	}
	mustUnmarshal(t, w.result("state::update", map[string]any{"scope": "u", "key": "k", "ops": []any{
		map[string]any{"type": "increment", "path": "name", "by": 1},
		map[string]any{"type": "remove", "path": "tags"},
		map[string]any{"type": "explode"},
		map[string]any{"type": "increment", "path": "count", "by": 0.5},
	}}), &r)
	if string(r.New) != `{"count":3.5,"m":true,"name":"x","nested":{"deep":{"z":1}}}` {
		t.Fatalf("new = %s", r.New)
	}
	if len(r.Errors) != 2 || r.Errors[0]["op_index"] != float64(0) || r.Errors[0]["code"] != "TYPE_MISMATCH" ||
		r.Errors[1]["op_index"] != float64(2) || r.Errors[1]["code"] != "INVALID_OP" {
		t.Fatalf("errors = %v", r.Errors)
	}
	if got := string(w.result("state::get", map[string]any{"scope": "u", "key": "k"})); got != string(r.New) {
		t.Fatalf("stored %s; want %s", got, r.New)
	}
	mustUnmarshal(t, w.result("state::update", map[string]any{"scope": "u", "key": "k", "ops": []any{
		map[string]any{"type": "set", "path": "", "value": 10},
	}}), &r)
	if string(r.New) != "10" {
		t.Fatalf("root set = %s", r.New)
	}
}

func TestStateTrigger(t *testing.T) {
	e := startEngine(t, Config{})
	sub := dialWorker(t, e.URL())
	sub.register("sub::on-state", nil)
	sub.register("sub::cond", nil)
	sub.send(map[string]any{"type": "registertrigger", "id": "st1", "trigger_type": "state", "function_id": "sub::on-state",
		"config": map[string]any{"scope": "watched"}, "metadata": map[string]any{"tag": "md"}})
	sub.send(map[string]any{"type": "registertrigger", "id": "bad", "trigger_type": "state", "function_id": "sub::on-state",
		"config": "not an object"})
	rej := sub.expect("triggerregistrationresult")
	if rej.str("id") != "bad" || rej.obj("error")["code"] != "trigger_registration_failed" {
		t.Fatalf("bad state config: %s", rej.raw)
	}
	sub.sync()
	writer := dialWorker(t, e.URL())

	expectEvent := func(event string, oldV, newV any) {
		t.Helper()
		in := sub.expect("invokefunction")
		d := in.obj("data")
		if in.str("function_id") != "sub::on-state" || d["type"] != "state" || d["event_type"] != event ||
			d["scope"] != "watched" || d["key"] != "k" || !jsonEqual(d["old_value"], oldV) || !jsonEqual(d["new_value"], newV) {
			t.Fatalf("event = %s; want %s", in.raw, event)
		}
		if _, ok := d["_caller_worker_id"]; ok {
			t.Fatalf("engine-originated calls carry no _caller_worker_id: %s", in.raw)
		}
		if in.obj("metadata")["tag"] != "md" {
			t.Fatalf("binding metadata not delivered: %s", in.raw)
		}
		sub.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"), "function_id": "sub::on-state", "result": nil})
	}
	writer.result("state::set", map[string]any{"scope": "elsewhere", "key": "k", "value": 0})
	writer.result("state::set", map[string]any{"scope": "watched", "key": "k", "value": 1})
	expectEvent("state:created", nil, float64(1))
	writer.result("state::set", map[string]any{"scope": "watched", "key": "k", "value": 2})
	expectEvent("state:updated", float64(1), float64(2))
	writer.result("state::update", map[string]any{"scope": "watched", "key": "k", "ops": []any{map[string]any{"type": "increment", "path": "", "by": 1}}})
	expectEvent("state:updated", float64(2), float64(3))
	writer.result("state::delete", map[string]any{"scope": "watched", "key": "k"})
	expectEvent("state:deleted", float64(3), nil)

	// A condition returning false skips the target.
	sub.send(map[string]any{"type": "unregistertrigger", "id": "st1", "trigger_type": "state"})
	sub.send(map[string]any{"type": "registertrigger", "id": "st2", "trigger_type": "state", "function_id": "sub::on-state",
		"config": map[string]any{"key": "c", "condition_function_id": "sub::cond"}})
	sub.sync()
	writer.result("state::set", map[string]any{"scope": "any", "key": "c", "value": 1})
	cond := sub.expect("invokefunction")
	if cond.str("function_id") != "sub::cond" {
		t.Fatalf("condition first: %s", cond.raw)
	}
	sub.send(map[string]any{"type": "invocationresult", "invocation_id": cond.str("invocation_id"), "function_id": "sub::cond", "result": false})
	writer.result("state::set", map[string]any{"scope": "any", "key": "c", "value": 2})
	cond2 := sub.expect("invokefunction") // the first event was skipped, so this is the next condition call
	if cond2.str("function_id") != "sub::cond" {
		t.Fatalf("target called although the condition said false: %s", cond2.raw)
	}
	sub.send(map[string]any{"type": "invocationresult", "invocation_id": cond2.str("invocation_id"), "function_id": "sub::cond", "result": true})
	if in := sub.expect("invokefunction"); in.str("function_id") != "sub::on-state" || in.obj("data")["new_value"] != float64(2) {
		t.Fatalf("target after true condition: %s", in.raw)
	}
}

// skip_own_writes leaves out the binding owner's own writes and still
// delivers everybody else's.
func TestStateTriggerSkipOwnWrites(t *testing.T) {
	e := startEngine(t, Config{})
	sub := dialWorker(t, e.URL())
	sub.register("sub::on-state", nil)
	sub.send(map[string]any{"type": "registertrigger", "id": "own", "trigger_type": "state", "function_id": "sub::on-state",
		"config": map[string]any{"scope": "mirror", "skip_own_writes": true}})
	sub.sync()
	other := dialWorker(t, e.URL())

	sub.result("state::set", map[string]any{"scope": "mirror", "key": "mine", "value": 1})
	sub.result("state::delete", map[string]any{"scope": "mirror", "key": "mine"})
	other.result("state::set", map[string]any{"scope": "mirror", "key": "theirs", "value": 2})
	// The first event that arrives is the other worker's: the two own
	// writes, made earlier on the same FIFO, were never queued.
	in := sub.expect("invokefunction")
	if d := in.obj("data"); d["key"] != "theirs" || d["new_value"] != float64(2) {
		t.Fatalf("event = %s; want only the other worker's write", in.raw)
	}
	sub.send(map[string]any{"type": "invocationresult", "invocation_id": in.str("invocation_id"), "function_id": "sub::on-state", "result": nil})

	sub.send(map[string]any{"type": "registertrigger", "id": "bad", "trigger_type": "state", "function_id": "sub::on-state",
		"config": map[string]any{"skip_own_writes": "yes"}})
	if rej := sub.expect("triggerregistrationresult"); rej.obj("error")["code"] != "trigger_registration_failed" {
		t.Fatalf("non-boolean skip_own_writes: %s", rej.raw)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestVoidBuiltinCall(t *testing.T) {
	e := startEngine(t, Config{})
	w := dialWorker(t, e.URL())
	w.send(map[string]any{"type": "invokefunction", "function_id": "state::set", "data": map[string]any{"scope": "v", "key": "k", "value": 1},
		"action": map[string]any{"type": "void"}})
	// Built-ins run off the read loop; poll until the write is visible.
	for i := 0; ; i++ {
		if r := w.call("state::get", map[string]any{"scope": "v", "key": "k"}); string(r.raw) != "" {
			if _, ok := r.m["result"]; ok {
				break
			}
		}
		if i > 1000 {
			t.Fatal("void state::set never applied")
		}
	}
	w.send(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(), "function_id": "state::get",
		"data": map[string]any{"scope": "v", "key": "k"}, "action": map[string]any{"type": "void"}})
	w.sync()
}

// A publisher joining and leaving is one info line each, with its name.
func TestWorkerJoinAndLeaveAreLoggedAtInfo(t *testing.T) {
	sink := &logSink{}
	e := startEngine(t, Config{Logger: slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	w := dialWorker(t, e.URL())
	w.hello("resend-publisher", 7)
	w.sync()
	sink.waitFor(t, `msg="worker joined" component=iii-engine name=resend-publisher runtime=go version=1.0`)
	_ = w.ws.Close()
	sink.waitFor(t, `msg="worker left" component=iii-engine name=resend-publisher`)
}
