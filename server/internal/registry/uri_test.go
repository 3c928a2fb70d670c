package registry_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

const segChars = "segment may only contain lowercase ASCII letters, digits, '-' and '_': "

var _ = Describe("ParseURI", Label("pure"), func() {
	DescribeTable("resolves targets",
		func(uri string, want registry.Target) {
			got, err := registry.ParseURI(uri)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want))
		},
		Entry("index", "iii://skills", registry.IndexTarget()),
		Entry("skills/foo is an ordinary skill (J9)", "iii://skills/foo", registry.SkillTarget("skills/foo")),
		Entry("x/y/z is a skill in v0.2", "iii://x/y/z", registry.SkillTarget("x/y/z")),
		Entry("legacy two-segment form is a skill id (validated at read)", "iii://anything/state::set",
			registry.SkillTarget("anything/state::set")),
		Entry("upper case skill id is returned unvalidated", "iii://UpperCase", registry.SkillTarget("UpperCase")),
		Entry("fn deeper in a skill id", "iii://docs/fn-reference", registry.SkillTarget("docs/fn-reference")),
		Entry("section a::b::c::d", "iii://fn/a/b/c/d", registry.SectionTarget("a::b::c::d")),
		Entry("bare state is a section, not blocked (J10)", "iii://fn/state", registry.SectionTarget("state")),
		Entry("skill/fetch is allowed (J10)", "iii://fn/skill/fetch", registry.SectionTarget("skill::fetch")),
		Entry("fn segment named fn", "iii://fn/fn", registry.SectionTarget("fn")),
	)

	DescribeTable("rejects bad URIs with the exact upstream message",
		func(uri, want string) {
			_, err := registry.ParseURI(uri)
			Expect(err).To(MatchError(want))
		},
		Entry("other scheme (C12)", "https://example.com", "Resource URI must start with iii://: https://example.com"),
		Entry("no scheme", "brain", "Resource URI must start with iii://: brain"),
		Entry("scheme case matters", "III://skills", "Resource URI must start with iii://: III://skills"),
		Entry("empty remainder", "iii://", "Empty resource id: iii://"),
		Entry("fn/ trailing slash (C14)", "iii://fn/",
			"Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://fn/"),
		Entry("leading slash", "iii:///fn",
			"Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii:///fn"),
		Entry("skill/ trailing slash", "iii://skill/",
			"Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://skill/"),
		Entry("skills/ is not the index (J9)", "iii://skills/",
			"Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://skills/"),
		Entry("fn without a path (C13)", "iii://fn",
			"Section URI 'iii://fn' is missing a function path: expected iii://fn/{a}/{b}/...: iii://fn"),
		Entry("upper case section segment (J10)", "iii://fn/Bad-Case",
			`invalid section URI segment "Bad-Case": `+segChars+`"Bad-Case"`),
		Entry("colons in a section segment (J10)", "iii://fn/a/b::c",
			`invalid section URI segment "b::c": `+segChars+`"b::c"`),
		Entry("space in a section segment (J10)", "iii://fn/a b",
			`invalid section URI segment "a b": `+segChars+`"a b"`),
		Entry("dots make iii.* unreachable", "iii://fn/iii.on_foo",
			`invalid section URI segment "iii.on_foo": `+segChars+`"iii.on_foo"`),
		Entry("query strings get no special handling", "iii://fn/a?x=1",
			`invalid section URI segment "a?x=1": `+segChars+`"a?x=1"`),
	)

	It("reads the legacy form as an invalid id, not as not-found (§8.1)", func() {
		t, err := registry.ParseURI("iii://anything/state::set")
		Expect(err).NotTo(HaveOccurred())
		Expect(registry.ValidateID(t.ID)).To(MatchError(
			`invalid id (segment 2 of "anything/state::set"): ` + segChars + `"state::set"`))
	})

	It("names target kinds", func() {
		Expect(registry.TargetIndex.String()).To(Equal("index"))
		Expect(registry.TargetSkill.String()).To(Equal("skill"))
		Expect(registry.TargetSection.String()).To(Equal("section"))
		Expect(registry.TargetKind(9).String()).To(Equal("TargetKind(9)"))
	})

	It("builds skill URIs", func() {
		Expect(registry.SkillURI("a/b")).To(Equal("iii://a/b"))
		Expect(registry.IndexURI).To(Equal("iii://skills"))
	})
})

var _ = Describe("recursion guard", Label("pure"), func() {
	It("exports the exact hard-floor list", func() {
		Expect(registry.AlwaysHiddenPrefixes).To(Equal([]string{
			"engine::", "state::", "stream::", "iii.", "iii::", "mcp::", "a2a::", "skills::", "prompts::",
		}))
	})

	It("cannot be weakened by mutating the exported list", func() {
		saved := registry.AlwaysHiddenPrefixes[1]
		registry.AlwaysHiddenPrefixes[1] = "zzz::"
		defer func() { registry.AlwaysHiddenPrefixes[1] = saved }()
		Expect(registry.IsHidden("state::set")).To(BeTrue())
	})

	DescribeTable("section URIs into internal namespaces are blocked (C8-C11, J10)",
		func(uri, fid string) {
			t, err := registry.ParseURI(uri)
			Expect(err).NotTo(HaveOccurred())
			Expect(t).To(Equal(registry.SectionTarget(fid)))
			Expect(registry.IsHidden(t.FunctionID)).To(BeTrue())
			err = registry.CheckSection(t.FunctionID)
			Expect(err).To(MatchError(ContainSubstring("internal namespace")))
			Expect(err).To(MatchError("Function '" + fid + "' is in an internal namespace and cannot back a skill resource"))
		},
		Entry("state/set", "iii://fn/state/set", "state::set"),
		Entry("mcp/handler", "iii://fn/mcp/handler", "mcp::handler"),
		Entry("skills/register", "iii://fn/skills/register", "skills::register"),
		Entry("prompts/register", "iii://fn/prompts/register", "prompts::register"),
		Entry("iii/x", "iii://fn/iii/x", "iii::x"),
		Entry("stream/x", "iii://fn/stream/x", "stream::x"),
		Entry("engine/x", "iii://fn/engine/x", "engine::x"),
		Entry("a2a/x", "iii://fn/a2a/x", "a2a::x"),
	)

	DescribeTable("ordinary and near-miss ids are not hidden",
		func(fid string) {
			Expect(registry.IsHidden(fid)).To(BeFalse())
			Expect(registry.CheckSection(fid)).To(Succeed())
			Expect(registry.CheckPromptHandler(fid)).To(Succeed())
		},
		Entry("bare state", "state"),
		Entry("skill::fetch alias", "skill::fetch"),
		Entry("iii without separator", "iiix::y"),
		Entry("engine with one colon", "engine:x"),
		Entry("leading space", " state::get"),
	)

	It("blocks hidden prompt handlers with the prompt message (G6)", func() {
		Expect(registry.CheckPromptHandler("state::set")).To(MatchError(
			"Prompt handler 'state::set' is in an internal namespace and cannot back a prompt"))
	})
})
