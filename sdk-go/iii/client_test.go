package iii

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/iii-skills/skills/sdk-go/wire"
)

func echo(_ context.Context, data json.RawMessage) (any, error) { return data, nil }

type nopTriggerHandler struct{}

func (nopTriggerHandler) RegisterTrigger(context.Context, TriggerConfig) error   { return nil }
func (nopTriggerHandler) UnregisterTrigger(context.Context, TriggerConfig) error { return nil }

func mustUUIDv4(t *testing.T, what, s string) {
	t.Helper()
	u, err := uuid.Parse(s)
	if err != nil || u.Version() != 4 || u.String() != s {
		t.Fatalf("%s = %q, want a lowercase UUID v4", what, s)
	}
}

func TestHandshakeOrderAndContents(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e, WithName("pub-1"), WithDescription("publishes things"))
	if _, err := c.RegisterFunction("svc::b", echo, RegisterFunctionOptions{Description: "B", Metadata: map[string]any{"owner": "me"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterFunction("svc::a", echo); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTrigger("tick-1", "demo::tick", "svc::a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterTriggerType("demo::tick", "", nopTriggerHandler{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithLimit()
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	fc := e.waitConn(t)

	hello := fc.next(t)
	if hello.Type != wire.TypeInvokeFunction || hello.FunctionID != "engine::workers::register" {
		t.Fatalf("first frame = %s, want the engine::workers::register hello", hello.raw)
	}
	if hello.Action == nil || hello.Action.Type != wire.ActionVoid || hello.has("invocation_id") {
		t.Fatalf("hello must be void without invocation_id: %s", hello.raw)
	}
	var data map[string]any
	if err := json.Unmarshal(hello.Data, &data); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "pub-1", "description": "publishes things", "runtime": "go", "version": Version,
		"os": runtime.GOOS + " " + runtime.GOARCH, "pid": float64(os.Getpid())}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("hello data[%q] = %v, want %v", k, data[k], v)
		}
	}

	tt := fc.next(t)
	if tt.Type != wire.TypeRegisterTriggerType || tt.ID != "demo::tick" || !tt.has("description") {
		t.Fatalf("second frame = %s, want registertriggertype with a description key", tt.raw)
	}
	fb := fc.next(t)
	fa := fc.next(t)
	if fb.Type != wire.TypeRegisterFunction || fb.ID != "svc::b" || fb.Description != "B" || string(fb.Metadata) != `{"owner":"me"}` {
		t.Fatalf("third frame = %s, want registerfunction svc::b with description and metadata", fb.raw)
	}
	if fa.Type != wire.TypeRegisterFunction || fa.ID != "svc::a" {
		t.Fatalf("fourth frame = %s, want registerfunction svc::a", fa.raw)
	}
	tr := fc.next(t)
	if tr.Type != wire.TypeRegisterTrigger || tr.ID != "tick-1" || tr.TriggerType != "demo::tick" || tr.FunctionID != "svc::a" || string(tr.Config) != "{}" {
		t.Fatalf("fifth frame = %s, want registertrigger tick-1 with config {}", tr.raw)
	}

	eventually(t, "worker id stored", func() bool { return c.WorkerID() == fc.workerID })
	if !c.Connected() {
		t.Fatal("Connected() = false after Connect")
	}
}

func TestTriggerRoundTrip(t *testing.T) {
	e := newFakeEngine(t)
	owner := newTestClient(t, e)
	type seen struct {
		data json.RawMessage
		meta json.RawMessage
		id   string
	}
	got := make(chan seen, 1)
	if _, err := owner.RegisterFunction("math::add", func(ctx context.Context, data json.RawMessage) (any, error) {
		meta, _ := MetadataFromContext(ctx)
		got <- seen{data, meta, InvocationIDFromContext(ctx)}
		var in struct{ A, B int }
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, err
		}
		return map[string]int{"sum": in.A + in.B}, nil
	}); err != nil {
		t.Fatal(err)
	}
	connect(t, e, owner)
	caller := newTestClient(t, e)
	cfc := connect(t, e, caller)

	ctx, cancel := contextWithLimit()
	defer cancel()
	res, err := caller.Trigger(ctx, TriggerRequest{FunctionID: "math::add", Data: json.RawMessage(`{"A":2,"B":3}`),
		Metadata: json.RawMessage(`{"trace":"t1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"sum":5}` {
		t.Fatalf("result = %s, want {\"sum\":5}", res)
	}
	s := <-got
	if !strings.Contains(string(s.data), `"_caller_worker_id"`) {
		t.Errorf("handler data %s lacks the engine-injected _caller_worker_id", s.data)
	}
	if string(s.meta) != `{"trace":"t1"}` {
		t.Errorf("MetadataFromContext = %s, want {\"trace\":\"t1\"}", s.meta)
	}
	call := cfc.waitFor(t, "the invokefunction", func(f frame) bool { return f.Type == wire.TypeInvokeFunction })
	mustUUIDv4(t, "invocation_id", call.InvocationID)
	if s.id != call.InvocationID {
		t.Errorf("InvocationIDFromContext = %q, want %q", s.id, call.InvocationID)
	}
	if call.Action != nil {
		t.Errorf("awaited call carries action %+v", call.Action)
	}

	// A nil payload is still sent as data: {}.
	if _, err := caller.Trigger(ctx, TriggerRequest{FunctionID: "math::add"}); err != nil {
		t.Fatal(err)
	}
	<-got
	call = cfc.waitFor(t, "the second invokefunction", func(f frame) bool { return f.Type == wire.TypeInvokeFunction })
	if !call.has("data") || string(call.Data) != "{}" {
		t.Fatalf("nil payload sent as %s, want data {}", call.raw)
	}
}

func TestTriggerResultAbsentIsNil(t *testing.T) {
	e := newFakeEngine(t)
	e.builtin("state::get", func(json.RawMessage) (json.RawMessage, *wire.ErrorBody) { return nil, nil })
	c := newTestClient(t, e)
	connect(t, e, c)
	ctx, cancel := contextWithLimit()
	defer cancel()
	res, err := c.Trigger(ctx, TriggerRequest{FunctionID: "state::get", Data: json.RawMessage(`{"scope":"s","key":"k"}`)})
	if err != nil || res != nil {
		t.Fatalf("Trigger = (%s, %v), want (nil, nil)", res, err)
	}
}

func TestInboundInvocationAnswers(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	mustRegister := func(id string, h Handler) {
		t.Helper()
		if _, err := c.RegisterFunction(id, h); err != nil {
			t.Fatal(err)
		}
	}
	mustRegister("t::ok", func(context.Context, json.RawMessage) (any, error) { return []int{1, 2}, nil })
	mustRegister("t::nil", func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	mustRegister("t::err", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("disk on fire") })
	mustRegister("t::coded", func(context.Context, json.RawMessage) (any, error) {
		return nil, fmt.Errorf("wrapped: %w", &InvocationError{Code: "NOT_FOUND", Message: "no such skill", Stacktrace: "st"})
	})
	mustRegister("t::panic", func(context.Context, json.RawMessage) (any, error) { panic("boom") })
	mustRegister("t::unencodable", func(context.Context, json.RawMessage) (any, error) { return func() {}, nil })
	fc := connect(t, e, c)

	ask := func(fn string) frame {
		t.Helper()
		id := uuid.NewString()
		fc.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: id, FunctionID: fn, Data: json.RawMessage(`{"x":1,"_caller_worker_id":"w"}`)})
		f := fc.waitFor(t, "result of "+fn, func(f frame) bool { return f.Type == wire.TypeInvocationResult && f.InvocationID == id })
		if f.FunctionID != fn {
			t.Errorf("%s: result function_id = %q", fn, f.FunctionID)
		}
		return f
	}
	if f := ask("t::ok"); f.Error != nil || string(f.Result) != "[1,2]" {
		t.Errorf("t::ok answered %s", f.raw)
	}
	if f := ask("t::nil"); f.Error != nil || f.Result != nil {
		t.Errorf("t::nil answered %s", f.raw)
	}
	if f := ask("t::err"); f.Error == nil || f.Error.Code != wire.CodeInvocationFailed || f.Error.Message != "disk on fire" {
		t.Errorf("t::err answered %s", f.raw)
	}
	if f := ask("t::coded"); f.Error == nil || f.Error.Code != "NOT_FOUND" || f.Error.Message != "no such skill" || f.Error.Stacktrace != "st" {
		t.Errorf("t::coded answered %s", f.raw)
	}
	if f := ask("t::panic"); f.Error == nil || f.Error.Code != wire.CodeInvocationFailed || !strings.Contains(f.Error.Message, "boom") || f.Error.Stacktrace == "" {
		t.Errorf("t::panic answered %s", f.raw)
	}
	if f := ask("t::unencodable"); f.Error == nil || f.Error.Code != wire.CodeInvocationFailed || f.Result != nil {
		t.Errorf("t::unencodable answered %s", f.raw)
	}
	if f := ask("t::missing"); f.Error == nil || f.Error.Code != wire.CodeFunctionNotFound {
		t.Errorf("t::missing answered %s", f.raw)
	}
	// The connection survived all of that.
	if !c.Connected() {
		t.Fatal("client disconnected after handler failures")
	}
}

