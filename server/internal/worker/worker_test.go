package worker

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Fatalf("error = %v, want one containing %q", err, substr)
	}
}

func TestSkillLifecycle(t *testing.T) {
	s := startStack(t, t.TempDir())
	tree := map[string]string{
		"resend":            "# resend\n\nEmail provider integration.\n",
		"resend/email":      "# resend/email\n\nEmail flows.\n",
		"resend/email/send": "# Send\n\nOutbound email.\n\nDetails.",
		"resend-x":          "no heading here",
	}
	for id, body := range tree {
		var out registry.RegisterSkillOutput
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body}, &out)
		if out.ID != id || !strings.HasSuffix(out.RegisteredAt, "+00:00") {
			t.Fatalf("register %s = %+v", id, out)
		}
	}

	var list registry.SkillList
	s.mustCall(t, rules.FnSkillsList, map[string]any{}, &list)
	var ids []string
	for _, e := range list.Skills {
		ids = append(ids, e.ID)
		if e.Bytes != len(tree[e.ID]) {
			t.Fatalf("bytes of %s = %d, want %d", e.ID, e.Bytes, len(tree[e.ID]))
		}
	}
	if want := []string{"resend", "resend-x", "resend/email", "resend/email/send"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("list ids = %v, want %v", ids, want)
	}

	var read registry.ReadResult
	s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &read)
	wantIndex := registry.IndexHeader +
		"- [`resend`](iii://resend) — resend — Email provider integration.\n" +
		"- [`resend-x`](iii://resend-x) — resend-x — no heading here\n" +
		"  - [`resend/email`](iii://resend/email) — resend/email — Email flows.\n" +
		"    - [`resend/email/send`](iii://resend/email/send) — Send — Outbound email.\n"
	if got := read.Contents[0].Text; got != wantIndex {
		t.Fatalf("index =\n%q\nwant\n%q", got, wantIndex)
	}

	var resources registry.ResourcesList
	s.mustCall(t, rules.FnSkillsResourcesList, map[string]any{}, &resources)
	if len(resources.Resources) != 5 || resources.Resources[0].URI != "iii://skills" || resources.Resources[4].Name != "Send" {
		t.Fatalf("resources-list = %+v", resources)
	}

	var fetched string
	s.mustCall(t, rules.FnSkillFetch, map[string]any{"uris": []string{"iii://resend/email/send", "resend"}}, &fetched)
	want := "# iii://resend/email/send\n\n# Send\n\nOutbound email.\n\nDetails.\n\n---\n\n# iii://resend\n\n# resend\n\nEmail provider integration."
	if fetched != want {
		t.Fatalf("fetch =\n%q\nwant\n%q", fetched, want)
	}

	var un registry.UnregisterSkillOutput
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "resend/email"}, &un)
	if !un.Removed {
		t.Fatal("first unregister: removed = false")
	}
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "resend/email"}, &un)
	if un.Removed {
		t.Fatal("second unregister: removed = true")
	}
	wantErr(t, s.call(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://resend/email"}, nil), "Skill not found: resend/email")
	s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &read)
	if strings.Contains(read.Contents[0].Text, "(iii://resend/email)") {
		t.Fatal("index still lists an unregistered skill")
	}
}

