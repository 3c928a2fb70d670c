package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// IndexHeader is the exact start of the v0.2.2 iii://skills index.
const IndexHeader = "# Skills\n\nRead each skill's resource for orientation on when and why to call its functions. " +
	"Sub-skills are indented under their parent path so a top-level skill stays small and the LLM can drill in " +
	"only when it needs more detail.\n\n"

// SectionSep joins fetched sections.
const SectionSep = "\n\n---\n\n"

// EngineInjected are payload keys the engine adds to invocation data
// (docs/reference/engine-protocol.md §3.1); they are not part of the registry's payloads.
var EngineInjected = []string{"_caller_worker_id"}

// eventLimit bounds waits for on-change events (upstream waits 3000–5000 ms).
const eventLimit = 5 * time.Second

// u is the current spec's unique suffix (12 hex digits).
var u string

var _ = group.BeforeEach(func(SpecContext) { u = harness.UID() })

// scoped is "<base>-bdd-<u>", cut to 64 bytes.
func scoped(base string) string { return harness.Scoped(base, u) }

// nested scopes only the first segment: nested("parent", "sub") = "parent-bdd-<u>/sub".
func nested(first string, rest ...string) string {
	return strings.Join(append([]string{scoped(first)}, rest...), "/")
}

// fnID is a test function id "bdd::<label>-bdd-<u>" (extra segments go in the middle).
func fnID(label string, middle ...string) string {
	return strings.Join(append(append([]string{"bdd"}, middle...), scoped(label)), "::")
}

// sectionURI is the iii://fn/ URI of a function id.
func sectionURI(fid string) string { return "iii://fn/" + strings.ReplaceAll(fid, "::", "/") }

func call(ctx context.Context, fn string, payload any) json.RawMessage {
	GinkgoHelper()
	raw, err := client.Call(ctx, fn, payload)
	Expect(err).NotTo(HaveOccurred(), "%s %s", fn, describe(payload))
	return raw
}

func callInto(ctx context.Context, fn string, payload, out any) {
	GinkgoHelper()
	raw := call(ctx, fn, payload)
	Expect(json.Unmarshal(raw, out)).To(Succeed(), "result of %s: %s", fn, raw)
}

// obj decodes a call result as a JSON object.
func obj(ctx context.Context, fn string, payload any) map[string]any {
	GinkgoHelper()
	var m map[string]any
	callInto(ctx, fn, payload, &m)
	return m
}

// fails expects fn to fail with an error containing every substring.
func fails(ctx context.Context, fn string, payload any, substrings ...string) string {
	GinkgoHelper()
	raw, err := client.Call(ctx, fn, payload)
	Expect(err).To(HaveOccurred(), "%s %s should fail, got %s", fn, describe(payload), raw)
	for _, s := range substrings {
		Expect(err.Error()).To(ContainSubstring(s), "%s %s", fn, describe(payload))
	}
	return err.Error()
}

