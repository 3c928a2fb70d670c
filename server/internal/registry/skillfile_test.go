package registry_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("SplitSkillFile", Label("pure"), func() {
	skills := map[string]bool{"mcp-builder": true, "team/pdf": true, "team": true}
	isSkill := func(s string) bool { return skills[s] }
	DescribeTable("splits a skill id from a file path",
		func(id, skill, file string, ok bool, wantErr string) {
			s, f, got, err := registry.SplitSkillFile(id, isSkill)
			Expect(got).To(Equal(ok))
			if ok {
				Expect(s).To(Equal(skill))
				Expect(f).To(Equal(file))
			}
			if wantErr == "" {
				Expect(err).NotTo(HaveOccurred())
			} else {
				Expect(err).To(MatchError(ContainSubstring(wantErr)))
				Expect(err.Error()).To(HavePrefix("iii://" + id[:min(len(id), 20)]))
			}
		},
		Entry("a nested file", "mcp-builder/reference/evaluation.md", "mcp-builder", "reference/evaluation.md", true, ""),
		Entry("a file at the root", "mcp-builder/LICENSE.txt", "mcp-builder", "LICENSE.txt", true, ""),
		Entry("the longest skill prefix wins", "team/pdf/forms.md", "team/pdf", "forms.md", true, ""),
		Entry("a shorter skill when the longer is not one", "team/other/x.md", "team", "other/x.md", true, ""),
		Entry("no such skill", "nope/x.md", "", "", false, ""),
		Entry("a bare skill id is no file", "mcp-builder", "", "", false, ""),
		Entry("dot-dot is refused", "mcp-builder/../secret", "", "", false, `".." segment`),
		Entry("a dot segment is refused", "mcp-builder/./x.md", "", "", false, `"." segment`),
		Entry("an invalid prefix is never asked", "Bad/x.md", "", "", false, ""),
		Entry("a percent-encoded space is decoded", "mcp-builder/notes/with%20space.md", "mcp-builder", "notes/with space.md", true, ""),
		Entry("a raw space stays", "mcp-builder/with space.md", "mcp-builder", "with space.md", true, ""),
		Entry("non-ASCII, encoded", "mcp-builder/r%C3%A9sum%C3%A9.md", "mcp-builder", "résumé.md", true, ""),
		Entry("decoded once: %2520 is a file named with %20", "mcp-builder/a%2520b.md", "mcp-builder", "a%20b.md", true, ""),
		Entry("a lone % stays", "mcp-builder/100%.md", "mcp-builder", "100%.md", true, ""),
		Entry("an encoded dot-dot is refused", "mcp-builder/%2e%2e/secret", "", "", false, `".." segment`),
		Entry("an encoded NUL is refused", "mcp-builder/ok%00.md", "", "", false, "NUL"),
		Entry("bytes that are not UTF-8 are refused", "mcp-builder/%FF.md", "", "", false, "not UTF-8"),
		Entry("a name over 255 bytes is refused", "mcp-builder/"+strings.Repeat("a", 256), "", "", false, "256 bytes"),
	)
})
