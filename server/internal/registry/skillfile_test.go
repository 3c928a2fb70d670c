package registry_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

var _ = Describe("SplitSkillFile", Label("pure"), func() {
	skills := map[string]bool{"mcp-builder": true, "team/pdf": true, "team": true}
	isSkill := func(s string) bool { return skills[s] }
	DescribeTable("splits a skill id from a file path",
		func(id, skill, file string, ok bool) {
			s, f, got := registry.SplitSkillFile(id, isSkill)
			Expect(got).To(Equal(ok))
			if ok {
				Expect(s).To(Equal(skill))
				Expect(f).To(Equal(file))
			}
		},
		Entry("a nested file", "mcp-builder/reference/evaluation.md", "mcp-builder", "reference/evaluation.md", true),
		Entry("a file at the root", "mcp-builder/LICENSE.txt", "mcp-builder", "LICENSE.txt", true),
		Entry("the longest skill prefix wins", "team/pdf/forms.md", "team/pdf", "forms.md", true),
		Entry("a shorter skill when the longer is not one", "team/other/x.md", "team", "other/x.md", true),
		Entry("no such skill", "nope/x.md", "", "", false),
		Entry("a bare skill id is no file", "mcp-builder", "", "", false),
		Entry("dot-dot is refused", "mcp-builder/../secret", "", "", false),
		Entry("a dot segment is refused", "mcp-builder/./x.md", "", "", false),
		Entry("an invalid prefix is never asked", "Bad/x.md", "", "", false),
	)
})