func TestInvocationErrorPropagation(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	if _, err := c.RegisterFunction("skills::get", func(context.Context, json.RawMessage) (any, error) {
		return nil, NewInvocationError("NOT_FOUND", "skill x not found")
	}); err != nil {
		t.Fatal(err)
	}
	connect(t, e, c)
	ctx, cancel := contextWithLimit()
	defer cancel()
	_, err := c.Trigger(ctx, TriggerRequest{FunctionID: "skills::get"})
	var ie *InvocationError
	if !errors.As(err, &ie) || ie.Code != "NOT_FOUND" || ie.Message != "skill x not found" || ie.FunctionID != "skills::get" {
		t.Fatalf("err = %#v, want InvocationError NOT_FOUND", err)
	}
	if got := err.Error(); got != "NOT_FOUND: skill x not found (function skills::get)" {
		t.Errorf("Error() = %q", got)
	}
	_, err = c.Trigger(ctx, TriggerRequest{FunctionID: "nobody::home"})
	if !errors.As(err, &ie) || ie.Code != wire.CodeFunctionNotFound {
		t.Fatalf("unknown function: err = %v, want function_not_found", err)
	}
}

type addReq struct {
	A int    `json:"a" jsonschema:"required"`
	B int    `json:"b"`
	N string `json:"note,omitempty"`
}
type addResp struct {
	Sum int `json:"sum"`
}

func TestTypedFunction(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	if _, err := RegisterFunctionTyped(c, "math::typed", func(_ context.Context, r addReq) (addResp, error) {
		return addResp{Sum: r.A + r.B}, nil
	}, RegisterFunctionOptions{Description: "adds"}); err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterFunctionTyped(c, "math::given", func(_ context.Context, r addReq) (addResp, error) {
		return addResp{}, nil
	}, RegisterFunctionOptions{RequestFormat: map[string]string{"type": "object"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithLimit()
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	fc := e.waitConn(t)
	reg := fc.waitFor(t, "registerfunction math::typed", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "math::typed" })
	var req struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(reg.RequestFormat, &req); err != nil {
		t.Fatalf("request_format %s: %v", reg.RequestFormat, err)
	}
	if req.Type != "object" || req.Properties["a"]["type"] != "integer" || req.Properties["note"]["type"] != "string" ||
		strings.Join(req.Required, ",") != "a,b" {
		t.Errorf("request_format = %s", reg.RequestFormat)
	}
	if !strings.Contains(string(reg.ResponseFormat), `"sum"`) || reg.Description != "adds" {
		t.Errorf("registerfunction = %s", reg.raw)
	}
	given := fc.waitFor(t, "registerfunction math::given", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "math::given" })
	if string(given.RequestFormat) != `{"type":"object"}` || !strings.Contains(string(given.ResponseFormat), `"sum"`) {
		t.Errorf("explicit formats not honoured: %s", given.raw)
	}

	res, err := c.Trigger(ctx, TriggerRequest{FunctionID: "math::typed", Data: json.RawMessage(`{"a":4,"b":5}`)})
	if err != nil || string(res) != `{"sum":9}` {
		t.Fatalf("Trigger = (%s, %v), want {\"sum\":9}", res, err)
	}
	_, err = c.Trigger(ctx, TriggerRequest{FunctionID: "math::typed", Data: json.RawMessage(`{"a":"four"}`)})
	var ie *InvocationError
	if !errors.As(err, &ie) || ie.Code != wire.CodeInvalidRequest || !strings.Contains(ie.Message, "math::typed") || !strings.Contains(ie.Message, "addReq") {
		t.Fatalf("bad payload: err = %v, want invalid_request naming the function and type", err)
	}
}

func TestSchemaForNonStructs(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  func() (json.RawMessage, error)
		want string
	}{
		{"any", func() (json.RawMessage, error) { return schemaOf[any]() }, `{}`},
		{"string", func() (json.RawMessage, error) { return schemaOf[string]() }, `"type":"string"`},
		{"map", func() (json.RawMessage, error) { return schemaOf[map[string]int]() }, `"type":"object"`},
		{"pointer", func() (json.RawMessage, error) { return schemaOf[*addResp]() }, `"sum"`},
		{"raw", func() (json.RawMessage, error) { return schemaOf[json.RawMessage]() }, `{`},
	} {
		s, err := tc.got()
		if err != nil || !strings.Contains(string(s), tc.want) {
			t.Errorf("%s: schema = %s, %v; want it to contain %s", tc.name, s, err, tc.want)
		}
	}
}

func schemaOf[T any]() (json.RawMessage, error) { return SchemaFor(reflect.TypeFor[T]()) }

