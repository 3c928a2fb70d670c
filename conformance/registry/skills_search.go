package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// skills::search is ours: an upstream v0.2.2 registry has no
// such function, so these specs are skipped when the engine does not list
// it. They pin the answer's shape, the alias, the low-confidence answer,
// the filters, refusals and that the index follows registrations.
var _ = group.Describe("skills::search (S1–S6)", Label("search", "extra"), func() {
	type result struct {
		ID          string  `json:"id"`
		Title       string  `json:"title"`
		Description string  `json:"description"`
		Origin      string  `json:"origin"`
		URI         string  `json:"uri"`
		Score       float64 `json:"score"`
	}
	type answer struct {
		Query         string   `json:"query"`
		Results       []result `json:"results"`
		LowConfidence bool     `json:"low_confidence"`
	}
	const imagesBody = "# Image optimisation\n\nCompress and resize PNG and JPEG images so web pages load fast.\n"
	var images, deploy string
	search := func(ctx SpecContext, fn string, payload map[string]any) answer {
		GinkgoHelper()
		var a answer
		callInto(ctx, fn, payload, &a)
		return a
	}
	// found waits until the index (which follows the catalog) shows id.
	found := func(ctx SpecContext, query, id string) answer {
		GinkgoHelper()
		var a answer
		Eventually(func() []string {
			a = search(ctx, "skills::search", map[string]any{"query": query})
			ids := []string{}
			for _, r := range a.Results {
				ids = append(ids, r.ID)
			}
			return ids
		}).WithTimeout(eventLimit).Should(ContainElement(id))
		return a
	}

	BeforeEach(func(ctx SpecContext) {
		if _, ok := functionsByID(ctx)["skills::search"]; !ok {
			Skip("the registry under test has no skills::search (upstream v0.2.2 has none)")
		}
		images, deploy = scoped("images"), scoped("deploy")
		registerSkill(ctx, images, imagesBody)
		registerSkill(ctx, deploy, "# Deploy\n\nShip a release to production with a rollout checklist.\n")
	})

	It("S1 results are {id, title, description, origin, uri, score, sha256}, best first", func(ctx SpecContext) {
		a := found(ctx, "shrink images for the web", images)
		Expect(a.Query).To(Equal("shrink images for the web"))
		Expect(a.LowConfidence).To(BeFalse())
		Expect(a.Results[0]).To(Equal(result{ID: images, Title: "Image optimisation",
			Description: "Compress and resize PNG and JPEG images so web pages load fast.", Origin: "published",
			URI: "iii://" + images, Score: a.Results[0].Score}))
		Expect(a.Results[0].Score).To(BeNumerically(">", 0))
		Expect(sort.SliceIsSorted(a.Results, func(i, j int) bool { return a.Results[i].Score > a.Results[j].Score })).To(BeTrue())
		raw := call(ctx, "skills::search", map[string]any{"query": "shrink images for the web", "limit": 1})
		var exact struct {
			Results []map[string]json.RawMessage `json:"results"`
		}
		Expect(json.Unmarshal(raw, &exact)).To(Succeed())
		Expect(exact.Results).To(HaveLen(1))
		Expect(exact.Results[0]).To(HaveLen(7))
		for _, k := range []string{"id", "title", "description", "origin", "uri", "score", "sha256"} {
			Expect(exact.Results[0]).To(HaveKey(k))
		}
		// The digest of what the result's uri serves: the body's sha256.
		sum := sha256.Sum256([]byte(imagesBody))
		Expect(string(exact.Results[0]["sha256"])).To(Equal(`"` + hex.EncodeToString(sum[:]) + `"`))
	})

	It("S2 skill::search answers like skills::search", func(ctx SpecContext) {
		found(ctx, "release rollout", deploy)
		payload := map[string]any{"query": "release rollout", "limit": 5}
		Expect(search(ctx, "skill::search", payload)).To(Equal(search(ctx, "skills::search", payload)))
	})

	It("S3 a query nothing matches gives no results and low_confidence", func(ctx SpecContext) {
		a := search(ctx, "skills::search", map[string]any{"query": "zygote xylophone quokkafish"})
		Expect(a.Results).NotTo(BeNil())
		Expect(a.Results).To(BeEmpty())
		Expect(a.LowConfidence).To(BeTrue())
	})

	It("S4 limit and namespace filter the results", func(ctx SpecContext) {
		found(ctx, "images release", images)
		found(ctx, "images release", deploy)
		Expect(search(ctx, "skills::search", map[string]any{"query": "images release", "limit": 1}).Results).To(HaveLen(1))
		a := search(ctx, "skills::search", map[string]any{"query": "images release", "namespace": deploy})
		Expect(a.Results).To(HaveLen(1))
		Expect(a.Results[0].ID).To(Equal(deploy))
	})

	DescribeTable("S5 bad input is refused with INVALID_ARGUMENTS",
		func(ctx SpecContext, payload any, want string) {
			fails(ctx, "skills::search", payload, "INVALID_ARGUMENTS", want)
			fails(ctx, "skill::search", payload, "INVALID_ARGUMENTS", want)
		},
		Entry("no query", map[string]any{}, "query is required"),
		Entry("an empty query", map[string]any{"query": "  "}, "query is empty"),
		Entry("a query that is not a string", map[string]any{"query": 3}, "query must be a string"),
		Entry("limit 0", map[string]any{"query": "x", "limit": 0}, "limit must be an integer from 1 to 100"),
		Entry("limit 101", map[string]any{"query": "x", "limit": 101}, "limit must be an integer from 1 to 100"),
		Entry("an invalid namespace", map[string]any{"query": "x", "namespace": "Not An Id"}, "is not a skill id prefix"),
		Entry("an unknown key", map[string]any{"query": "x", "k": 3}, `unknown field "k"`),
	)

	It("S6 the index follows registrations and removals", func(ctx SpecContext) {
		extra := scoped("wombat")
		registerSkill(ctx, extra, "# Wombat census\n\nCount wombats.\n")
		found(ctx, "wombats", extra)
		call(ctx, "skills::unregister", map[string]any{"id": extra})
		Eventually(func() []result {
			return search(ctx, "skills::search", map[string]any{"query": "wombats", "namespace": extra}).Results
		}).WithTimeout(eventLimit).Should(BeEmpty())
	})
})
