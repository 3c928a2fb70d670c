package registry_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

const charsMsg = "may only contain lowercase ASCII letters, digits, '-' and '_': "

var _ = Describe("ValidateID", Label("pure"), func() {
	DescribeTable("rejects bad ids with the exact upstream message (checklist B, D6-D7, J1-J3)",
		func(id, want string) {
			Expect(registry.ValidateID(id)).To(MatchError(want))
		},
		Entry("empty", "", "id must be non-empty"),
		Entry("uppercase", "Bad-Id", `invalid id (segment 1 of "Bad-Id"): segment `+charsMsg+`"Bad-Id"`),
		Entry("space", "with space", `invalid id (segment 1 of "with space"): segment `+charsMsg+`"with space"`),
		Entry("leading slash", "/leading-slash", `id may not have a leading or trailing '/': "/leading-slash"`),
		Entry("trailing slash", "trailing-slash/", `id may not have a leading or trailing '/': "trailing-slash/"`),
		Entry("doubled slash", "doubled//slash", `invalid id (segment 2 of "doubled//slash"): segment must be non-empty`),
		Entry("colon", "with::colon", `invalid id (segment 1 of "with::colon"): segment `+charsMsg+`"with::colon"`),
		Entry("legacy section form", "anything/state::set",
			`invalid id (segment 2 of "anything/state::set"): segment `+charsMsg+`"state::set"`),
		Entry("reserved fn", "fn",
			`id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn"`),
		Entry("reserved fn/anything", "fn/anything",
			`id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/anything"`),
		Entry("segment error before reserved error", "fn/Bad",
			`invalid id (segment 2 of "fn/Bad"): segment `+charsMsg+`"Bad"`),
		Entry("quote and backslash are Debug-escaped", `a"b\c`,
			`invalid id (segment 1 of "a\"b\\c"): segment `+charsMsg+`"a\"b\\c"`),
		Entry("newline is Debug-escaped", "a\nb",
			`invalid id (segment 1 of "a\nb"): segment `+charsMsg+`"a\nb"`),
	)

	It("rejects 65 × a with the segment too-long error (B8)", func() {
		id := strings.Repeat("a", 65)
		err := registry.ValidateID(id)
		Expect(err).To(MatchError(ContainSubstring("too long")))
		Expect(err).To(MatchError(`invalid id (segment 1 of "` + id + `"): segment too long (65 chars; max 64): "` + id + `"`))
	})

	It("counts bytes, not characters, in segments", func() {
		id := strings.Repeat("é", 33) // 66 bytes, 33 chars
		Expect(registry.ValidateID(id)).To(MatchError(
			`invalid id (segment 1 of "` + id + `"): segment too long (66 chars; max 64): "` + id + `"`))
	})

	It("J1 accepts a 1024-byte id and rejects a 1025-byte one", func() {
		ok := strings.Repeat("a/", 511) + "ab"
		Expect(ok).To(HaveLen(1024))
		Expect(registry.ValidateID(ok)).To(Succeed())

		long := strings.Repeat("a/", 512) + "a"
		Expect(long).To(HaveLen(1025))
		err := registry.ValidateID(long)
		Expect(err).To(MatchError(ContainSubstring("id too long (1025 chars; max 1024)")))
		Expect(err).To(MatchError(`id too long (1025 chars; max 1024): "` + long + `"`))
	})

	It("J2 reports segment 2 for ok/ + 65 × x", func() {
		seg := strings.Repeat("x", 65)
		Expect(registry.ValidateID("ok/" + seg)).To(MatchError(
			`invalid id (segment 2 of "ok/` + seg + `"): segment too long (65 chars; max 64): "` + seg + `"`))
	})

	It("checks the leading slash before the length", func() {
		long := "/" + strings.Repeat("a", 1100)
		Expect(registry.ValidateID(long)).To(MatchError(HavePrefix("id may not have a leading or trailing '/'")))
	})

	DescribeTable("accepts valid ids",
		func(id string) { Expect(registry.ValidateID(id)).To(Succeed()) },
		Entry("simple", "my-skill-1"),
		Entry("underscore and digits", "a_1-b"),
		Entry("nested (v0.2: with/slash is valid)", "with/slash"),
		Entry("fn deeper is fine", "a/fn"),
		Entry("fn in the middle", "a/fn/c"),
		Entry("fn-prefixed segment", "docs/fn-reference"),
		Entry("fn-like first segment", "fnx"),
		Entry("64-byte segment", strings.Repeat("z", 64)),
		Entry("deep", "a/b/c/d/e/f/g"),
	)
})