func TestTriggerTimeoutAndCancel(t *testing.T) {
	e := newFakeEngine(t)
	swallowed := make(chan string, 10)
	e.setHook(func(fc *fakeConn, f frame) bool {
		if f.Type == wire.TypeInvokeFunction && f.FunctionID == "slow::fn" {
			swallowed <- f.InvocationID
			return true
		}
		return false
	})
	c := newTestClient(t, e)
	connect(t, e, c)

	_, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "slow::fn", Timeout: 20 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	<-swallowed

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Trigger(ctx, TriggerRequest{FunctionID: "slow::fn"})
		done <- err
	}()
	<-swallowed
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d pending calls left after timeout/cancel", n)
	}

	// A ctx deadline counts as a timeout too.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	_, err = c.Trigger(dctx, TriggerRequest{FunctionID: "slow::fn"})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx deadline: err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	<-swallowed

	// The client default applies when the request sets no timeout.
	c2 := newTestClient(t, e, WithInvocationTimeout(20*time.Millisecond))
	connect(t, e, c2)
	if _, err := c2.Trigger(context.Background(), TriggerRequest{FunctionID: "slow::fn"}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("default timeout: err = %v, want ErrTimeout", err)
	}
}

func TestVoidTrigger(t *testing.T) {
	e := newFakeEngine(t)
	owner := newTestClient(t, e)
	called := make(chan json.RawMessage, 1)
	if _, err := owner.RegisterFunction("log::write", func(ctx context.Context, data json.RawMessage) (any, error) {
		m, _ := MetadataFromContext(ctx)
		called <- m
		return "ignored", nil
	}); err != nil {
		t.Fatal(err)
	}
	connect(t, e, owner)
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	res, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "log::write", Data: json.RawMessage(`"line"`), Action: VoidAction(), Metadata: json.RawMessage(`7`)})
	if err != nil || res != nil {
		t.Fatalf("void Trigger = (%s, %v), want (nil, nil)", res, err)
	}
	f := fc.waitFor(t, "the void call", func(f frame) bool { return f.Type == wire.TypeInvokeFunction })
	if f.has("invocation_id") || f.Action == nil || f.Action.Type != wire.ActionVoid || string(f.Data) != `"line"` {
		t.Fatalf("void frame = %s", f.raw)
	}
	select {
	case m := <-called:
		if string(m) != "7" {
			t.Errorf("metadata = %s, want 7", m)
		}
	case <-time.After(waitLimit):
		t.Fatal("void call never reached the handler")
	}
}

