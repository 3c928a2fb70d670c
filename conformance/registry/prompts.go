package registry

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

func promptPayload(name, description, functionID string, args any) map[string]any {
	p := map[string]any{"name": name, "description": description, "function_id": functionID}
	if args != nil {
		p["arguments"] = args
	}
	return p
}

var _ = group.Describe("prompts::register (checklist F)", Label("prompts_register"), func() {
	DescribeTable("rejects invalid prompts",
		func(ctx SpecContext, payload map[string]any, want string) {
			fails(ctx, "prompts::register", payload, want)
		},
		Entry("F1 empty name", promptPayload("", "d", "bdd::f", nil), "name must be non-empty"),
		Entry("F2 uppercase name", promptPayload("BadName", "d", "bdd::f", nil), "lowercase"),
		Entry("F3 name with a space", promptPayload("bad name", "d", "bdd::f", nil), "lowercase"),
		Entry("F4 name with colons", promptPayload("mcp::register", "d", "bdd::f", nil), "lowercase"),
		Entry("F5 blank description", promptPayload("p-desc", "  ", "bdd::f", nil), "description must be non-empty"),
		Entry("F6 empty function_id", promptPayload("p-fid", "d", "", nil), "function_id must be non-empty"),
		Entry("F7 duplicate argument names", promptPayload("p-dup", "d", "bdd::f",
			[]map[string]any{{"name": "to", "required": true}, {"name": "to"}}), "duplicate argument name: to"),
		Entry("F8 empty argument name", promptPayload("p-empty-arg", "d", "bdd::f",
			[]map[string]any{{"name": ""}}), "argument name must be non-empty"),
		Entry("extra: a 65-char name", Label("extra"), promptPayload(strings.Repeat("n", 65), "d", "bdd::f", nil), "name too long (65 chars; max 64)"),
		Entry("extra: a name with a slash", Label("extra"), promptPayload("a/b", "d", "bdd::f", nil), "name may only contain"),
		Entry("extra: blank function_id", Label("extra"), promptPayload("p-fid2", "d", "   ", nil), "function_id must be non-empty"),
		Entry("extra: whitespace argument name", Label("extra"), promptPayload("p-ws-arg", "d", "bdd::f",
			[]map[string]any{{"name": "  "}}), "argument name must be non-empty"),
		Entry("extra: explicit null arguments", Label("extra"), promptPayload("p-null-args", "d", "bdd::f", json.RawMessage("null")), "invalid type"),
	)

	It("F9 lists a registered prompt with its argument count, sorted by name", func(ctx SpecContext) {
		name := scoped("simple")
		registerPrompt(ctx, name, "bdd prompt", "bdd::simple", req("to"))
		registerPrompt(ctx, scoped("another"), "bdd prompt", "bdd::another")
		var out struct {
			Prompts []map[string]any `json:"prompts"`
		}
		callInto(ctx, "prompts::list", map[string]any{}, &out)
		var names []string
		for _, p := range out.Prompts {
			Expect(p).To(HaveKeyWithValue("arguments", BeNumerically(">=", 0)))
			Expect(p).To(HaveKeyWithValue("function_id", BeAssignableToTypeOf("")))
			Expect(p).To(HaveKeyWithValue("registered_at", BeAssignableToTypeOf("")))
			names = append(names, p["name"].(string))
			if p["name"] == name {
				Expect(p).To(HaveKeyWithValue("arguments", BeNumerically("==", 1)))
				Expect(p).To(HaveKeyWithValue("function_id", "bdd::simple"))
			}
		}
		Expect(names).To(ContainElement(name))
		Expect(slices.IsSorted(names)).To(BeTrue(), "names not sorted: %v", names)
	})

	It("F10 re-registering overwrites and refreshes registered_at", func(ctx SpecContext) {
		name := scoped("twice")
		first := registerPrompt(ctx, name, "original", "bdd::twice")
		time.Sleep(20 * time.Millisecond)
		second := registerPrompt(ctx, name, "refreshed", "bdd::twice")
		Expect(second).NotTo(Equal(first))
		var out struct {
			Prompts []map[string]any `json:"prompts"`
		}
		callInto(ctx, "prompts::mcp-list", map[string]any{}, &out)
		Expect(out.Prompts).To(ContainElement(HaveKeyWithValue("description", "refreshed")))
	})

	It("F11 unregister removes once, then reports removed=false", func(ctx SpecContext) {
		name := scoped("gone")
		registerPrompt(ctx, name, "bdd prompt", "bdd::gone")
		Expect(obj(ctx, "prompts::unregister", map[string]string{"name": name})).To(Equal(map[string]any{"name": name, "removed": true}))
		Expect(obj(ctx, "prompts::unregister", map[string]string{"name": name})).To(Equal(map[string]any{"name": name, "removed": false}))
		Expect(promptNames(ctx)).NotTo(ContainElement(name))
	})

	It("extra: unregister validates the name", Label("extra"), func(ctx SpecContext) {
		fails(ctx, "prompts::unregister", map[string]string{"name": "Bad Name"}, "name may only contain")
		fails(ctx, "prompts::unregister", map[string]string{"name": ""}, "name must be non-empty")
	})
})