func describe(payload any) string {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Sprint(payload)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// registerSkill registers a skill and returns its registered_at.
func registerSkill(ctx context.Context, id, body string) string {
	GinkgoHelper()
	var out map[string]any
	callInto(ctx, "skills::register", map[string]string{"id": id, "skill": body}, &out)
	Expect(out).To(HaveKeyWithValue("id", id))
	Expect(out).To(HaveKeyWithValue("registered_at", BeAssignableToTypeOf("")))
	return out["registered_at"].(string)
}

// arg is one prompt argument as sent to prompts::register.
type arg struct {
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
	Required    *bool   `json:"required,omitempty"`
}

func req(name string) arg { t := true; return arg{Name: name, Required: &t} }

// registerPrompt registers a prompt and returns its registered_at.
func registerPrompt(ctx context.Context, name, description, functionID string, args ...arg) string {
	GinkgoHelper()
	if args == nil {
		args = []arg{}
	}
	var out map[string]any
	callInto(ctx, "prompts::register", map[string]any{"name": name, "description": description,
		"function_id": functionID, "arguments": args}, &out)
	Expect(out).To(HaveKeyWithValue("name", name))
	Expect(out).To(HaveKeyWithValue("registered_at", BeAssignableToTypeOf("")))
	return out["registered_at"].(string)
}

// content is one item of a resources-read envelope.
type content struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

// read calls skills::resources-read and expects exactly one content item
// that echoes the URI.
func read(ctx context.Context, uri string) content {
	GinkgoHelper()
	var env struct {
		Contents []content `json:"contents"`
	}
	callInto(ctx, "skills::resources-read", map[string]string{"uri": uri}, &env)
	Expect(env.Contents).To(HaveLen(1), "resources-read %s", uri)
	Expect(env.Contents[0].URI).To(Equal(uri))
	return env.Contents[0]
}

// fetch calls a fetch function and expects a JSON string result.
func fetch(ctx context.Context, fn string, payload any) string {
	GinkgoHelper()
	raw := call(ctx, fn, payload)
	var s string
	Expect(json.Unmarshal(raw, &s)).To(Succeed(), "%s must return a JSON string, got %s", fn, raw)
	return s
}

func sectionCount(s string) int { return strings.Count(s, SectionSep) + 1 }

// provide registers a test function for the current spec.
func provide(ctx context.Context, id string, h iii.Handler) {
	GinkgoHelper()
	undo, err := client.Provide(ctx, id, h)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(undo)
}

// subscribe binds a fresh test function to skills::on-change ("skills") or
// prompts::on-change ("prompts") and waits until a probe mutation reaches
// it, so the subscription is live. Probe events are about the probe only.
func subscribe(ctx context.Context, kind string) *harness.Events {
	GinkgoHelper()
	ev, undo, err := client.Subscribe(ctx, kind+"::on-change", fnID("notify-"+kind))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(undo)
	probe := scoped("probe-" + kind)
	key := "id"
	if kind == "prompts" {
		key = "name"
	}
	Eventually(func(g Gomega) {
		if kind == "skills" {
			_, err := client.Call(ctx, "skills::register", map[string]string{"id": probe, "skill": "# probe\n"})
			g.Expect(err).NotTo(HaveOccurred())
		} else {
			_, err := client.Call(ctx, "prompts::register", map[string]any{"name": probe, "description": "probe",
				"function_id": "bdd::probe"})
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Eventually(func() int { return len(ev.About(key, probe)) }).
			WithTimeout(time.Second).WithPolling(20 * time.Millisecond).ShouldNot(BeZero())
	}).WithContext(ctx).WithTimeout(15*time.Second).WithPolling(10*time.Millisecond).Should(Succeed(),
		"no %s::on-change event reached the subscription", kind)
	return ev
}

// payloadKeys are the keys of an event payload minus the engine-injected ones.
func payloadKeys(m map[string]any) []string {
	keys := slices.Sorted(maps.Keys(m))
	return slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(EngineInjected, k) })
}

// withoutInjected drops engine-injected keys from a received object.
func withoutInjected(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, x := range m {
		if !slices.Contains(EngineInjected, k) {
			out[k] = x
		}
	}
	return out
}

// expectExactEvents checks that every payload is exactly {op, <key>} with a
// valid op and a string key (plus engine-injected keys only).
func expectExactEvents(ev *harness.Events, key string) {
	GinkgoHelper()
	for _, raw := range ev.All() {
		var m map[string]any
		Expect(json.Unmarshal(raw, &m)).To(Succeed(), "event payload must be an object: %s", raw)
		Expect(payloadKeys(m)).To(Equal([]string{key, "op"}), "event payload %s", raw)
		Expect(m["op"]).To(BeElementOf("register", "unregister"), "event payload %s", raw)
		Expect(m[key]).To(BeAssignableToTypeOf(""), "event payload %s", raw)
	}
}

// eventOps returns the ops of the events about one id or name, in order.
func eventOps(ev *harness.Events, key, value string) []string {
	var ops []string
	for _, m := range ev.About(key, value) {
		op, _ := m["op"].(string)
		ops = append(ops, op)
	}
	return ops
}

// skillIDs returns the ids skills::list reports, in order.
func skillIDs(ctx context.Context) []string {
	GinkgoHelper()
	var out struct {
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	callInto(ctx, "skills::list", map[string]any{}, &out)
	ids := []string{}
	for _, s := range out.Skills {
		ids = append(ids, s.ID)
	}
	return ids
}

// promptNames returns the names prompts::list reports, in order.
func promptNames(ctx context.Context) []string {
	GinkgoHelper()
	var out struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}
	callInto(ctx, "prompts::list", map[string]any{}, &out)
	names := []string{}
	for _, p := range out.Prompts {
		names = append(names, p.Name)
	}
	return names
}

// requireLaunched skips specs that start their own registry instances.
func requireLaunched() {
	if !target.Launched {
		Skip("needs the suite to launch the skills binary itself (run without --iii-url / III_URL)")
	}
}