func TestValidationAndBadInput(t *testing.T) {
	s := startStack(t, t.TempDir())
	cases := []struct {
		fn      string
		payload any
		want    string
		code    string // default INVALID_ARGUMENTS: the caller's fault
	}{
		{rules.FnSkillsRegister, nil, "missing field `id`", ""},
		{rules.FnSkillsRegister, json.RawMessage("null"), "invalid type: null, expected struct RegisterSkillInput", ""},
		{rules.FnSkillsRegister, map[string]any{"id": 5, "skill": "x"}, "invalid type: integer `5`, expected a string", ""},
		{rules.FnSkillFetch, map[string]any{"uris": []any{"iii://x", 5}}, "invalid type: integer `5`, expected a string", ""},
		{rules.FnSkillFetch, map[string]any{"uri": true}, "invalid type: boolean `true`, expected a string", ""},
		{rules.FnSkillsRegister, map[string]string{"id": "Bad-Id", "skill": "x"}, "lowercase", ""},
		{rules.FnSkillsRegister, map[string]string{"id": "fn/x", "skill": "x"}, "reserved", ""},
		{rules.FnSkillsRegister, map[string]string{"id": "ok", "skill": ""}, "skill must be non-empty", ""},
		{rules.FnSkillsRegister, map[string]string{"id": "ok", "skill": strings.Repeat("a", 262145)}, "too large", ""},
		{rules.FnSkillsUnregister, map[string]string{"id": "a//b"}, "segment must be non-empty", ""},
		{rules.FnSkillsResourcesRead, map[string]string{"uri": "https://example.com"}, "Resource URI must start with iii://", ""},
		{rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://fn"}, "missing a function path", ""},
		{rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://fn/state/set"}, "internal namespace", ""},
		{rules.FnSkillsFetchSkill, map[string]any{}, "Provide uri", ""},
		{rules.FnSkillFetch, map[string]any{"uris": []string{"iii://x", "ftp://nope"}}, "Invalid URI (must start with iii://): ftp://nope", ""},
		{rules.FnPromptsRegister, map[string]any{"name": "p", "description": "d", "function_id": "f", "arguments": nil}, "invalid type: null", ""},
		{rules.FnPromptsRegister, map[string]any{"name": "p", "description": " ", "function_id": "f"}, "description must be non-empty", ""},
		{rules.FnPromptsRegister, map[string]any{"name": "p", "description": "d", "function_id": "f", "arguments": []map[string]any{{"name": "to"}, {"name": "to"}}}, "duplicate argument name: to", ""},
		{rules.FnPromptsMCPGet, map[string]any{"name": "Bad Name"}, "name may only contain", ""},
		// Reads of what the registry does not hold: upstream's text, code NOT_FOUND.
		{rules.FnPromptsMCPGet, map[string]any{"name": "nope"}, "Prompt not found: nope", rules.CodeNotFound},
		{rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://no/such"}, "Skill not found: no/such", rules.CodeNotFound},
		{rules.FnSkillFetch, map[string]any{"uris": []string{"iii://skills", "iii://no/such"}}, "Skill not found: no/such", rules.CodeNotFound},
		{rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://fn/no/such"}, "trigger no::such: remote error (function_not_found): Function no::such not found", rules.CodeNotFound},
	}
	for _, c := range cases {
		err := s.call(t, c.fn, c.payload, nil)
		wantErr(t, err, c.want)
		code := c.code
		if code == "" {
			code = rules.CodeInvalidArguments
		}
		var ie *iii.InvocationError
		if !errors.As(err, &ie) || ie.Code != code {
			t.Errorf("%s %v: error %v, want code %s", c.fn, c.payload, err, code)
		}
	}
	// A bad input never takes the worker down.
	var list registry.SkillList
	s.mustCall(t, rules.FnSkillsList, map[string]any{}, &list)
}

func TestSections(t *testing.T) {
	s := startStack(t, t.TempDir())
	outputs := map[string]any{
		"sec::str":  "# str-section\nplain text",
		"sec::obj":  map[string]string{"content": "# object-section\nwrapped"},
		"sec::json": map[string]any{"count": 42, "label": "json"},
	}
	for id, out := range outputs {
		out := out
		if _, err := s.caller.RegisterFunction(id, func(context.Context, json.RawMessage) (any, error) { return out, nil }); err != nil {
			t.Fatal(err)
		}
	}
	check := func(uri, mime, text string) {
		t.Helper()
		var read registry.ReadResult
		s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": uri}, &read)
		c := read.Contents[0]
		if c.URI != uri || c.MimeType != mime || c.Text != text {
			t.Fatalf("read %s = %+v", uri, c)
		}
	}
	check("iii://fn/sec/str", registry.MimeMarkdown, "# str-section\nplain text")
	check("iii://fn/sec/obj", registry.MimeMarkdown, "# object-section\nwrapped")
	check("iii://fn/sec/json", registry.MimeJSON, "{\n  \"count\": 42,\n  \"label\": \"json\"\n}")
	wantErr(t, s.call(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://fn/sec/missing"}, nil),
		"trigger sec::missing: remote error (function_not_found)")
}

func TestPrompts(t *testing.T) {
	s := startStack(t, t.TempDir())
	var gotArgs sync.Map
	handlers := map[string]any{
		"p::str":  "str body",
		"p::obj":  map[string]string{"content": "obj body"},
		"p::msgs": map[string]any{"messages": []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": "m1"}}, {"role": "assistant", "content": map[string]string{"type": "text", "text": "m2"}}}},
		"p::bad":  map[string]int{"x": 1},
	}
	for id, out := range handlers {
		id, out := id, out
		if _, err := s.caller.RegisterFunction(id, func(_ context.Context, data json.RawMessage) (any, error) {
			gotArgs.Store(id, string(data))
			return out, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	desc := "Recipient address"
	for _, name := range []string{"str", "obj", "msgs", "bad"} {
		var out registry.RegisterPromptOutput
		s.mustCall(t, rules.FnPromptsRegister, map[string]any{
			"name": name, "description": "bdd prompt", "function_id": "p::" + name,
			"arguments": []registry.PromptArgument{{Name: "to", Description: &desc, Required: true}, {Name: "cc"}},
		}, &out)
	}
	var list registry.PromptList
	s.mustCall(t, rules.FnPromptsList, map[string]any{}, &list)
	if len(list.Prompts) != 4 || list.Prompts[0].Name != "bad" || list.Prompts[0].Arguments != 2 {
		t.Fatalf("prompts::list = %+v", list)
	}
	var mcpList registry.MCPPromptList
	s.mustCall(t, rules.FnPromptsMCPList, map[string]any{}, &mcpList)
	raw, _ := json.Marshal(mcpList.Prompts[0].Arguments)
	if string(raw) != `[{"description":"Recipient address","name":"to","required":true},{"name":"cc","required":false}]` {
		t.Fatalf("mcp-list arguments = %s", raw)
	}

	var got registry.PromptGetResult
	s.mustCall(t, rules.FnPromptsMCPGet, map[string]any{"name": "str", "arguments": map[string]string{"to": "a@b"}}, &got)
	if got.Description != "bdd prompt" || len(got.Messages) != 1 || !strings.Contains(string(got.Messages[0]), `"text":"str body"`) {
		t.Fatalf("mcp-get str = %+v", got)
	}
	if args, _ := gotArgs.Load("p::str"); !strings.Contains(args.(string), `"to":"a@b"`) {
		t.Fatalf("handler got %v", args)
	}
	s.mustCall(t, rules.FnPromptsMCPGet, map[string]any{"name": "obj"}, &got)
	if args, _ := gotArgs.Load("p::obj"); strings.Contains(args.(string), "to") {
		t.Fatalf("missing arguments should reach the handler as {}, got %v", args)
	}
	s.mustCall(t, rules.FnPromptsMCPGet, map[string]any{"name": "msgs"}, &got)
	if len(got.Messages) != 2 {
		t.Fatalf("mcp-get msgs = %+v", got)
	}
	wantErr(t, s.call(t, rules.FnPromptsMCPGet, map[string]any{"name": "bad"}, nil), "unsupported shape")

	s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "infra", "description": "d", "function_id": "state::set"}, nil)
	wantErr(t, s.call(t, rules.FnPromptsMCPGet, map[string]any{"name": "infra"}, nil), "internal namespace")

	var un registry.UnregisterPromptOutput
	s.mustCall(t, rules.FnPromptsUnregister, map[string]string{"name": "str"}, &un)
	if !un.Removed {
		t.Fatal("unregister: removed = false")
	}
	wantErr(t, s.call(t, rules.FnPromptsMCPGet, map[string]any{"name": "str"}, nil), "Prompt not found: str")
}

func TestNotificationsCarryExactPayloads(t *testing.T) {
	s := startStack(t, t.TempDir())
	events := make(chan string, 32)
	for _, tt := range []string{rules.TriggerSkillsOnChange, rules.TriggerPromptsOnChange} {
		fn := "sub::" + strings.ReplaceAll(tt, "::", "-")
		if _, err := s.caller.RegisterFunction(fn, func(_ context.Context, data json.RawMessage) (any, error) {
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			delete(m, "_caller_worker_id") // injected by the engine
			b, _ := json.Marshal(m)
			events <- string(b)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.caller.RegisterTrigger(fn, tt, fn, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Bindings are delivered asynchronously; wait until both reached the worker.
	testutil.Eventually(t, 5*time.Second, "both subscriptions are bound", func() bool {
		return len(s.worker.skillSubs.Bindings()) == 1 && len(s.worker.promptSubs.Bindings()) == 1
	})
	next := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event = %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event, want %s", want)
		}
	}
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "n", "skill": "x"}, nil)
	next(`{"id":"n","op":"register"}`)
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "missing"}, nil) // fires nothing
	_ = s.call(t, rules.FnSkillsRegister, map[string]string{"id": "Bad", "skill": "x"}, nil)
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "n"}, nil)
	next(`{"id":"n","op":"unregister"}`)
	s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "p", "description": "d", "function_id": "f::g"}, nil)
	next(`{"name":"p","op":"register"}`)
	s.mustCall(t, rules.FnPromptsUnregister, map[string]string{"name": "p"}, nil)
	next(`{"name":"p","op":"unregister"}`)
}

func TestCacheFollowsDirectStateWrites(t *testing.T) {
	s := startStack(t, t.TempDir())
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "gone", "skill": "# Gone"}, nil)
	s.mustCall(t, "state::delete", map[string]string{"scope": "skills", "key": "gone"}, nil)
	row := registry.NewStoredSkill("ext", "# External\n\nWritten straight into state.", time.Now())
	s.mustCall(t, "state::set", map[string]any{"scope": "skills", "key": "ext", "value": row}, nil)
	testutil.Eventually(t, 5*time.Second, "the index reflects direct state writes", func() bool {
		var read registry.ReadResult
		s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &read)
		text := read.Contents[0].Text
		return !strings.Contains(text, "iii://gone") && strings.Contains(text, "— External — Written straight into state.")
	})
	var read registry.ReadResult
	s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://ext"}, &read)
	wantErr(t, s.call(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://gone"}, nil), "Skill not found: gone")
}

func TestContentSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startStack(t, dir)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "kept", "skill": "# Kept\n\nStill here."}, nil)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "kept/child", "skill": "child"}, nil)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "dropped", "skill": "x"}, nil)
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "dropped"}, nil)
	s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "kept", "description": "d", "function_id": "f::g"}, nil)
	s.stop()

	s2 := startStack(t, dir)
	var read registry.ReadResult
	s2.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &read)
	want := registry.IndexHeader + "- [`kept`](iii://kept) — Kept — Still here.\n  - [`kept/child`](iii://kept/child) — kept/child — child\n"
	if read.Contents[0].Text != want {
		t.Fatalf("index after restart =\n%q\nwant\n%q", read.Contents[0].Text, want)
	}
	var prompts registry.PromptList
	s2.mustCall(t, rules.FnPromptsList, map[string]any{}, &prompts)
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "kept" {
		t.Fatalf("prompts after restart = %+v", prompts)
	}
}