// mcpGet calls prompts::mcp-get and decodes the envelope.
func mcpGet(ctx context.Context, payload any) (description string, messages []map[string]any) {
	GinkgoHelper()
	var out struct {
		Description string           `json:"description"`
		Messages    []map[string]any `json:"messages"`
	}
	callInto(ctx, "prompts::mcp-get", payload, &out)
	return out.Description, out.Messages
}

func userText(text string) map[string]any {
	return map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}
}

var _ = group.Describe("prompts::mcp-get (checklist G)", Label("prompts_get"), func() {
	// prompt registers a handler returning output and a prompt pointing at it.
	prompt := func(ctx context.Context, label string, output any) string {
		GinkgoHelper()
		fid, name := fnID("prompt-"+label), scoped(label)
		provide(ctx, fid, harness.Returning(output))
		registerPrompt(ctx, name, "bdd prompt", fid)
		return name
	}

	It("G1 a string result becomes one user message", func(ctx SpecContext) {
		name := prompt(ctx, "str", "str body")
		desc, msgs := mcpGet(ctx, map[string]any{"name": name})
		Expect(desc).To(Equal("bdd prompt"))
		Expect(msgs).To(Equal([]map[string]any{userText("str body")}))
	})

	It("G2 a {content} result becomes one user message", func(ctx SpecContext) {
		name := prompt(ctx, "obj", map[string]any{"content": "obj body"})
		_, msgs := mcpGet(ctx, map[string]any{"name": name})
		Expect(msgs).To(Equal([]map[string]any{userText("obj body")}))
	})

	It("G3 a {messages} result passes through unchanged", func(ctx SpecContext) {
		messages := []any{
			map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "m1"}},
			map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "m2"}, "extra": 1.0},
		}
		name := prompt(ctx, "msgs", map[string]any{"messages": messages})
		raw := call(ctx, "prompts::mcp-get", map[string]any{"name": name})
		want, _ := json.Marshal(map[string]any{"description": "bdd prompt", "messages": messages})
		Expect(string(raw)).To(MatchJSON(want))
	})

	It("G4 any other result is an unsupported shape", func(ctx SpecContext) {
		name := prompt(ctx, "bad", map[string]any{"x": 1})
		fails(ctx, "prompts::mcp-get", map[string]any{"name": name}, "unsupported shape",
			"prompt handler returned unsupported shape; expected string, { content }, or { messages: [...] }")
	})

	It("G5 an unknown prompt is not found", func(ctx SpecContext) {
		fails(ctx, "prompts::mcp-get", map[string]any{"name": "no-such-prompt"}, "not found", "Prompt not found: no-such-prompt")
	})

	It("G6 a prompt backed by an internal function is refused", func(ctx SpecContext) {
		name := scoped("internal")
		registerPrompt(ctx, name, "bdd prompt", iii.StateSet)
		fails(ctx, "prompts::mcp-get", map[string]any{"name": name}, "internal namespace",
			"Prompt handler 'state::set' is in an internal namespace and cannot back a prompt")
	})
})

