package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// rfc3339 is chrono's to_rfc3339(): +00:00 offset, 0/3/6/9 fraction digits.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6}|\.\d{9})?\+00:00$`)

// idOfLength builds a valid nested id of exactly n bytes from short segments.
func idOfLength(n int) string {
	id := scoped("long")
	for len(id) < n {
		seg := n - len(id) - 1
		if seg > 64 {
			seg = 64
		}
		if seg < 1 {
			// one byte left: lengthen the previous segment instead
			return idOfLength(n-2) + "/x"
		}
		id += "/" + strings.Repeat("a", seg)
	}
	return id
}

var _ = group.Describe("skills::register (checklist B)", Label("skills_register"), func() {
	DescribeTable("rejects invalid ids",
		func(ctx SpecContext, id, want string) {
			fails(ctx, "skills::register", map[string]string{"id": id, "skill": "# x\n\nbody"}, want)
		},
		Entry("B1 empty id", "", "id must be non-empty"),
		Entry("B2 uppercase", "Bad-Id", "lowercase"),
		Entry("B3 whitespace", "with space", "lowercase"),
		Entry("B4 leading slash", "/leading-slash", "leading or trailing '/'"),
		Entry("B5 trailing slash", "trailing-slash/", "leading or trailing '/'"),
		Entry("B6 doubled slash", "doubled//slash", "segment must be non-empty"),
		Entry("B7 colons", "with::colon", "lowercase"),
		Entry("B8 a 65-char segment", strings.Repeat("a", 65), "too long"),
	)

	It("B9 rejects an empty body", func(ctx SpecContext) {
		fails(ctx, "skills::register", map[string]string{"id": scoped("emptyid"), "skill": ""}, "skill must be non-empty")
	})

	It("B10 rejects a body of 262145 bytes", func(ctx SpecContext) {
		fails(ctx, "skills::register", map[string]string{"id": scoped("big"), "skill": strings.Repeat("a", 262145)},
			"too large", "skill body too large (262145 bytes; max 262144)")
	})

	It("B11 accepts a body of exactly 262144 bytes", func(ctx SpecContext) {
		registerSkill(ctx, scoped("max"), strings.Repeat("a", 262144))
	})

	It("B12 lists a registered skill: metadata only, sorted by id", func(ctx SpecContext) {
		id := scoped("smoke")
		registerSkill(ctx, id, "# smoke\n\nsmoke body")
		registerSkill(ctx, scoped("another"), "# another\n\nbody")
		var out struct {
			Skills []map[string]any `json:"skills"`
		}
		callInto(ctx, "skills::list", map[string]any{}, &out)
		var ids []string
		for _, s := range out.Skills {
			Expect(s).To(HaveKeyWithValue("bytes", BeNumerically(">=", 0)))
			Expect(s).To(HaveKeyWithValue("registered_at", BeAssignableToTypeOf("")))
			Expect(s).NotTo(HaveKey("skill"))
			ids = append(ids, s["id"].(string))
		}
		Expect(ids).To(ContainElement(id))
		Expect(slices.IsSorted(ids)).To(BeTrue(), "ids not sorted: %v", ids)
	})

	It("B13 re-registering overwrites and refreshes registered_at", func(ctx SpecContext) {
		id := scoped("twice")
		first := registerSkill(ctx, id, "# twice\n\nfirst body")
		time.Sleep(20 * time.Millisecond)
		second := registerSkill(ctx, id, "# twice\n\nsecond body")
		Expect(second).NotTo(Equal(first))
		Expect(read(ctx, "iii://"+id).Text).To(Equal("# twice\n\nsecond body"))
	})

	It("B14 unregister removes once, then reports removed=false", func(ctx SpecContext) {
		id := scoped("gone")
		registerSkill(ctx, id, "# gone\n\nbody")
		Expect(obj(ctx, "skills::unregister", map[string]string{"id": id})).To(Equal(map[string]any{"id": id, "removed": true}))
		Expect(obj(ctx, "skills::unregister", map[string]string{"id": id})).To(Equal(map[string]any{"id": id, "removed": false}))
		Expect(skillIDs(ctx)).NotTo(ContainElement(id))
	})

	It("accepts an id with a slash (v0.1.4 rejected it)", Label("extra"), func(ctx SpecContext) {
		registerSkill(ctx, nested("with", "slash"), "# nested\n")
	})
})