// TestColdLoadReadsTheEmbeddedStore: standalone, the worker loads the
// skills scope from the store itself, and serves exactly what a
// state::list load serves.
func TestColdLoadReadsTheEmbeddedStore(t *testing.T) {
	dir := t.TempDir()
	s := startStack(t, dir)
	for i := range 50 {
		id := "cold/s" + strconv.Itoa(i)
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": id, "skill": "# Skill " + strconv.Itoa(i) + "\n\nBody."}, nil)
	}
	var want registry.ReadResult
	s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &want)
	s.stop()

	var lists atomic.Int32
	s2 := startStack(t, dir, func(s *stack, o *Options) {
		o.State = countingLists{kv.Engine(s.engine, s.wc.WorkerID), &lists}
	})
	var got registry.ReadResult
	s2.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &got)
	if lists.Load() == 0 {
		t.Fatal("the worker did not read the scope through the engine's store")
	}
	if !s2.reg.Loaded() {
		t.Fatal("the published mirror is not loaded")
	}
	if got.Contents[0].Text != want.Contents[0].Text {
		t.Fatalf("index after a direct cold load =\n%q\nwant\n%q", got.Contents[0].Text, want.Contents[0].Text)
	}
}

func TestTemplatesAndContracts(t *testing.T) {
	s := startStack(t, t.TempDir())
	var tpl registry.ResourceTemplates
	s.mustCall(t, rules.FnSkillsResourcesTemplates, map[string]any{}, &tpl)
	if !reflect.DeepEqual(tpl, registry.Templates()) {
		t.Fatalf("templates = %+v", tpl)
	}
	var fns struct {
		Functions []struct {
			FunctionID    string          `json:"function_id"`
			Description   string          `json:"description"`
			RequestFormat json.RawMessage `json:"request_format"`
		} `json:"functions"`
	}
	s.mustCall(t, "engine::functions::list", map[string]any{}, &fns)
	seen := map[string]bool{}
	for _, f := range fns.Functions {
		seen[f.FunctionID] = true
		if f.FunctionID == rules.FnSkillsRegister && !strings.Contains(string(f.RequestFormat), `"title":"RegisterSkillInput"`) {
			t.Fatalf("skills::register request_format = %s", f.RequestFormat)
		}
		if f.FunctionID == rules.FnCacheSync {
			t.Fatal("the internal cache-sync function is listed")
		}
		if (f.FunctionID == rules.FnSkillsSearch || f.FunctionID == rules.FnSkillSearch) &&
			(f.Description != searchDescription || !strings.Contains(string(f.RequestFormat), `"title":"SearchSkillsInput"`)) {
			t.Fatalf("%s listed as %q, %s", f.FunctionID, f.Description, f.RequestFormat)
		}
	}
	if !seen[rules.FnSkillsSearch] || !seen[rules.FnSkillSearch] {
		t.Fatal("skills::search or skill::search missing from engine::functions::list")
	}
	for id := range s.worker.upstreamHandlers() {
		if !seen[id] {
			t.Fatalf("%s missing from engine::functions::list", id)
		}
	}
}