var _ = Describe("ValidateIDSegment", Label("pure"), func() {
	It("reports the exact messages", func() {
		Expect(registry.ValidateIDSegment("")).To(MatchError("segment must be non-empty"))
		Expect(registry.ValidateIDSegment(strings.Repeat("b", 65))).To(MatchError(
			`segment too long (65 chars; max 64): "` + strings.Repeat("b", 65) + `"`))
		Expect(registry.ValidateIDSegment("b::c")).To(MatchError(`segment ` + charsMsg + `"b::c"`))
		Expect(registry.ValidateIDSegment("ok_1-2")).To(Succeed())
	})
})

var _ = Describe("skill body", Label("pure"), func() {
	It("rejects an empty body (B9)", func() {
		Expect(registry.ValidateSkillBody("")).To(MatchError("skill must be non-empty"))
	})
	It("accepts a whitespace-only body (J4)", func() {
		Expect(registry.ValidateSkillBody("   ")).To(Succeed())
	})
	It("accepts exactly 262144 bytes and rejects 262145 (B10-B11)", func() {
		Expect(registry.ValidateSkillBody(strings.Repeat("x", 262144))).To(Succeed())
		Expect(registry.ValidateSkillBody(strings.Repeat("x", 262145))).To(MatchError(
			"skill body too large (262145 bytes; max 262144)"))
	})
	It("counts bytes (2-byte é)", func() {
		Expect(registry.ValidateSkillBody(strings.Repeat("é", 131073))).To(MatchError(
			"skill body too large (262146 bytes; max 262144)"))
	})
	It("validates the id before the body", func() {
		Expect(registry.ValidateSkillRegistration("Bad", "")).To(MatchError(HavePrefix("invalid id (segment 1")))
		Expect(registry.ValidateSkillRegistration("emptyid", "")).To(MatchError("skill must be non-empty"))
		Expect(registry.ValidateSkillRegistration("ok/id", "# ok")).To(Succeed())
	})
	It("exposes the limits", func() {
		Expect(registry.MaxSegmentLen).To(Equal(64))
		Expect(registry.MaxIDLen).To(Equal(1024))
		Expect(registry.MaxSkillBytes).To(Equal(262144))
		Expect(registry.MaxNameLen).To(Equal(64))
		Expect(registry.MaxDescriptionChars).To(Equal(140))
	})
})