var _ = group.Describe("skills registry extras (checklist J1–J4, J18)", Label("extra"), func() {
	It("J1 caps the total id length at 1024 bytes", Label("J1"), func(ctx SpecContext) {
		ok := idOfLength(1024)
		Expect(ok).To(HaveLen(1024))
		registerSkill(ctx, ok, "# long\n")
		long := idOfLength(1025)
		Expect(long).To(HaveLen(1025))
		fails(ctx, "skills::register", map[string]string{"id": long, "skill": "# long\n"},
			fmt.Sprintf("id too long (1025 chars; max 1024): %q", long))
	})

	It("J2 reports a long later segment with its position", Label("J2"), func(ctx SpecContext) {
		id := scoped("ok") + "/" + strings.Repeat("x", 65)
		fails(ctx, "skills::register", map[string]string{"id": id, "skill": "# x\n"},
			fmt.Sprintf("invalid id (segment 2 of %q): segment too long (65 chars; max 64): %q", id, strings.Repeat("x", 65)))
	})

	It("J3 allows fn below the first segment; reports segment errors before the reserved word", Label("J3"), func(ctx SpecContext) {
		registerSkill(ctx, nested("a", "fn"), "# a/fn\n")
		registerSkill(ctx, nested("a", "fn", "c"), "# a/fn/c\n")
		msg := fails(ctx, "skills::register", map[string]string{"id": "fn/Bad", "skill": "# x\n"},
			`invalid id (segment 2 of "fn/Bad"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "Bad"`)
		Expect(msg).NotTo(ContainSubstring("reserved"))
		fails(ctx, "skills::register", map[string]string{"id": "fn/ok", "skill": "# x\n"},
			`id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/ok"`)
	})

	It("J3 unregister validates the id too", Label("J3"), func(ctx SpecContext) {
		fails(ctx, "skills::unregister", map[string]string{"id": "fn/x"}, "reserved")
		fails(ctx, "skills::unregister", map[string]string{"id": "a//b"}, "segment must be non-empty")
		fails(ctx, "skills::unregister", map[string]string{"id": ""}, "id must be non-empty")
	})

	It("J4 accepts a whitespace-only body and counts bytes in UTF-8", Label("J4"), func(ctx SpecContext) {
		blank, accents := scoped("blank"), scoped("accents")
		registerSkill(ctx, blank, "   ")
		registerSkill(ctx, accents, "# é\n\nhéllo")
		var out struct {
			Skills []struct {
				ID    string `json:"id"`
				Bytes int    `json:"bytes"`
			} `json:"skills"`
		}
		callInto(ctx, "skills::list", map[string]any{}, &out)
		bytes := map[string]int{}
		for _, s := range out.Skills {
			bytes[s.ID] = s.Bytes
		}
		Expect(bytes).To(HaveKeyWithValue(blank, 3))
		Expect(bytes).To(HaveKeyWithValue(accents, len("# é\n\nhéllo")))
		Expect(read(ctx, "iii://"+blank).Text).To(Equal("   "))
	})

	It("J18 timestamps are RFC 3339 with a +00:00 offset", Label("J18"), func(ctx SpecContext) {
		Expect(registerSkill(ctx, scoped("ts"), "# ts\n")).To(MatchRegexp(rfc3339.String()))
		Expect(registerPrompt(ctx, scoped("ts"), "ts", "bdd::ts")).To(MatchRegexp(rfc3339.String()))
		var skills struct {
			Skills []struct {
				RegisteredAt string `json:"registered_at"`
			} `json:"skills"`
		}
		callInto(ctx, "skills::list", map[string]any{}, &skills)
		Expect(skills.Skills).NotTo(BeEmpty())
		for _, s := range skills.Skills {
			Expect(s.RegisteredAt).To(MatchRegexp(rfc3339.String()))
		}
		var prompts struct {
			Prompts []struct {
				RegisteredAt string `json:"registered_at"`
			} `json:"prompts"`
		}
		callInto(ctx, "prompts::list", map[string]any{}, &prompts)
		Expect(prompts.Prompts).NotTo(BeEmpty())
		for _, p := range prompts.Prompts {
			Expect(p.RegisteredAt).To(MatchRegexp(rfc3339.String()))
		}
	})

	It("decoding: a missing field or a null payload fails with serde-style messages", Label("extra"), func(ctx SpecContext) {
		fails(ctx, "skills::register", map[string]string{"skill": "x"}, "missing field `id`")
		fails(ctx, "skills::register", map[string]string{"id": scoped("noskill")}, "missing field `skill`")
		fails(ctx, "skills::unregister", map[string]any{}, "missing field `id`")
		fails(ctx, "skills::register", map[string]any{"id": 5, "skill": "x"}, "invalid type")
	})
})