// The state events of one key can arrive out of order (the real iii engine
// delivers each trigger invocation on its own task, the client runs each in
// its own goroutine): a register's late `state:created` event, handled after
// the `state:deleted` event of a direct delete that followed it, must not
// bring the row back. Found running upstream's BDD suite and then the
// conformance suite back to back on the real engine (J7/J8).
func TestLateStateEventDoesNotResurrectDeletedRow(t *testing.T) {
	s := startStack(t, t.TempDir())
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "maxid", "skill": "# Max"}, nil)
	var stored json.RawMessage
	s.mustCall(t, "state::get", map[string]string{"scope": "skills", "key": "maxid"}, &stored)
	s.mustCall(t, "state::delete", map[string]string{"scope": "skills", "key": "maxid"}, nil)
	testutil.Eventually(t, 5*time.Second, "the direct delete reaches the index", func() bool {
		var read registry.ReadResult
		s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}, &read)
		return !strings.Contains(read.Contents[0].Text, "iii://maxid")
	})
	late, err := json.Marshal(map[string]any{"type": "state", "event_type": "state:created", "scope": "skills",
		"key": "maxid", "old_value": nil, "new_value": stored})
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Scope, Key string }
	_ = json.Unmarshal(late, &ev)
	if err := s.reg.SyncKey(context.Background(), ev.Scope, ev.Key); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Skills []struct{ ID string } `json:"skills"`
	}
	s.mustCall(t, rules.FnSkillsList, map[string]any{}, &list)
	if len(list.Skills) != 0 {
		t.Fatalf("skills::list after a late created event of a deleted row: %+v, want none", list.Skills)
	}
	wantErr(t, s.call(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://maxid"}, nil), "Skill not found: maxid")
}

// countingLists counts the scopes listed through a store.
type countingLists struct {
	kv.Store
	lists *atomic.Int32
}

func (c countingLists) List(ctx context.Context, scope string) ([]json.RawMessage, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, scope)
}
