package registry_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("fetch assembly (J12, E1-E9, D11)", Label("pure"), func() {
	for _, bare := range []bool{false, true} {
		mode := map[bool]string{false: "strict v0.2.2", true: "acceptBare"}[bare]
		Context(mode, func() {
			It("prefers a non-empty uris over uri", func() {
				got, err := registry.SelectFetchURIs(ptr("iii://alpha"), []string{"iii://beta"}, bare)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(Equal([]string{"iii://beta"}))
			})
			It("uses uri when uris is empty", func() {
				got, err := registry.SelectFetchURIs(ptr("iii://x"), []string{}, bare)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(Equal([]string{"iii://x"}))
			})
			It("trims entries, drops blanks and keeps order and duplicates", func() {
				got, err := registry.SelectFetchURIs(nil, []string{" iii://a\t", "   ", "iii://b", "iii://a"}, bare)
				Expect(err).NotTo(HaveOccurred())
				Expect(got).To(Equal([]string{"iii://a", "iii://b", "iii://a"}))
			})
			DescribeTable("needs input",
				func(uri *string, uris []string) {
					_, err := registry.SelectFetchURIs(uri, uris, bare)
					Expect(err).To(MatchError("Provide uri or a non-empty uris array"))
				},
				Entry("nothing", nil, nil),
				Entry("blank uri", ptr("   "), nil),
				Entry("empty uri", ptr(""), []string{}),
				Entry("blank uris do not fall back to uri", ptr("iii://x"), []string{"  "}),
			)
			It("rejects other schemes, checking every entry before any read", func() {
				_, err := registry.SelectFetchURIs(nil, []string{"iii://ok", "ftp://nope"}, bare)
				Expect(err).To(MatchError("Invalid URI (must start with iii://): ftp://nope"))
				_, err = registry.SelectFetchURIs(ptr("  https://example.com "), nil, bare)
				Expect(err).To(MatchError("Invalid URI (must start with iii://): https://example.com"))
			})
		})
	}

	It("strict mode rejects bare paths", func() {
		_, err := registry.SelectFetchURIs(ptr("agent-memory"), nil, false)
		Expect(err).To(MatchError("Invalid URI (must start with iii://): agent-memory"))
		_, err = registry.SelectFetchURIs(nil, []string{"iii://ok", "agent-memory/observe"}, false)
		Expect(err).To(MatchError("Invalid URI (must start with iii://): agent-memory/observe"))
	})

	It("acceptBare prefixes bare paths with iii:// (iii-directory rule)", func() {
		got, err := registry.SelectFetchURIs(nil, []string{"iii://skills", " agent-memory ", "agent-memory/observe", "iii://fn/agent-memory/health", "fn/x"}, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal([]string{"iii://skills", "iii://agent-memory", "iii://agent-memory/observe", "iii://fn/agent-memory/health", "iii://fn/x"}))
		got, err = registry.SelectFetchURIs(ptr("agent-memory"), nil, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal([]string{"iii://agent-memory"}))
	})

	It("formats and joins sections", func() {
		a := registry.FormatFetchSection("iii://alpha", "# alpha-skill\nAlpha body line.\n\n  \t\n")
		Expect(a).To(Equal("# iii://alpha\n\n# alpha-skill\nAlpha body line."))
		b := registry.FormatFetchSection("iii://beta", "  leading kept")
		Expect(b).To(Equal("# iii://beta\n\n  leading kept"))
		c := registry.FormatFetchSection("iii://c", "")
		Expect(c).To(Equal("# iii://c\n\n"))
		joined := registry.JoinFetchSections([]string{a, b, c})
		Expect(joined).To(Equal(a + "\n\n---\n\n" + b + "\n\n---\n\n" + c))
		Expect(strings.Count(joined, "\n\n---\n\n")).To(Equal(2))
		Expect(registry.JoinFetchSections([]string{a})).To(Equal(a))
	})

	It("builds section text from the read contents", func() {
		r := registry.NewReadResult("iii://x", "text/markdown", "body\n")
		Expect(registry.JoinContentTexts(r)).To(Equal("body\n"))
		r.Contents = append(r.Contents, registry.ResourceContent{Text: "more"})
		Expect(registry.JoinContentTexts(r)).To(Equal("body\n\nmore"))
	})
})