func TestEnqueueTrigger(t *testing.T) {
	e := newFakeEngine(t)
	owner := newTestClient(t, e)
	ran := make(chan struct{}, 1)
	if _, err := owner.RegisterFunction("jobs::run", func(context.Context, json.RawMessage) (any, error) {
		ran <- struct{}{}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	connect(t, e, owner)
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	ctx, cancel := contextWithLimit()
	defer cancel()
	res, err := c.Trigger(ctx, TriggerRequest{FunctionID: "jobs::run", Action: EnqueueAction("default")})
	if err != nil {
		t.Fatal(err)
	}
	var receipt struct {
		ID string `json:"messageReceiptId"`
	}
	if err := json.Unmarshal(res, &receipt); err != nil || receipt.ID == "" {
		t.Fatalf("enqueue result = %s, want a messageReceiptId", res)
	}
	f := fc.waitFor(t, "the enqueue call", func(f frame) bool { return f.Type == wire.TypeInvokeFunction })
	if f.Action == nil || f.Action.Type != wire.ActionEnqueue || f.Action.Queue != "default" {
		t.Fatalf("enqueue frame = %s", f.raw)
	}
	mustUUIDv4(t, "enqueue invocation_id", f.InvocationID)
	<-ran
	_, err = c.Trigger(ctx, TriggerRequest{FunctionID: "jobs::missing", Action: EnqueueAction("default")})
	var ie *InvocationError
	if !errors.As(err, &ie) || ie.Code != wire.CodeEnqueueError {
		t.Fatalf("enqueue of a missing function: err = %v, want enqueue_error", err)
	}
}

// recordingProvider records trigger provider callbacks.
type recordingProvider struct {
	mu     sync.Mutex
	events []string
	cfgs   []TriggerConfig
	fail   error
	ch     chan string
}

func newRecordingProvider() *recordingProvider { return &recordingProvider{ch: make(chan string, 100)} }

func (p *recordingProvider) RegisterTrigger(_ context.Context, cfg TriggerConfig) error {
	p.mu.Lock()
	fail := p.fail
	p.events = append(p.events, "register "+cfg.ID)
	p.cfgs = append(p.cfgs, cfg)
	p.mu.Unlock()
	p.ch <- "register " + cfg.ID
	return fail
}

func (p *recordingProvider) UnregisterTrigger(_ context.Context, cfg TriggerConfig) error {
	p.mu.Lock()
	p.events = append(p.events, "unregister "+cfg.ID)
	p.cfgs = append(p.cfgs, cfg)
	p.mu.Unlock()
	p.ch <- "unregister " + cfg.ID
	return nil
}

func (p *recordingProvider) wait(t *testing.T, want string) TriggerConfig {
	t.Helper()
	select {
	case got := <-p.ch:
		if got != want {
			t.Fatalf("provider callback = %q, want %q", got, want)
		}
	case <-time.After(waitLimit):
		t.Fatalf("provider callback %q never came", want)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfgs[len(p.cfgs)-1]
}

func TestTriggerTypeProvider(t *testing.T) {
	e := newFakeEngine(t)
	prov := newRecordingProvider()
	p := newTestClient(t, e)
	ref, err := p.RegisterTriggerType("demo::on-change", "Fires on change", prov, TriggerTypeOptions{
		TriggerRequestFormat: map[string]string{"type": "object"},
	})
	if err != nil {
		t.Fatal(err)
	}
	pfc := connect(t, e, p)
	tt := pfc.waitFor(t, "registertriggertype", func(f frame) bool { return f.Type == wire.TypeRegisterTriggerType })
	if tt.Description != "Fires on change" || string(tt.TriggerRequestFormat) != `{"type":"object"}` {
		t.Fatalf("registertriggertype = %s", tt.raw)
	}

	r := newTestClient(t, e)
	got := make(chan json.RawMessage, 10)
	if _, err := r.RegisterFunction("sub::notify", func(ctx context.Context, data json.RawMessage) (any, error) {
		m, _ := MetadataFromContext(ctx)
		got <- m
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	connect(t, e, r)
	if err := r.RegisterTrigger("b1", "demo::on-change", "sub::notify",
		json.RawMessage(`{"prefix":"a/"}`), json.RawMessage(`{"who":"r"}`)); err != nil {
		t.Fatal(err)
	}

	cfg := prov.wait(t, "register b1")
	if cfg.FunctionID != "sub::notify" || string(cfg.Config) != `{"prefix":"a/"}` || string(cfg.Metadata) != `{"who":"r"}` {
		t.Fatalf("provider got %+v", cfg)
	}
	res := pfc.waitFor(t, "triggerregistrationresult", func(f frame) bool { return f.Type == wire.TypeTriggerRegistrationResult })
	if res.Error != nil || res.ID != "b1" || res.TriggerType != "demo::on-change" || res.FunctionID != "sub::notify" {
		t.Fatalf("triggerregistrationresult = %s", res.raw)
	}
	if b := ref.Bindings(); len(b) != 1 || b[0].ID != "b1" {
		t.Fatalf("Bindings() = %+v", b)
	}

	// Firing invokes the bound function with the binding's metadata.
	if err := ref.Fire(context.Background(), json.RawMessage(`{"op":"register","id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if string(m) != `{"who":"r"}` {
			t.Errorf("fired call metadata = %s", m)
		}
	case <-time.After(waitLimit):
		t.Fatal("Fire never reached the bound function")
	}
	// The fire names its binding, so that an engine that stamps callers
	// runs it as the binding's registrant, not as the provider.
	if f := pfc.waitFor(t, "the fired invokefunction", func(f frame) bool {
		return f.Type == wire.TypeInvokeFunction && f.FunctionID == "sub::notify"
	}); f.TriggerID != "b1" {
		t.Errorf("fired invokefunction names trigger_id %q; want the binding b1: %s", f.TriggerID, f.raw)
	}

	// Unregistering the binding reaches the provider with the stored config.
	if err := r.UnregisterTrigger("b1"); err != nil {
		t.Fatal(err)
	}
	cfg = prov.wait(t, "unregister b1")
	if cfg.FunctionID != "sub::notify" || string(cfg.Config) != `{"prefix":"a/"}` {
		t.Fatalf("unregister got %+v, want the stored binding", cfg)
	}
	if b := ref.Bindings(); len(b) != 0 {
		t.Fatalf("Bindings() after unregister = %+v", b)
	}
	if err := r.UnregisterTrigger("b1"); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("second Unregister = %v, want ErrNotRegistered", err)
	}

	// Unknown trigger type and a failing handler are reported.
	pfc.send(wire.Message{Type: wire.TypeRegisterTrigger, ID: "b2", TriggerType: "demo::nope", FunctionID: "f", Config: json.RawMessage(`{}`)})
	res = pfc.waitFor(t, "result for b2", func(f frame) bool { return f.Type == wire.TypeTriggerRegistrationResult && f.ID == "b2" })
	if res.Error == nil || res.Error.Code != wire.CodeTriggerTypeNotFound || res.Error.Message != "Trigger type not found" || res.FunctionID != "f" {
		t.Fatalf("unknown type answered %s", res.raw)
	}
	prov.mu.Lock()
	prov.fail = errors.New("bad config")
	prov.mu.Unlock()
	pfc.send(wire.Message{Type: wire.TypeRegisterTrigger, ID: "b3", TriggerType: "demo::on-change", FunctionID: "f", Config: json.RawMessage(`{}`)})
	prov.wait(t, "register b3")
	res = pfc.waitFor(t, "result for b3", func(f frame) bool { return f.Type == wire.TypeTriggerRegistrationResult && f.ID == "b3" })
	if res.Error == nil || res.Error.Code != wire.CodeTriggerRegistration || res.Error.Message != "bad config" {
		t.Fatalf("failing handler answered %s", res.raw)
	}
	if b := ref.Bindings(); len(b) != 0 {
		t.Fatalf("a refused binding was kept: %+v", b)
	}

	// Unregistering the type stops the replay and is announced.
	if err := ref.Unregister(); err != nil {
		t.Fatal(err)
	}
	pfc.waitFor(t, "unregistertriggertype", func(f frame) bool { return f.Type == wire.TypeUnregisterTriggerType && f.ID == "demo::on-change" })
	if _, err := p.RegisterTriggerType("demo::on-change", "again", prov); err != nil {
		t.Fatalf("re-register after Unregister: %v", err)
	}
}

func TestTriggerUpsertAndUnregisterFrames(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	if err := c.RegisterTrigger("t1", "state", "f::a", json.RawMessage(`{"scope":"s"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTrigger("t1", "state", "f::b", nil); err != nil {
		t.Fatal(err)
	}
	fc.waitFor(t, "first registertrigger", func(f frame) bool { return f.Type == wire.TypeRegisterTrigger && f.FunctionID == "f::a" })
	fc.waitFor(t, "replacing registertrigger", func(f frame) bool { return f.Type == wire.TypeRegisterTrigger && f.FunctionID == "f::b" })
	if err := c.UnregisterTrigger("t1"); err != nil {
		t.Fatal(err)
	}
	u := fc.waitFor(t, "unregistertrigger", func(f frame) bool { return f.Type == wire.TypeUnregisterTrigger })
	if u.ID != "t1" || u.TriggerType != "state" {
		t.Fatalf("unregistertrigger = %s", u.raw)
	}
	if err := c.UnregisterTrigger("t1"); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("second UnregisterTrigger = %v", err)
	}
	for _, bad := range []struct{ id, typ, fn, config string }{
		{"", "state", "f", "{}"},
		{"t2", "", "f", "{}"},
		{"t2", "state", "", "{}"},
		{"t2", "state", "f", "{not json"},
	} {
		if err := c.RegisterTrigger(bad.id, bad.typ, bad.fn, json.RawMessage(bad.config)); err == nil {
			t.Errorf("RegisterTrigger(%q, %q, %q, %s) succeeded", bad.id, bad.typ, bad.fn, bad.config)
		}
	}
	if err := c.RegisterTrigger("t2", "state", "f", nil, json.RawMessage(`{}`), json.RawMessage(`{}`)); err == nil {
		t.Error("RegisterTrigger with two metadata arguments succeeded")
	}
}

func TestRegisterFunctionValidationAndUnregister(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	if _, err := c.RegisterFunction("", echo); err == nil {
		t.Fatal("empty id accepted")
	}
	ref, err := c.RegisterFunction("svc::x", echo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterFunction("svc::x", echo); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate id: err = %v", err)
	}
	if _, err := c.RegisterFunction("svc::bad", echo, RegisterFunctionOptions{Metadata: func() {}}); err == nil {
		t.Fatal("unencodable metadata accepted")
	}
	fc := connect(t, e, c)
	if err := ref.Unregister(); err != nil {
		t.Fatal(err)
	}
	u := fc.waitFor(t, "unregisterfunction", func(f frame) bool { return f.Type == wire.TypeUnregisterFunction })
	if u.ID != "svc::x" {
		t.Fatalf("unregisterfunction = %s", u.raw)
	}
	if err := ref.Unregister(); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("second Unregister = %v", err)
	}
	// The id is free again, and the stale ref cannot remove the new one.
	if _, err := c.RegisterFunction("svc::x", echo); err != nil {
		t.Fatal(err)
	}
	if err := ref.Unregister(); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("stale ref Unregister = %v", err)
	}
}

func TestReconnectReplaysAndFlushesOfflineQueue(t *testing.T) {
	e := newFakeEngine(t)
	owner := newTestClient(t, e)
	if _, err := owner.RegisterFunction("echo::it", echo); err != nil {
		t.Fatal(err)
	}
	connect(t, e, owner)

	c := newTestClient(t, e)
	if _, err := c.RegisterFunction("mine::fn", echo); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterTriggerType("mine::tt", "my type", nopTriggerHandler{}); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterTrigger("trig-1", "mine::tt", "mine::fn", nil); err != nil {
		t.Fatal(err)
	}
	connects := make(chan struct{}, 10)
	c.OnConnect(func(context.Context) { connects <- struct{}{} })
	fc1 := connect(t, e, c)
	<-connects
	eventually(t, "first worker id", func() bool { return c.WorkerID() == fc1.workerID })

	// Take the engine away: refuse new connections, drop the current one.
	e.refuse.Store(true)
	fc1.drop()
	eventually(t, "client notices the drop", func() bool { return !c.Connected() })

	type out struct {
		res json.RawMessage
		err error
	}
	awaited := make(chan out, 1)
	go func() {
		res, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "echo::it", Data: json.RawMessage(`{"n":1}`)})
		awaited <- out{res, err}
	}()
	eventually(t, "awaited call queued", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.offline) == 1
	})
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "echo::it", Data: json.RawMessage(`"void-1"`), Action: VoidAction()}); err != nil {
		t.Fatal(err)
	}
	// This caller gives up while disconnected; its call must not be sent.
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "echo::it", Data: json.RawMessage(`"abandoned"`), Timeout: time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("abandoned call: err = %v, want ErrTimeout", err)
	}
	eventually(t, "calls queued", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.offline) == 3
	})

	e.refuse.Store(false)
	fc2 := e.waitConn(t)
	want := []wire.MessageType{wire.TypeReattach, wire.TypeInvokeFunction, wire.TypeRegisterTriggerType, wire.TypeRegisterFunction, wire.TypeRegisterTrigger}
	frames := make([]frame, 0, 7)
	for range want {
		frames = append(frames, fc2.next(t))
	}
	for i, f := range frames {
		if f.Type != want[i] {
			t.Fatalf("frame %d after reconnect = %s, want %s", i, f.raw, want[i])
		}
	}
	if frames[0].PreviousWorkerID != fc1.workerID || frames[0].ReattachToken != fc1.token {
		t.Fatalf("reattach = %s, want previous_worker_id %s and token %s", frames[0].raw, fc1.workerID, fc1.token)
	}
	if frames[1].FunctionID != "engine::workers::register" || frames[2].ID != "mine::tt" || frames[3].ID != "mine::fn" || frames[4].ID != "trig-1" {
		t.Fatalf("replay out of order: %s | %s | %s | %s", frames[1].raw, frames[2].raw, frames[3].raw, frames[4].raw)
	}
	// Then the queue, in call order, without the abandoned call.
	q1, q2 := fc2.next(t), fc2.next(t)
	if q1.Type != wire.TypeInvokeFunction || q1.Action != nil || q1.InvocationID == "" {
		t.Fatalf("first flushed frame = %s, want the awaited call", q1.raw)
	}
	if q2.Type != wire.TypeInvokeFunction || q2.Action == nil || string(q2.Data) != `"void-1"` {
		t.Fatalf("second flushed frame = %s, want the void call", q2.raw)
	}
	select {
	case o := <-awaited:
		if o.err != nil || !strings.Contains(string(o.res), `"n":1`) {
			t.Fatalf("queued awaited call = (%s, %v)", o.res, o.err)
		}
	case <-time.After(waitLimit):
		t.Fatal("queued awaited call never completed")
	}
	// Nothing else was flushed: the next frame is the marker sent now.
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "echo::it", Data: json.RawMessage(`"marker"`), Action: VoidAction()}); err != nil {
		t.Fatal(err)
	}
	// (The client is also the provider of mine::tt, so it answers the
	// engine's forwarded registertrigger in between; skip that.)
	if m := fc2.waitFor(t, "next call", func(f frame) bool { return f.Type == wire.TypeInvokeFunction }); string(m.Data) != `"marker"` {
		t.Fatalf("frame after the flush = %s, want the marker (the abandoned call leaked)", m.raw)
	}
	<-connects
	eventually(t, "new worker id", func() bool { return c.WorkerID() == fc2.workerID })
}

