package registry_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("Timestamp (J18)", Label("pure"), func() {
	base := func(ns int) time.Time { return time.Date(2026, 5, 4, 20, 22, 41, ns, time.UTC) }
	DescribeTable("RFC 3339 with +00:00 and chrono AutoSi fractions",
		func(t time.Time, want string) { Expect(registry.Timestamp(t)).To(Equal(want)) },
		Entry("whole second", base(0), "2026-05-04T20:22:41+00:00"),
		Entry("milliseconds", base(123_000_000), "2026-05-04T20:22:41.123+00:00"),
		Entry("milliseconds with trailing zero", base(120_000_000), "2026-05-04T20:22:41.120+00:00"),
		Entry("microseconds", base(123_456_000), "2026-05-04T20:22:41.123456+00:00"),
		Entry("one microsecond", base(1_000), "2026-05-04T20:22:41.000001+00:00"),
		Entry("nanoseconds", base(123_456_789), "2026-05-04T20:22:41.123456789+00:00"),
		Entry("100 ns", base(100), "2026-05-04T20:22:41.000000100+00:00"),
		Entry("other zones convert to UTC", time.Date(2026, 1, 1, 1, 0, 0, 5_000_000, time.FixedZone("x", 2*3600)),
			"2025-12-31T23:00:00.005+00:00"),
	)
})

var _ = Describe("stored rows", Label("pure"), func() {
	now := time.Date(2026, 5, 4, 20, 22, 41, 0, time.UTC)

	It("StoredSkill has exactly id, registered_at, skill", func() {
		Expect(encode(registry.NewStoredSkill("a/b", "# T <&>", now))).To(Equal(
			`{"id":"a/b","registered_at":"2026-05-04T20:22:41+00:00","skill":"# T <&>"}`))
	})

	It("StoredPrompt omits absent argument descriptions and keeps required", func() {
		p := registry.NewStoredPrompt("send-email", " desc ", " w::f ", []registry.PromptArgument{
			{Name: "to", Description: ptr("Recipient"), Required: true},
			{Name: "cc"},
		}, now)
		Expect(encode(p)).To(Equal(`{"arguments":[{"description":"Recipient","name":"to","required":true},{"name":"cc","required":false}],` +
			`"description":" desc ","function_id":" w::f ","name":"send-email","registered_at":"2026-05-04T20:22:41+00:00"}`))
		Expect(encode(registry.NewStoredPrompt("p", "d", "f", nil, now))).To(Equal(
			`{"arguments":[],"description":"d","function_id":"f","name":"p","registered_at":"2026-05-04T20:22:41+00:00"}`))
	})
})

var _ = Describe("function outputs", Label("pure"), func() {
	It("skills::list reports UTF-8 byte counts sorted by id, without bodies (J4, B12)", func() {
		l := registry.NewSkillList([]registry.StoredSkill{
			{ID: "b", Skill: "é", RegisteredAt: "t2"},
			{ID: "a/b", Skill: "   ", RegisteredAt: "t3"},
			{ID: "a-x", Skill: "xy", RegisteredAt: "t1"},
		})
		Expect(encode(l)).To(Equal(`{"skills":[{"bytes":2,"id":"a-x","registered_at":"t1"},{"bytes":3,"id":"a/b","registered_at":"t3"},{"bytes":2,"id":"b","registered_at":"t2"}]}`))
		Expect(encode(registry.NewSkillList(nil))).To(Equal(`{"skills":[]}`))
	})

	It("prompts::list reports argument counts sorted by name", func() {
		l := registry.NewPromptList([]registry.StoredPrompt{
			{Name: "z", FunctionID: "w::z", RegisteredAt: "t", Arguments: []registry.PromptArgument{{Name: "a"}, {Name: "b"}}},
			{Name: "a", FunctionID: "w::a", RegisteredAt: "t"},
		})
		Expect(encode(l)).To(Equal(`{"prompts":[{"arguments":0,"function_id":"w::a","name":"a","registered_at":"t"},{"arguments":2,"function_id":"w::z","name":"z","registered_at":"t"}]}`))
		Expect(encode(registry.NewPromptList(nil))).To(Equal(`{"prompts":[]}`))
	})

	It("register/unregister outputs and change payloads have exact keys (J5)", func() {
		Expect(encode(registry.RegisterSkillOutput{ID: "x", RegisteredAt: "t"})).To(Equal(`{"id":"x","registered_at":"t"}`))
		Expect(encode(registry.UnregisterSkillOutput{ID: "x", Removed: false})).To(Equal(`{"id":"x","removed":false}`))
		Expect(encode(registry.RegisterPromptOutput{Name: "p", RegisteredAt: "t"})).To(Equal(`{"name":"p","registered_at":"t"}`))
		Expect(encode(registry.UnregisterPromptOutput{Name: "p", Removed: true})).To(Equal(`{"name":"p","removed":true}`))
		Expect(encode(registry.SkillChange{ID: "x", Op: registry.OpRegister})).To(Equal(`{"id":"x","op":"register"}`))
		Expect(encode(registry.PromptChange{Name: "p", Op: registry.OpUnregister})).To(Equal(`{"name":"p","op":"unregister"}`))
	})
})

