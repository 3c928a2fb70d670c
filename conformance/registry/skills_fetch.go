package registry

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var _ = group.Describe("skill fetch (checklist E)", Label("skills_fetch"), func() {
	var alpha, beta string

	BeforeEach(func(ctx SpecContext) {
		alpha, beta = "iii://"+scoped("alpha"), "iii://"+scoped("beta")
		registerSkill(ctx, scoped("alpha"), "# alpha-skill\nAlpha body line.")
		registerSkill(ctx, scoped("beta"), "# beta-skill\nBeta body line.")
	})

	It("E1 fetch_skill with one URI", func(ctx SpecContext) {
		out := fetch(ctx, "skills::fetch_skill", map[string]any{"uris": []string{alpha}})
		Expect(out).To(HavePrefix("# " + alpha))
		Expect(out).To(ContainSubstring("Alpha body line."))
		Expect(sectionCount(out)).To(Equal(1))
		Expect(out).To(Equal("# " + alpha + "\n\n# alpha-skill\nAlpha body line."))
	})

	It("E2 fetch_skill with two URIs", func(ctx SpecContext) {
		out := fetch(ctx, "skills::fetch_skill", map[string]any{"uris": []string{alpha, beta}})
		Expect(out).To(ContainSubstring("Alpha body line."))
		Expect(out).To(ContainSubstring("Beta body line."))
		Expect(sectionCount(out)).To(Equal(2))
		Expect(out).To(Equal("# " + alpha + "\n\n# alpha-skill\nAlpha body line." + SectionSep +
			"# " + beta + "\n\n# beta-skill\nBeta body line."))
	})

	It("E3 the skill::fetch alias gives the same result", func(ctx SpecContext) {
		payload := map[string]any{"uris": []string{alpha, beta}}
		Expect(fetch(ctx, "skill::fetch", payload)).To(Equal(fetch(ctx, "skills::fetch_skill", payload)))
	})

	It("E4 uris wins over uri", func(ctx SpecContext) {
		out := fetch(ctx, "skills::fetch_skill", map[string]any{"uris": []string{beta}, "uri": alpha})
		Expect(out).To(ContainSubstring("Beta body line."))
		Expect(out).NotTo(ContainSubstring("Alpha body line."))
		Expect(sectionCount(out)).To(Equal(1))
	})

	It("E5 {} asks for a uri", func(ctx SpecContext) {
		fails(ctx, "skills::fetch_skill", map[string]any{}, "Provide uri", "Provide uri or a non-empty uris array")
	})

	It("E6 a non-iii URI is refused", func(ctx SpecContext) {
		fails(ctx, "skills::fetch_skill", map[string]any{"uri": "https://example.com"},
			"iii://", "Invalid URI (must start with iii://): https://example.com")
	})

	It("E7 a blank uri asks for a uri", func(ctx SpecContext) {
		fails(ctx, "skills::fetch_skill", map[string]any{"uri": "   "}, "Provide uri")
	})

	It("E8 an unknown skill is not found", func(ctx SpecContext) {
		fails(ctx, "skills::fetch_skill", map[string]any{"uri": "iii://does-not-exist-xyz"},
			"not found", "Skill not found: does-not-exist-xyz")
	})

	It("E9 skill::fetch {} asks for a uri", func(ctx SpecContext) {
		fails(ctx, "skill::fetch", map[string]any{}, "Provide uri")
	})

	Describe("extras (checklist J12)", Label("extra", "J12"), func() {
		It("uses uri when uris is empty", func(ctx SpecContext) {
			out := fetch(ctx, "skill::fetch", map[string]any{"uris": []string{}, "uri": alpha})
			Expect(out).To(Equal("# " + alpha + "\n\n# alpha-skill\nAlpha body line."))
		})

		It("does not fall back to uri when every uris entry is blank", func(ctx SpecContext) {
			fails(ctx, "skill::fetch", map[string]any{"uris": []string{"  "}, "uri": alpha}, "Provide uri")
		})

		It("drops blank entries", func(ctx SpecContext) {
			out := fetch(ctx, "skill::fetch", map[string]any{"uris": []string{alpha, "   ", beta}})
			Expect(sectionCount(out)).To(Equal(2))
		})

		It("trims entries and heads each section with the trimmed URI", func(ctx SpecContext) {
			out := fetch(ctx, "skill::fetch", map[string]any{"uris": []string{"  " + alpha + "\t"}})
			Expect(out).To(Equal("# " + alpha + "\n\n# alpha-skill\nAlpha body line."))
		})

		It("checks every scheme before reading anything", func(ctx SpecContext) {
			var calls atomic.Int32
			fid := fnID("counted")
			provide(ctx, fid, func(context.Context, json.RawMessage) (any, error) {
				calls.Add(1)
				return "counted", nil
			})
			fails(ctx, "skill::fetch", map[string]any{"uris": []string{sectionURI(fid), "ftp://nope"}},
				"Invalid URI (must start with iii://): ftp://nope")
			Expect(calls.Load()).To(BeZero(), "the section before the bad URI was read")
		})

		It("aborts on an unknown URI in the middle, with no partial output", func(ctx SpecContext) {
			missing := scoped("missing")
			fails(ctx, "skill::fetch", map[string]any{"uris": []string{alpha, "iii://" + missing, beta}},
				"Skill not found: "+missing)
		})

		It("right-trims each section's text", func(ctx SpecContext) {
			id := scoped("trailing")
			registerSkill(ctx, id, "  # trailing\n\nbody  \n\n\t\n")
			Expect(fetch(ctx, "skill::fetch", map[string]any{"uri": "iii://" + id})).
				To(Equal("# iii://" + id + "\n\n  # trailing\n\nbody"))
		})

		It("reads duplicates twice", func(ctx SpecContext) {
			out := fetch(ctx, "skill::fetch", map[string]any{"uris": []string{alpha, alpha}})
			Expect(sectionCount(out)).To(Equal(2))
		})

		It("serves the index and section URIs too", func(ctx SpecContext) {
			fid := fnID("fetch-section")
			provide(ctx, fid, harness.Returning(map[string]any{"content": "# fetched section\n\n"}))
			out := fetch(ctx, "skill::fetch", map[string]any{"uris": []string{"iii://skills", sectionURI(fid)}})
			parts := strings.Split(out, SectionSep)
			Expect(parts).To(HaveLen(2))
			Expect(parts[0]).To(HavePrefix("# iii://skills\n\n" + IndexHeader))
			Expect(parts[1]).To(Equal("# " + sectionURI(fid) + "\n\n# fetched section"))
		})

		It("returns a JSON string", func(ctx SpecContext) {
			raw := call(ctx, "skill::fetch", map[string]any{"uri": alpha})
			Expect(strings.TrimSpace(string(raw))).To(HavePrefix(`"`))
		})

		It("rejects other schemes with the upstream message", func(ctx SpecContext) {
			fails(ctx, "skill::fetch", map[string]any{"uris": []string{alpha, "ftp://x"}},
				"Invalid URI (must start with iii://): ftp://x")
		})

		It("bare skill paths: rejected in strict (upstream) mode, resolved like iii:// otherwise", func(ctx SpecContext) {
			bare := scoped("alpha")
			if target.StrictFetch {
				fails(ctx, "skill::fetch", map[string]any{"uri": bare}, "Invalid URI (must start with iii://): "+bare)
				fails(ctx, "skills::fetch_skill", map[string]any{"uris": []string{alpha, bare}},
					"Invalid URI (must start with iii://): "+bare)
				return
			}
			Expect(fetch(ctx, "skill::fetch", map[string]any{"uri": bare})).
				To(Equal(fetch(ctx, "skill::fetch", map[string]any{"uri": alpha})))
			Expect(fetch(ctx, "skills::fetch_skill", map[string]any{"uris": []string{bare, beta}})).
				To(Equal(fetch(ctx, "skills::fetch_skill", map[string]any{"uris": []string{alpha, beta}})))
		})
	})
})