func TestPendingCallFailsWhenConnectionDrops(t *testing.T) {
	e := newFakeEngine(t)
	e.setHook(func(fc *fakeConn, f frame) bool {
		return f.Type == wire.TypeInvokeFunction && f.FunctionID == "hang::forever"
	})
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	done := make(chan error, 1)
	go func() {
		_, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "hang::forever"})
		done <- err
	}()
	fc.waitFor(t, "the call", func(f frame) bool { return f.Type == wire.TypeInvokeFunction && f.FunctionID == "hang::forever" })
	fc.drop()
	var err error
	select {
	case err = <-done:
	case <-time.After(waitLimit):
		t.Fatal("pending call not failed after the drop")
	}
	var ie *InvocationError
	if !errors.As(err, &ie) || ie.Code != wire.CodeInvocationStopped || ie.FunctionID != "hang::forever" || !errors.Is(err, ErrNotConnected) {
		t.Fatalf("err = %v, want invocation_stopped wrapping ErrNotConnected", err)
	}
	// And the client comes back on its own.
	e.waitConn(t)
	eventually(t, "reconnected", c.Connected)
}

func TestOfflineQueueBounded(t *testing.T) {
	e := newFakeEngine(t)
	e.refuse.Store(true)
	c := newTestClient(t, e, WithOfflineQueueSize(2))
	ctx := context.Background()
	for i := range 2 {
		if _, err := c.Trigger(ctx, TriggerRequest{FunctionID: "f", Action: VoidAction(), Data: json.RawMessage(strconv.Itoa(i))}); err != nil {
			t.Fatalf("queued call %d: %v", i, err)
		}
	}
	if _, err := c.Trigger(ctx, TriggerRequest{FunctionID: "f", Action: VoidAction()}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("third call: err = %v, want ErrNotConnected", err)
	}
	if _, err := c.Trigger(ctx, TriggerRequest{FunctionID: "f"}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("awaited call on a full queue: err = %v, want ErrNotConnected", err)
	}

	// Expired void calls make room again.
	c2 := newTestClient(t, e, WithOfflineQueueSize(1))
	if _, err := c2.Trigger(ctx, TriggerRequest{FunctionID: "f", Action: VoidAction(), Timeout: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "void call expired", func() bool {
		_, err := c2.Trigger(ctx, TriggerRequest{FunctionID: "f", Action: VoidAction()})
		return err == nil
	})

	// Size 0 disables queueing.
	c3 := newTestClient(t, e, WithOfflineQueueSize(0))
	if _, err := c3.Trigger(ctx, TriggerRequest{FunctionID: "f", Action: VoidAction()}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("unqueued call: err = %v, want ErrNotConnected", err)
	}

	// Connect with a short ctx returns its error but keeps trying.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := c.Connect(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect = %v, want DeadlineExceeded", err)
	}
	e.refuse.Store(false)
	fc := e.waitConn(t)
	fc.waitFor(t, "queued call 0", func(f frame) bool { return f.FunctionID == "f" && string(f.Data) == "0" })
	if f := fc.next(t); string(f.Data) != "1" {
		t.Fatalf("second flushed call = %s", f.raw)
	}
}

