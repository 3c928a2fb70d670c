package registry_test

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

// Checklist A: upstream markdown.feature (@pure), all 31 definitions with
// both outlines expanded (9 + 3 rows).
var _ = Describe("markdown.feature", Label("pure", "markdown"), func() {
	It("A1 extract_title picks up the first H1", func() {
		title, ok := registry.ExtractTitle("# my skill\n\nbody")
		Expect(ok).To(BeTrue())
		Expect(title).To(Equal("my skill"))
	})

	It("A2 extract_title ignores H2", func() {
		title, ok := registry.ExtractTitle("## sub\n\nbody")
		Expect(ok).To(BeFalse())
		Expect(title).To(BeEmpty())
	})

	It("A3 extract_description returns the first paragraph", func() {
		d, ok := registry.ExtractDescription("# title\n\nfirst paragraph here.\n\nsecond paragraph.")
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal("first paragraph here."))
	})

	It("A4 extract_description skips subheadings", func() {
		d, ok := registry.ExtractDescription("# title\n\n## sub\n\n### deeper\n\nfinally text.")
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal("finally text."))
	})

	It("A5 extract_description on a heading-only doc is none", func() {
		d, ok := registry.ExtractDescription("# only a title")
		Expect(ok).To(BeFalse())
		Expect(d).To(BeEmpty())
	})

	It("A6 truncate_chars keeps multibyte characters whole", func() {
		out := registry.TruncateChars(strings.Repeat("áéíóú", 50), 5)
		Expect(utf8.RuneCountInString(out)).To(Equal(8))
		Expect(out).To(HaveSuffix("..."))
		Expect(out).To(Equal("áéíóú..."))
	})

	It("A7 parses iii://skills as the index", func() {
		t, err := registry.ParseURI("iii://skills")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.IndexTarget()))
		Expect(t.Kind).To(Equal(registry.TargetIndex))
	})

	It("A8 parses iii://brain as skill brain", func() {
		t, err := registry.ParseURI("iii://brain")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.Target{Kind: registry.TargetSkill, ID: "brain"}))
	})

	It("A9 parses iii://parent/sub as skill parent/sub", func() {
		t, err := registry.ParseURI("iii://parent/sub")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.SkillTarget("parent/sub")))
	})

	It("A10 parses iii://a/b/c/d/e as skill a/b/c/d/e", func() {
		t, err := registry.ParseURI("iii://a/b/c/d/e")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.SkillTarget("a/b/c/d/e")))
	})

	It("A11 parses iii://fn/echo as section echo", func() {
		t, err := registry.ParseURI("iii://fn/echo")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.Target{Kind: registry.TargetSection, FunctionID: "echo"}))
	})

	It("A12 parses iii://fn/scope/echo as section scope::echo", func() {
		t, err := registry.ParseURI("iii://fn/scope/echo")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.SectionTarget("scope::echo")))
	})

	It("A13 parses iii://fn/resend/email/send as section resend::email::send", func() {
		t, err := registry.ParseURI("iii://fn/resend/email/send")
		Expect(err).NotTo(HaveOccurred())
		Expect(t).To(Equal(registry.SectionTarget("resend::email::send")))
	})

	It("A14 rejects brain without a scheme", func() {
		_, err := registry.ParseURI("brain")
		Expect(err).To(MatchError("Resource URI must start with iii://: brain"))
	})

	It("A15 rejects iii://fn without a function path", func() {
		_, err := registry.ParseURI("iii://fn")
		Expect(err).To(MatchError("Section URI 'iii://fn' is missing a function path: expected iii://fn/{a}/{b}/...: iii://fn"))
	})

	It("A16 rejects iii://a//b (doubled slash)", func() {
		_, err := registry.ParseURI("iii://a//b")
		Expect(err).To(MatchError("Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://a//b"))
	})

	It("A17 validate_id accepts my-skill-1", func() {
		Expect(registry.ValidateID("my-skill-1")).To(Succeed())
	})

	It("A18 validate_id rejects UpperCase", func() {
		Expect(registry.ValidateID("UpperCase")).To(MatchError(
			`invalid id (segment 1 of "UpperCase"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "UpperCase"`))
	})

	It("A19 validate_id rejects 65 × a", func() {
		id := strings.Repeat("a", 65)
		Expect(registry.ValidateID(id)).To(MatchError(
			`invalid id (segment 1 of "` + id + `"): segment too long (65 chars; max 64): "` + id + `"`))
	})

	It("A20 validate_name accepts send-email", func() {
		Expect(registry.ValidateName("send-email")).To(Succeed())
	})

	It("A21 validate_name rejects mcp::send", func() {
		Expect(registry.ValidateName("mcp::send")).To(MatchError(
			`name may only contain lowercase ASCII letters, digits, '-' and '_': "mcp::send"`))
	})

	It("A22 validate_arguments rejects a duplicate name", func() {
		args := []registry.PromptArgument{{Name: "to", Required: true}, {Name: "to"}}
		Expect(registry.ValidateArguments(args)).To(MatchError("duplicate argument name: to"))
	})

	It("A23 validate_arguments rejects an empty name", func() {
		Expect(registry.ValidateArguments([]registry.PromptArgument{{Name: ""}})).
			To(MatchError("argument name must be non-empty"))
	})

	It("A24 normalizes a string section output as markdown", func() {
		text, mime := registry.NormalizeSectionOutput(json.RawMessage(`"hello"`))
		Expect(mime).To(Equal("text/markdown"))
		Expect(text).To(Equal("hello"))
	})

	It("A25 normalizes {content: string} as markdown", func() {
		text, mime := registry.NormalizeSectionOutput(json.RawMessage(`{"content":"hi"}`))
		Expect(mime).To(Equal("text/markdown"))
		Expect(text).To(Equal("hi"))
	})

	It("A26 normalizes other objects as pretty JSON", func() {
		text, mime := registry.NormalizeSectionOutput(json.RawMessage(`{"x":1}`))
		Expect(mime).To(Equal("application/json"))
		Expect(text).To(ContainSubstring(`"x"`))
		Expect(text).To(Equal("{\n  \"x\": 1\n}"))
	})

	It("A27 normalizes a string prompt output to one user message", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(`"hello"`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).To(HaveLen(1))
		Expect(string(msgs[0])).To(MatchJSON(`{"role":"user","content":{"type":"text","text":"hello"}}`))
	})

	It("A28 passes {messages: [...]} through unchanged", func() {
		msgs, err := registry.NormalizePromptOutput(json.RawMessage(
			`{"messages":[{"role":"user","content":{"type":"text","text":"a"}},{"role":"assistant","content":{"type":"text","text":"b"}}]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(msgs).To(HaveLen(2))
		Expect(string(msgs[0])).To(MatchJSON(`{"role":"user","content":{"type":"text","text":"a"}}`))
		Expect(string(msgs[1])).To(MatchJSON(`{"role":"assistant","content":{"type":"text","text":"b"}}`))
	})

	It("A29 rejects an unsupported prompt output shape", func() {
		_, err := registry.NormalizePromptOutput(json.RawMessage(`{"x":1}`))
		Expect(err).To(MatchError(
			"prompt handler returned unsupported shape; expected string, { content }, or { messages: [...] }"))
	})

	DescribeTable("A30 hard-floored function ids are hidden",
		func(fid string) {
			Expect(registry.IsHidden(fid)).To(BeTrue())
		},
		Entry("state::get", "state::get"),
		Entry("engine::workers", "engine::workers"),
		Entry("stream::publish", "stream::publish"),
		Entry("iii.on_foo", "iii.on_foo"),
		Entry("iii::internal", "iii::internal"),
		Entry("mcp::handler", "mcp::handler"),
		Entry("a2a::send", "a2a::send"),
		Entry("skills::register", "skills::register"),
		Entry("prompts::register", "prompts::register"),
	)

	DescribeTable("A31 ordinary function ids are not hidden",
		func(fid string) {
			Expect(registry.IsHidden(fid)).To(BeFalse())
		},
		Entry("mem::observe", "mem::observe"),
		Entry("brain::summarize", "brain::summarize"),
		Entry("my-worker::my-fn", "my-worker::my-fn"),
	)
})