var _ = group.Describe("prompt extras (checklist J13, J14)", Label("extra"), func() {
	It("J13 arguments: null or absent become {}, anything else passes through", Label("J13"), func(ctx SpecContext) {
		var mu sync.Mutex
		var got []any
		fid := fnID("prompt-echo")
		provide(ctx, fid, func(_ context.Context, data json.RawMessage) (any, error) {
			var v any
			_ = json.Unmarshal(data, &v)
			mu.Lock()
			got = append(got, withoutInjected(v))
			mu.Unlock()
			return "ok", nil
		})
		name := scoped("echo")
		registerPrompt(ctx, name, "bdd prompt", fid)
		payloads := []map[string]any{
			{"name": name},
			{"name": name, "arguments": nil},
			{"name": name, "arguments": map[string]any{"to": "alice@example.com"}},
			{"name": name, "arguments": "plain"},
			{"name": name, "arguments": []any{1.0, "two"}},
		}
		for _, p := range payloads {
			_, msgs := mcpGet(ctx, p)
			Expect(msgs).To(Equal([]map[string]any{userText("ok")}))
		}
		mu.Lock()
		defer mu.Unlock()
		Expect(got).To(Equal([]any{map[string]any{}, map[string]any{}, map[string]any{"to": "alice@example.com"},
			"plain", []any{1.0, "two"}}))
	})

	It("J13 messages win over content; a non-string content is unsupported", Label("J13"), func(ctx SpecContext) {
		both, num := fnID("prompt-both"), fnID("prompt-num")
		provide(ctx, both, harness.Returning(map[string]any{"messages": []any{userText("from messages")}, "content": "x"}))
		provide(ctx, num, harness.Returning(map[string]any{"content": 5}))
		registerPrompt(ctx, scoped("both"), "bdd prompt", both)
		registerPrompt(ctx, scoped("num"), "bdd prompt", num)
		_, msgs := mcpGet(ctx, map[string]any{"name": scoped("both")})
		Expect(msgs).To(Equal([]map[string]any{userText("from messages")}))
		fails(ctx, "prompts::mcp-get", map[string]any{"name": scoped("num")}, "unsupported shape")
	})

	It("J13 a bad name gives the name error, not not-found", Label("J13"), func(ctx SpecContext) {
		msg := fails(ctx, "prompts::mcp-get", map[string]any{"name": "Bad Name"},
			`name may only contain lowercase ASCII letters, digits, '-' and '_': "Bad Name"`)
		Expect(msg).NotTo(ContainSubstring("not found"))
	})

	It("J13 an unknown or failing handler reports the trigger error", Label("J13"), func(ctx SpecContext) {
		missing, throws := fnID("prompt-missing"), fnID("prompt-throws")
		provide(ctx, throws, func(context.Context, json.RawMessage) (any, error) {
			return nil, &harnessError{"prompt exploded"}
		})
		registerPrompt(ctx, scoped("missing"), "bdd prompt", missing)
		registerPrompt(ctx, scoped("throws"), "bdd prompt", throws)
		fails(ctx, "prompts::mcp-get", map[string]any{"name": scoped("missing")}, "trigger "+missing)
		fails(ctx, "prompts::mcp-get", map[string]any{"name": scoped("throws")}, "trigger "+throws, "prompt exploded")
	})

	It("J14 mcp-list: full argument schema, description omitted when absent, required defaults to false", Label("J14"), func(ctx SpecContext) {
		name := scoped("schema")
		callInto(ctx, "prompts::register", map[string]any{"name": name, "description": "  spaced description ",
			"function_id": "bdd::schema", "arguments": []map[string]any{
				{"name": "plain"},
				{"name": "described", "description": "Has a description", "required": true},
				{"name": "optional", "required": false},
			}}, &map[string]any{})
		raw := call(ctx, "prompts::mcp-list", map[string]any{})
		Expect(string(raw)).To(MatchJSON(`{"prompts":[{"name":"` + name + `","description":"  spaced description ","arguments":[
			{"name":"plain","required":false},
			{"name":"described","required":true,"description":"Has a description"},
			{"name":"optional","required":false}]}]}`))
	})

	It("J14 mcp-list and prompts::list are sorted by name", Label("J14"), func(ctx SpecContext) {
		for _, n := range []string{"zeta", "alpha", "mid-dle", "mid_dle"} {
			registerPrompt(ctx, scoped(n), "bdd prompt", "bdd::sorted")
		}
		names := promptNames(ctx)
		Expect(names).To(HaveLen(4))
		Expect(slices.IsSorted(names)).To(BeTrue(), "prompts::list: %v", names)
		var out struct {
			Prompts []struct {
				Name string `json:"name"`
			} `json:"prompts"`
		}
		callInto(ctx, "prompts::mcp-list", map[string]any{}, &out)
		var mcpNames []string
		for _, p := range out.Prompts {
			mcpNames = append(mcpNames, p.Name)
		}
		Expect(mcpNames).To(Equal(names))
	})
})

// harnessError is an error a test handler returns.
type harnessError struct{ msg string }

func (e *harnessError) Error() string { return e.msg }