func TestClose(t *testing.T) {
	e := newFakeEngine(t)
	e.setHook(func(fc *fakeConn, f frame) bool { return f.Type == wire.TypeInvokeFunction && f.FunctionID == "hang" })
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	done := make(chan error, 1)
	go func() {
		_, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "hang"})
		done <- err
	}()
	fc.waitFor(t, "the call", func(f frame) bool { return f.FunctionID == "hang" })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending call: err = %v, want ErrClosed", err)
	}
	select {
	case <-fc.closed:
	case <-time.After(waitLimit):
		t.Fatal("socket still open after Close")
	}
	if c.Connected() {
		t.Fatal("Connected() after Close")
	}
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Trigger after Close = %v", err)
	}
	if _, err := c.RegisterFunction("late", echo); !errors.Is(err, ErrClosed) {
		t.Fatalf("RegisterFunction after Close = %v", err)
	}
	if err := c.Connect(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Connect after Close = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	// A client that never connected closes too.
	if err := RegisterWorker(e.url).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWorkerNamespaceConflictStopsClient(t *testing.T) {
	e := newFakeEngine(t)
	e.setHook(func(fc *fakeConn, f frame) bool {
		if f.FunctionID == "engine::workers::register" {
			fc.send(wire.Message{Type: wire.TypeRegistrationRejected, Code: wire.CodeWorkerNamespaceClash, Namespace: "default",
				WorkerName: "test-worker", OwnerWorkerID: "other"})
			return true
		}
		return false
	})
	c := newTestClient(t, e)
	connect(t, e, c)
	select {
	case <-c.runDone:
	case <-time.After(waitLimit):
		t.Fatal("client kept running after WORKER_NAMESPACE_CONFLICT")
	}
	err := c.FatalError()
	var rej *RegistrationRejectedError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &rej) || rej.WorkerName != "test-worker" || rej.OwnerWorkerID != "other" {
		t.Fatalf("FatalError() = %v, want ErrClosed wrapping the rejection", err)
	}
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "x"}); !errors.As(err, &rej) {
		t.Fatalf("Trigger after rejection = %v", err)
	}
	e.mu.Lock()
	n := len(e.conns)
	e.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections, want 1 (no reconnect after a fatal rejection)", n)
	}
}

func TestFunctionNamespaceConflictKeepsConnection(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	fc.send(wire.Message{Type: wire.TypeRegistrationRejected, Code: wire.CodeFunctionNamespaceClash, FunctionID: "engine::x", Namespace: "ns"})
	fc.send(wire.Message{Type: wire.TypePing})
	fc.waitFor(t, "pong", func(f frame) bool { return f.Type == wire.TypePong })
	if !c.Connected() || c.FatalError() != nil {
		t.Fatalf("client stopped after FUNCTION_NAMESPACE_CONFLICT: %v", c.FatalError())
	}
}

func TestProtocolPingAndUnknownFrames(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	fc := connect(t, e, c)
	fc.sendRaw([]byte(`{"type":"somethingnew","x":1}`))
	fc.sendRaw([]byte(`not json`))
	fc.sendRaw([]byte(`{"type":"invocationresult","invocation_id":"` + uuid.NewString() + `","function_id":"late","result":1}`))
	fc.send(wire.Message{Type: wire.TypePing})
	fc.waitFor(t, "pong", func(f frame) bool { return f.Type == wire.TypePong })
	if !c.Connected() {
		t.Fatal("client dropped the connection over unknown frames")
	}
}

func TestKeepalivePingsAndIdleReconnect(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e, WithKeepalive(5*time.Millisecond, 200*time.Millisecond))
	fc := connect(t, e, c)
	eventually(t, "WebSocket pings reach the engine", func() bool { return fc.pings.Load() >= 2 })

	// The engine goes silent (stops reading, so pings go unanswered): the
	// client must drop the link and dial again.
	release := make(chan struct{})
	defer close(release)
	fc.stall.Store(&release)
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "wake", Action: VoidAction()}); err != nil {
		t.Fatal(err)
	}
	e.waitConn(t)
}

func TestOnConnectHooks(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	calls := make(chan string, 10)
	remove := c.OnConnect(func(context.Context) { calls <- "a" })
	c.OnConnect(func(ctx context.Context) {
		// Hooks may register and call through the client.
		if _, err := c.RegisterFunction("hook::fn", echo); err != nil && !strings.Contains(err.Error(), "already") {
			t.Error(err)
		}
		calls <- "b"
	})
	fc := connect(t, e, c)
	if a, b := <-calls, <-calls; a != "a" || b != "b" {
		t.Fatalf("hooks ran as %s,%s", a, b)
	}
	fc.waitFor(t, "hook registration", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "hook::fn" })
	// A hook added while connected runs for the current connection.
	c.OnConnect(func(context.Context) { calls <- "c" })
	if got := <-calls; got != "c" {
		t.Fatalf("late hook: %s", got)
	}
	remove()
	fc.drop()
	fc2 := e.waitConn(t)
	seen := map[string]bool{<-calls: true, <-calls: true}
	if !seen["b"] || !seen["c"] || len(seen) != 2 {
		t.Fatalf("hooks after reconnect: %v", seen)
	}
	// Replay includes the hook's function exactly once.
	fc2.waitFor(t, "replayed hook::fn", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "hook::fn" })
}

func TestGiveUpAfterMaxRetries(t *testing.T) {
	e := newFakeEngine(t)
	e.refuse.Store(true)
	rc := fastReconnect
	rc.MaxRetries = 2
	c := newTestClient(t, e, WithReconnectConfig(rc))
	err := c.Connect(context.Background())
	if !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Connect = %v, want ErrNotConnected after 3 attempts naming the HTTP status", err)
	}
	if _, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "x"}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Trigger after giving up = %v", err)
	}
}

func TestHeadersSentOnUpgrade(t *testing.T) {
	e := newFakeEngine(t)
	got := make(chan string, 1)
	e.mu.Lock()
	e.onUpgrade = func(r *http.Request) { got <- r.Header.Get("Authorization") }
	e.mu.Unlock()
	c := newTestClient(t, e, WithHeaders(http.Header{"Authorization": {"Bearer k"}}))
	connect(t, e, c)
	if v := <-got; v != "Bearer k" {
		t.Fatalf("Authorization header = %q", v)
	}
}