var _ = Describe("prompt validation (checklist F1-F8)", Label("pure"), func() {
	desc := "a prompt"
	DescribeTable("ValidateName",
		func(name, want string) {
			if want == "" {
				Expect(registry.ValidateName(name)).To(Succeed())
				return
			}
			Expect(registry.ValidateName(name)).To(MatchError(want))
		},
		Entry("empty", "", "name must be non-empty"),
		Entry("uppercase", "BadName", `name `+charsMsg+`"BadName"`),
		Entry("space", "bad name", `name `+charsMsg+`"bad name"`),
		Entry("namespace", "mcp::register", `name `+charsMsg+`"mcp::register"`),
		Entry("slash", "a/b", `name `+charsMsg+`"a/b"`),
		Entry("65 bytes", strings.Repeat("n", 65), "name too long (65 chars; max 64)"),
		Entry("64 bytes ok", strings.Repeat("n", 64), ""),
		Entry("kebab ok", "send-email", ""),
		Entry("snake ok", "send_email_2", ""),
	)

	It("checks name, description, function_id, arguments in that order", func() {
		Expect(registry.ValidatePromptRegistration("Bad", "", "", nil)).To(MatchError(HavePrefix("name may only contain")))
		Expect(registry.ValidatePromptRegistration("ok", "  ", "", nil)).To(MatchError("description must be non-empty"))
		Expect(registry.ValidatePromptRegistration("ok", desc, "", nil)).To(MatchError("function_id must be non-empty"))
		Expect(registry.ValidatePromptRegistration("ok", desc, " \t", nil)).To(MatchError("function_id must be non-empty"))
		Expect(registry.ValidatePromptRegistration("ok", desc, "w::f",
			[]registry.PromptArgument{{Name: "to"}, {Name: "to"}})).To(MatchError("duplicate argument name: to"))
		Expect(registry.ValidatePromptRegistration("ok", desc, "w::f",
			[]registry.PromptArgument{{Name: ""}})).To(MatchError("argument name must be non-empty"))
		Expect(registry.ValidatePromptRegistration("ok", desc, "state::set", nil)).To(Succeed(),
			"function_id is not checked against the hard floor at register time")
	})

	It("ValidateArguments trims for emptiness but compares duplicates untrimmed", func() {
		Expect(registry.ValidateArguments([]registry.PromptArgument{{Name: "  "}})).
			To(MatchError("argument name must be non-empty"))
		Expect(registry.ValidateArguments([]registry.PromptArgument{{Name: "to"}, {Name: " to"}})).To(Succeed())
		Expect(registry.ValidateArguments([]registry.PromptArgument{{Name: " to"}, {Name: "x"}, {Name: " to"}})).
			To(MatchError("duplicate argument name:  to"))
		Expect(registry.ValidateArguments([]registry.PromptArgument{{Name: "a"}, {Name: ""}, {Name: "a"}})).
			To(MatchError("argument name must be non-empty"), "list order: the empty name comes first")
		Expect(registry.ValidateArguments(nil)).To(Succeed())
	})
})

var _ = Describe("rustDebugQuote", Label("pure"), func() {
	DescribeTable("matches Rust's {:?} for str",
		func(in, want string) { Expect(registry.RustDebugQuote(in)).To(Equal(want)) },
		Entry("plain", "abc", `"abc"`),
		Entry("empty", "", `""`),
		Entry("quote and backslash", `a"b\c`, `"a\"b\\c"`),
		Entry("single quote unescaped", "it's", `"it's"`),
		Entry("newline, CR, tab, NUL", "\n\r\t\x00", `"\n\r\t\0"`),
		Entry("other control char", "\x01", `"\u{1}"`),
		Entry("escape char", "\x1b[0m", `"\u{1b}[0m"`),
		Entry("DEL", "\x7f", `"\u{7f}"`),
		Entry("printable non-ASCII", "é日本🎉", `"é日本🎉"`),
		Entry("NBSP (Zs)", "a\u00a0b", `"a\u{a0}b"`),
		Entry("zero-width space (Cf)", "\u200b", `"\u{200b}"`),
		Entry("line separator (Zl)", "\u2028", `"\u{2028}"`),
		Entry("combining mark (grapheme extend)", "e\u0301", `"e\u{301}"`),
		Entry("private use (Co)", "\ue000", `"\u{e000}"`),
		Entry("unassigned (Cn)", "\U000e0080", `"\u{e0080}"`),
	)

	It("equals Go %q for every printable ASCII character", func() {
		for c := byte(0x20); c < 0x7f; c++ {
			s := string([]byte{c, 'x', c})
			Expect(registry.RustDebugQuote(s)).To(Equal(goQuote(s)), "char %q", c)
		}
	})
})
