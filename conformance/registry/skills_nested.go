package registry

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var _ = group.Describe("nested skills (checklist D)", Label("skills_nested"), func() {
	It("D1 reads a child skill", func(ctx SpecContext) {
		registerSkill(ctx, scoped("parent"), "# parent\n\nparent body\n")
		registerSkill(ctx, nested("parent", "sub"), "# child\nleaf body\n")
		c := read(ctx, "iii://"+nested("parent", "sub"))
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(ContainSubstring("leaf body"))
	})

	It("D2 reads skills at depths 1, 2 and 3", func(ctx SpecContext) {
		ids := []string{scoped("deep"), nested("deep", "middle"), nested("deep", "middle", "leaf")}
		bodies := []string{"# top\n\ntop", "# mid\n\nmid", "# leaf\n\nleaf"}
		for i := range ids {
			registerSkill(ctx, ids[i], bodies[i])
		}
		for i, want := range []string{"top", "mid", "leaf"} {
			Expect(read(ctx, "iii://"+ids[i]).Text).To(ContainSubstring(want))
		}
	})

	It("D3 an orphan (no parents registered) reads fine", func(ctx SpecContext) {
		id := nested("orphan", "middle", "grand")
		registerSkill(ctx, id, "# grand\n\nleaf only")
		Expect(read(ctx, "iii://"+id).Text).To(ContainSubstring("leaf only"))
	})

	It("D4 skills::list puts the parent before its children and is sorted", func(ctx SpecContext) {
		parent := scoped("z-tree")
		registerSkill(ctx, nested("z-tree", "b"), "# b\n")
		registerSkill(ctx, parent, "# z-tree\n")
		registerSkill(ctx, nested("z-tree", "a"), "# a\n")
		ids := skillIDs(ctx)
		Expect(slices.IsSorted(ids)).To(BeTrue(), "not sorted: %v", ids)
		p := slices.Index(ids, parent)
		Expect(p).To(BeNumerically(">=", 0))
		Expect(p).To(BeNumerically("<", slices.Index(ids, nested("z-tree", "a"))))
		Expect(p).To(BeNumerically("<", slices.Index(ids, nested("z-tree", "b"))))
	})

	It("D5 the index indents children by two spaces per level", func(ctx SpecContext) {
		root, leaf := scoped("tree-root"), nested("tree-root", "leaf")
		registerSkill(ctx, root, "# root\n\nroot body")
		registerSkill(ctx, leaf, "# leaf\n\nleaf body")
		lines := strings.Split(read(ctx, "iii://skills").Text, "\n")
		Expect(lines).To(ContainElement(HavePrefix("- [`" + root + "`](iii://" + root + ")")))
		Expect(lines).To(ContainElement(HavePrefix("  - [`" + leaf + "`](iii://" + leaf + ")")))
	})

	It("D6 the id `fn` is reserved", func(ctx SpecContext) {
		fails(ctx, "skills::register", map[string]string{"id": "fn", "skill": "# fn\n"}, "reserved")
	})

	It("D7 ids starting with fn/ are reserved", func(ctx SpecContext) {
		fails(ctx, "skills::register", map[string]string{"id": "fn/anything", "skill": "# fn\n"}, "reserved")
	})

	It("D8 fn is fine below the first segment", func(ctx SpecContext) {
		registerSkill(ctx, nested("docs", "fn-reference"), "# fn reference\n")
	})

	It("D9 a two-level section URI triggers bdd::deep-…", func(ctx SpecContext) {
		fid := fnID("deep")
		provide(ctx, fid, harness.Returning("# deep-section\nlevel 2"))
		c := read(ctx, sectionURI(fid))
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(ContainSubstring("deep-section"))
	})

	It("D10 a three-level section URI triggers bdd::deep::triple-…", func(ctx SpecContext) {
		fid := fnID("triple", "deep")
		Expect(fid).To(HavePrefix("bdd::deep::triple-bdd-"))
		provide(ctx, fid, harness.Returning("# triple-section\nlevel 3"))
		Expect(read(ctx, sectionURI(fid)).Text).To(ContainSubstring("triple-section"))
	})

	It("D11 skill::fetch batches a whole tree", func(ctx SpecContext) {
		ids := []string{scoped("fetched"), nested("fetched", "sub"), nested("fetched", "sub", "leaf")}
		for i, body := range []string{"# fetched\n\nALPHA", "# sub\n\nBETA", "# leaf\n\nGAMMA"} {
			registerSkill(ctx, ids[i], body)
		}
		out := fetch(ctx, "skill::fetch", map[string]any{"uris": []string{"iii://" + ids[0], "iii://" + ids[1], "iii://" + ids[2]}})
		Expect(out).To(ContainSubstring("ALPHA"))
		Expect(out).To(ContainSubstring("BETA"))
		Expect(out).To(ContainSubstring("GAMMA"))
		Expect(strings.Count(out, SectionSep)).To(Equal(2))
	})
})