func TestHandlersRunConcurrently(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	release := make(chan struct{})
	if _, err := c.RegisterFunction("wait::release", func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterFunction("do::release", func(context.Context, json.RawMessage) (any, error) {
		close(release)
		return "ok", nil
	}); err != nil {
		t.Fatal(err)
	}
	fc := connect(t, e, c)
	first, second := uuid.NewString(), uuid.NewString()
	fc.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: first, FunctionID: "wait::release", Data: json.RawMessage(`{}`)})
	fc.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: second, FunctionID: "do::release", Data: json.RawMessage(`{}`)})
	got := map[string]string{}
	for len(got) < 2 {
		f := fc.waitFor(t, "both results", func(f frame) bool { return f.Type == wire.TypeInvocationResult })
		got[f.InvocationID] = string(f.Result)
	}
	if got[first] != `"released"` || got[second] != `"ok"` {
		t.Fatalf("results = %v", got)
	}
}

func TestProviderBindingsSurviveReconnectAsUpsert(t *testing.T) {
	e := newFakeEngine(t)
	prov := newRecordingProvider()
	p := newTestClient(t, e)
	ref, err := p.RegisterTriggerType("demo::tt", "demo", prov)
	if err != nil {
		t.Fatal(err)
	}
	fc := connect(t, e, p)
	r := newTestClient(t, e)
	connect(t, e, r)
	if err := r.RegisterTrigger("b1", "demo::tt", "sub::fn", nil); err != nil {
		t.Fatal(err)
	}
	prov.wait(t, "register b1")

	// The provider reconnects; the engine re-delivers the binding.
	fc.drop()
	e.waitConn(t)
	prov.wait(t, "register b1")
	if b := ref.Bindings(); len(b) != 1 || b[0].ID != "b1" || b[0].FunctionID != "sub::fn" {
		t.Fatalf("Bindings() after re-delivery = %+v", b)
	}
}

// RegisterWorker connects by itself, like registerWorker of the Node and
// Python SDKs: the engine sees the worker without any Connect call, and
// registrations made afterwards reach it live.
func TestRegisterWorkerConnectsInTheBackground(t *testing.T) {
	e := newFakeEngine(t)
	c := RegisterWorker(e.url, WithLogger(testLogger()), WithReconnectConfig(fastReconnect), WithName("bg-worker"))
	t.Cleanup(func() { _ = c.Close() })
	fc := e.waitConn(t)
	fc.waitFor(t, "the worker hello", func(f frame) bool {
		return f.Type == wire.TypeInvokeFunction && f.FunctionID == "engine::workers::register"
	})
	if _, err := c.RegisterFunction("bg::fn", echo); err != nil {
		t.Fatal(err)
	}
	fc.waitFor(t, "the live registerfunction", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "bg::fn" })
	ctx, cancel := contextWithLimit()
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect after RegisterWorker = %v, want nil (it only waits)", err)
	}
	res, err := c.Trigger(ctx, TriggerRequest{FunctionID: "bg::fn", Data: json.RawMessage(`{"n":1}`)})
	if err != nil || !strings.Contains(string(res), `"n":1`) {
		t.Fatalf("Trigger = (%s, %v)", res, err)
	}
}

// New does not dial: nothing reaches the engine until Connect.
func TestNewWaitsForConnect(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	if _, err := c.RegisterFunction("later::fn", echo); err != nil {
		t.Fatal(err)
	}
	// A call made before Connect is queued, not failed, and sent on connect.
	done := make(chan error, 1)
	go func() {
		_, err := c.Trigger(context.Background(), TriggerRequest{FunctionID: "later::fn", Data: json.RawMessage(`1`)})
		done <- err
	}()
	eventually(t, "the call queued", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.offline) == 1
	})
	e.mu.Lock()
	n := len(e.conns)
	e.mu.Unlock()
	if n != 0 || c.Connected() {
		t.Fatalf("New dialled the engine before Connect (%d connections)", n)
	}
	connect(t, e, c)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("queued Trigger = %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("queued call never completed after Connect")
	}
}

// Data and Metadata go to the wire verbatim, so invalid JSON is refused
// before anything is sent, with a message naming the field.
func TestTriggerRefusesInvalidJSON(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	connect(t, e, c)
	for _, req := range []TriggerRequest{
		{FunctionID: "f::g", Data: json.RawMessage(`{"a":`)},
		{FunctionID: "f::g", Metadata: json.RawMessage(`nope`)},
	} {
		_, err := c.Trigger(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("Trigger(%+v) = %v, want a not-valid-JSON error", req, err)
		}
	}
}

// MetadataFromContext tells "no metadata" apart from metadata.
func TestMetadataFromContextOK(t *testing.T) {
	if raw, ok := MetadataFromContext(context.Background()); ok || raw != nil {
		t.Fatalf("MetadataFromContext(no metadata) = (%s, %v), want (nil, false)", raw, ok)
	}
	ctx := context.WithValue(context.Background(), metadataKey{}, json.RawMessage(`{"k":1}`))
	if raw, ok := MetadataFromContext(ctx); !ok || string(raw) != `{"k":1}` {
		t.Fatalf("MetadataFromContext = (%s, %v), want ({\"k\":1}, true)", raw, ok)
	}
}

// A refused function is listed by RefusedFunctions (with the engine's
// reason) until RetryRefusedFunctions sends its registration again.
func TestRefusedFunctionsAreListedAndRetried(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e)
	if _, err := c.RegisterFunction("svc::held", func(context.Context, json.RawMessage) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	fc := connect(t, e, c)
	fc.waitFor(t, "registration", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "svc::held" })
	fc.send(wire.Message{Type: wire.TypeRegistrationRejected, Code: wire.CodeFunctionNamespaceClash, FunctionID: "svc::held",
		Namespace: "default", OwnerWorkerID: "w-1", Description: "held for a test"})
	fc.send(wire.Message{Type: wire.TypePing})
	fc.waitFor(t, "pong", func(f frame) bool { return f.Type == wire.TypePong })
	refused := c.RefusedFunctions()
	if len(refused) != 1 || refused[0].FunctionID != "svc::held" || refused[0].OwnerWorkerID != "w-1" ||
		!strings.Contains(refused[0].Error(), "held for a test") {
		t.Fatalf("RefusedFunctions = %+v", refused)
	}
	if n := c.RetryRefusedFunctions(); n != 1 {
		t.Fatalf("RetryRefusedFunctions sent %d; want 1", n)
	}
	fc.waitFor(t, "the registration again", func(f frame) bool { return f.Type == wire.TypeRegisterFunction && f.ID == "svc::held" })
	if len(c.RefusedFunctions()) != 0 {
		t.Fatal("a retried refusal is still listed")
	}
}