var _ = Describe("MCP envelopes", Label("pure"), func() {
	It("resources-list: index entry first with description, skills sorted without description (J8, J9)", func() {
		l := registry.NewResourcesList([]registry.IndexEntry{
			registry.NewIndexEntry("tree/leaf", "no title"),
			registry.NewIndexEntry("skills", "# Shadowed"),
			registry.NewIndexEntry("listed", "# Listed\n\nA paragraph."),
		})
		Expect(encode(l)).To(Equal(`{"resources":[` +
			`{"description":"Index of every registered skill","mimeType":"text/markdown","name":"skills","uri":"iii://skills"},` +
			`{"mimeType":"text/markdown","name":"Listed","uri":"iii://listed"},` +
			`{"mimeType":"text/markdown","name":"Shadowed","uri":"iii://skills"},` +
			`{"mimeType":"text/markdown","name":"tree/leaf","uri":"iii://tree/leaf"}]}`))
	})

	It("resources-list with no skills holds only the index entry", func() {
		Expect(encode(registry.NewResourcesList(nil))).To(Equal(
			`{"resources":[{"description":"Index of every registered skill","mimeType":"text/markdown","name":"skills","uri":"iii://skills"}]}`))
	})

	It("resources-read echoes the uri verbatim in one content item", func() {
		Expect(encode(registry.NewReadResult("iii://fn/a/b", "application/json", "{}"))).To(Equal(
			`{"contents":[{"mimeType":"application/json","text":"{}","uri":"iii://fn/a/b"}]}`))
	})

	It("resources-templates is the constant v0.2.2 envelope (C2)", func() {
		Expect(encode(registry.Templates())).To(Equal(`{"resourceTemplates":[` +
			`{"description":"Markdown body of a registered skill (1+ segments separated by '/')","mimeType":"text/markdown","name":"Skill","uriTemplate":"iii://{skill_id}"},` +
			"{\"description\":\"Trigger the function at `function_path` (each '/' becomes '::') with empty input and serve its output. e.g. `iii://fn/scope/echo` triggers `scope::echo`.\",\"mimeType\":\"text/markdown\",\"name\":\"Skill section\",\"uriTemplate\":\"iii://fn/{function_path}\"}]}"))
	})

	It("prompts mcp-list omits absent argument descriptions and defaults required to false (J14, I3)", func() {
		l := registry.NewMCPPromptList([]registry.StoredPrompt{
			{Name: "z-prompt", Description: "later", FunctionID: "w::z"},
			{Name: "bridge-prompt", Description: "bdd bridge", FunctionID: "w::b", Arguments: []registry.PromptArgument{
				{Name: "to", Required: true},
				{Name: "cc", Description: ptr("Copy")},
			}},
		})
		Expect(encode(l)).To(Equal(`{"prompts":[` +
			`{"arguments":[{"name":"to","required":true},{"description":"Copy","name":"cc","required":false}],"description":"bdd bridge","name":"bridge-prompt"},` +
			`{"arguments":[],"description":"later","name":"z-prompt"}]}`))
		Expect(encode(registry.NewMCPPromptList(nil))).To(Equal(`{"prompts":[]}`))
	})
})

var _ = Describe("read-path errors (§3)", Label("pure"), func() {
	cause := errString("remote error (function_not_found): Function a::b not found")

	It("formats every message exactly and wraps causes", func() {
		Expect(registry.ErrSkillNotFound("a/b/c")).To(MatchError("Skill not found: a/b/c"))
		Expect(registry.ErrPromptNotFound("no-such-prompt")).To(MatchError("Prompt not found: no-such-prompt"))
		Expect(registry.ErrHiddenSection("state::set")).To(MatchError(
			"Function 'state::set' is in an internal namespace and cannot back a skill resource"))
		Expect(registry.ErrHiddenPrompt("state::set")).To(MatchError(
			"Prompt handler 'state::set' is in an internal namespace and cannot back a prompt"))
		err := registry.ErrTrigger("a::b", cause)
		Expect(err).To(MatchError("trigger a::b: remote error (function_not_found): Function a::b not found"))
		Expect(err).To(MatchError(cause))
		Expect(registry.ErrTrigger("a::b", errString("invocation timed out"))).To(MatchError("trigger a::b: invocation timed out"))
		Expect(registry.ErrState(iii.StateGet, errString("boom"))).To(MatchError("state::get: boom"))
		Expect(registry.ErrDecodeSkill("x", errString("missing field `skill`"))).To(MatchError("decode stored skill x: missing field `skill`"))
		Expect(registry.ErrDecodePrompt("p", errString("e"))).To(MatchError("decode stored prompt p: e"))
		Expect(registry.ErrFetchNoInput()).To(MatchError("Provide uri or a non-empty uris array"))
		Expect(registry.ErrFetchInvalidURI("agent-memory")).To(MatchError("Invalid URI (must start with iii://): agent-memory"))
		Expect(registry.ErrURIScheme("https://x")).To(MatchError("Resource URI must start with iii://: https://x"))
	})
})

var _ = Describe("function surface strings", Label("pure"), func() {
	It("matches the v0.2.2 API reference", func() {
		Expect(rules.FnSkillFetch).To(Equal("skill::fetch"))
		Expect(registry.IsHidden(rules.FnSkillFetch)).To(BeFalse())
		Expect(registry.IsHidden(rules.FnSkillsFetchSkill)).To(BeTrue())
	})
})

type errString string

func (e errString) Error() string { return string(e) }