// A handler's W3C trace context reaches it (TraceContextFromContext) and
// travels on with the calls it makes with its ctx, unless the request sets
// its own; calls outside a handler carry none.
func TestTraceContextPropagates(t *testing.T) {
	e := newFakeEngine(t)
	e.builtin("probe::echo", func(json.RawMessage) (json.RawMessage, *wire.ErrorBody) { return json.RawMessage(`1`), nil })
	owner := newTestClient(t, e)
	type seen struct{ tp, bg string }
	got := make(chan seen, 1)
	if _, err := owner.RegisterFunction("trace::outer", func(ctx context.Context, _ json.RawMessage) (any, error) {
		tp, bg := TraceContextFromContext(ctx)
		got <- seen{tp, bg}
		if _, err := owner.Trigger(ctx, TriggerRequest{FunctionID: "probe::echo"}); err != nil {
			return nil, err
		}
		return owner.Trigger(ctx, TriggerRequest{FunctionID: "probe::echo", Baggage: "own=1"})
	}); err != nil {
		t.Fatal(err)
	}
	ofc := connect(t, e, owner)
	caller := newTestClient(t, e)
	connect(t, e, caller)
	ctx, cancel := contextWithLimit()
	defer cancel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if _, err := caller.Trigger(ctx, TriggerRequest{FunctionID: "trace::outer", Traceparent: tp, Baggage: "k=v"}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.tp != tp || s.bg != "k=v" {
		t.Errorf("TraceContextFromContext = %+v, want %s / k=v", s, tp)
	}
	var calls []frame
	ofc.waitFor(t, "both nested calls", func(f frame) bool {
		if f.Type == wire.TypeInvokeFunction && f.FunctionID == "probe::echo" {
			calls = append(calls, f)
		}
		return len(calls) == 2
	})
	if calls[0].Traceparent != tp || calls[0].Baggage != "k=v" {
		t.Errorf("nested call carries %q / %q, want the handler's", calls[0].Traceparent, calls[0].Baggage)
	}
	if calls[1].Traceparent != tp || calls[1].Baggage != "own=1" {
		t.Errorf("nested call with its own baggage carries %q / %q", calls[1].Traceparent, calls[1].Baggage)
	}
	if tp, bg := TraceContextFromContext(context.Background()); tp != "" || bg != "" {
		t.Errorf("outside a handler: %q %q", tp, bg)
	}
}

// WithAnonymous leaves out the hello: the first frame is the client's
// first registration (or call).
func TestAnonymousClientSendsNoHello(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e, WithName("cli"), WithAnonymous())
	if _, err := c.RegisterFunction("svc::a", echo); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithLimit()
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	fc := e.waitConn(t)
	if first := fc.next(t); first.Type != wire.TypeRegisterFunction || first.ID != "svc::a" {
		t.Fatalf("first frame = %s, want registerfunction svc::a (no hello)", first.raw)
	}
}

// WithResultHold: a fast handler's result leaves no sooner than the hold
// after its invocation arrived (the real engine's race window), and other
// invocations are not held up behind it.
func TestResultHoldDelaysFastResultsOnly(t *testing.T) {
	const hold = 150 * time.Millisecond
	e := newFakeEngine(t)
	c := newTestClient(t, e, WithResultHold(hold))
	if _, err := c.RegisterFunction("t::fast", func(context.Context, json.RawMessage) (any, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	fc := connect(t, e, c)
	start := time.Now()
	ids := []string{uuid.NewString(), uuid.NewString()}
	for _, id := range ids {
		fc.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: id, FunctionID: "t::fast", Data: json.RawMessage(`{}`)})
	}
	// Both results, in whichever order they come.
	got := map[string]bool{}
	fc.waitFor(t, "both held results", func(f frame) bool {
		if f.Type == wire.TypeInvocationResult && string(f.Result) == "1" {
			got[f.InvocationID] = true
		}
		return got[ids[0]] && got[ids[1]]
	})
	// A lower bound only: the hold guarantees it whatever the machine's load.
	if el := time.Since(start); el < hold {
		t.Fatalf("results arrived %v after the invocations; the hold is %v", el, hold)
	}
}

// WithResultResend: each result goes out twice, the copy identical.
func TestResultResendSendsACopy(t *testing.T) {
	e := newFakeEngine(t)
	c := newTestClient(t, e, WithResultResend(10*time.Millisecond))
	if _, err := c.RegisterFunction("t::fast", func(context.Context, json.RawMessage) (any, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	fc := connect(t, e, c)
	id := uuid.NewString()
	fc.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: id, FunctionID: "t::fast", Data: json.RawMessage(`{}`)})
	var copies []string
	fc.waitFor(t, "the result and its copy", func(f frame) bool {
		if f.Type == wire.TypeInvocationResult && f.InvocationID == id {
			copies = append(copies, string(f.raw))
		}
		return len(copies) == 2
	})
	if copies[0] != copies[1] {
		t.Fatalf("the copy differs:\n%s\n%s", copies[0], copies[1])
	}
}

// WithResultResend never answers a new call with an old result: a call
// that reuses an invocation_id (a client's mistake, or an attacker's
// choice) cancels the copy of the earlier result that has not left yet,
// so the engine cannot take that copy for the new call's answer.
func TestResultResendCopyNeverAnswersAReusedInvocationID(t *testing.T) {
	e := newFakeEngine(t)
	// Long enough that the reused call (sent right after the first answer)
	// reaches the client before the copy is due even on a loaded machine: a
	// copy already on the wire when the reused id arrives is allowed (see
	// WithResultResend), so this test only checks the copy still waiting.
	const resend = time.Second
	c := newTestClient(t, e, WithResultResend(resend))
	release := make(chan struct{})
	var calls atomic.Int32
	if _, err := c.RegisterFunction("t::count", func(context.Context, json.RawMessage) (any, error) {
		n := calls.Add(1)
		if n == 2 {
			<-release // the reused call is still running when the copy would go
		}
		return fmt.Sprintf("answer %d", n), nil
	}); err != nil {
		t.Fatal(err)
	}
	fc := connect(t, e, c)
	id := uuid.NewString()
	call := func() {
		fc.send(wire.Message{Type: wire.TypeInvokeFunction, InvocationID: id, FunctionID: "t::count", Data: json.RawMessage(`{}`)})
	}
	call()
	fc.waitFor(t, "the first answer", func(f frame) bool {
		return f.Type == wire.TypeInvocationResult && f.InvocationID == id && string(f.Result) == `"answer 1"`
	})
	call()                        // the same invocation_id again, before the copy left
	time.Sleep(resend + resend/2) // room for a copy that was not cancelled to go out
	close(release)
	got := fc.waitFor(t, "the second answer", func(f frame) bool {
		return f.Type == wire.TypeInvocationResult && f.InvocationID == id
	})
	if string(got.Result) != `"answer 2"` {
		t.Fatalf("the call that reused invocation_id %s was answered %s (a copy of the earlier result); want \"answer 2\"", id, got.Result)
	}
}
