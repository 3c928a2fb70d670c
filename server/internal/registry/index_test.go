package registry_test

import (
	"math/rand/v2"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/server/internal/registry"
)

const header = "# Skills\n\nRead each skill's resource for orientation on when and why to call its functions. Sub-skills are indented under their parent path so a top-level skill stays small and the LLM can drill in only when it needs more detail.\n\n"

var _ = Describe("markdown extraction details", Label("pure", "markdown"), func() {
	DescribeTable("ExtractTitle",
		func(md, want string, ok bool) {
			got, found := registry.ExtractTitle(md)
			Expect(found).To(Equal(ok))
			Expect(got).To(Equal(want))
		},
		Entry("indented H1", "intro\n   # Indented  \nx", "Indented", true),
		Entry("no space after hash", "#x\n", "", false),
		Entry("bare hash", "#\n", "", false),
		Entry("H2 then H1", "## sub\n# Real", "Real", true),
		Entry("blank title is a title", "#  \nbody", "", true),
		Entry("CRLF", "# Title\r\nbody", "Title", true),
		Entry("no fence awareness", "```\n# not a title\n```", "not a title", true),
		Entry("tab after hash does not count", "#\tTabbed", "", false),
		Entry("empty", "", "", false),
	)

	DescribeTable("ExtractDescription",
		func(md, want string, ok bool) {
			got, found := registry.ExtractDescription(md)
			Expect(found).To(Equal(ok))
			Expect(got).To(Equal(want))
		},
		Entry("multi-line paragraph joined with single spaces", "# T\n\n  line one  \nline two\n\tline three\n\nnext",
			"line one line two line three", true),
		Entry("a heading ends the paragraph", "para one\n## h\npara two", "para one", true),
		Entry("#hashtag ends the paragraph too", "para\n#hashtag\nmore", "para", true),
		Entry("leading #hashtag is skipped", "#hashtag\ntext", "text", true),
		Entry("list items are text", "- a\n- b\n", "- a - b", true),
		Entry("fence markers are text", "```go\nx := 1\n```", "```go x := 1 ```", true),
		Entry("whitespace only", "   \n\t\n", "", false),
		Entry("CRLF", "# T\r\n\r\nfirst\r\nsecond\r\n\r\nthird", "first second", true),
	)

	It("keeps 140 characters and truncates 141 to 140 + ...", func() {
		p140 := strings.Repeat("é", 140)
		d, ok := registry.ExtractDescription("# t\n\n" + p140)
		Expect(ok).To(BeTrue())
		Expect(d).To(Equal(p140))

		d, _ = registry.ExtractDescription("# t\n\n" + p140 + "z")
		Expect(d).To(Equal(p140 + "..."))
	})

	It("gives the same result for long multibyte paragraphs spread over lines", func() {
		emoji := strings.Repeat("🎉", 140) // 560 bytes
		d, _ := registry.ExtractDescription(emoji + "\n\nnext")
		Expect(d).To(Equal(emoji))
		d, _ = registry.ExtractDescription(emoji + "\nx\n" + strings.Repeat("y", 1000))
		Expect(d).To(Equal(emoji + "..."))
		d, _ = registry.ExtractDescription(strings.Repeat("é", 100) + "\n" + strings.Repeat("é", 200) + "\n" + strings.Repeat("é", 200))
		Expect(d).To(Equal(strings.Repeat("é", 100) + " " + strings.Repeat("é", 39) + "..."))
	})

	It("counts the joining spaces toward the cap and does not trim before ...", func() {
		md := strings.Repeat("a", 139) + "\n" + "bbbb"
		d, _ := registry.ExtractDescription(md)
		Expect(d).To(Equal(strings.Repeat("a", 139) + " ..."))
	})

	It("TruncateChars edge cases", func() {
		Expect(registry.TruncateChars("abc", 3)).To(Equal("abc"))
		Expect(registry.TruncateChars("abcd", 3)).To(Equal("abc..."))
		Expect(registry.TruncateChars("ab", 0)).To(Equal("..."))
		Expect(registry.TruncateChars("", 0)).To(Equal(""))
		Expect(registry.TruncateChars("日本語", 2)).To(Equal("日本..."))
		Expect(registry.TruncateChars("日本語", 3)).To(Equal("日本語"))
	})

	It("Summarize computes title and description once", func() {
		s := registry.Summarize("# Title\n\nDesc.")
		Expect(s).To(Equal(registry.Summary{Title: "Title", HasTitle: true, Description: "Desc.", HasDescription: true}))
		Expect(s.DisplayTitle("id")).To(Equal("Title"))
		Expect(registry.Summarize("plain").DisplayTitle("the-id")).To(Equal("the-id"))
		Expect(registry.Summarize("#  \n").DisplayTitle("the-id")).To(Equal(""))
	})
})

var _ = Describe("iii://skills index (J7)", Label("pure"), func() {
	It("renders the exact header and empty-registry line", func() {
		Expect(registry.RenderIndex(nil)).To(Equal(header + "_No skills are currently registered._\n"))
		Expect(registry.NewIndex().Render()).To(Equal(header + "_No skills are currently registered._\n"))
	})

	It("renders lines with U+2014, 2×depth indentation and bytewise id order", func() {
		long := strings.Repeat("x", 141)
		entries := []registry.IndexEntry{
			registry.NewIndexEntry("a/b/c", "# C\n\n"+long),
			registry.NewIndexEntry("a/b", "# B only"),
			registry.NewIndexEntry("a-x", "no heading here\nsecond line"),
			registry.NewIndexEntry("a", "# Alpha\n\nFirst para\nsecond line.\n\nignored"),
			registry.NewIndexEntry("b", "#  \n\n## only headings"),
		}
		want := header +
			"- [`a`](iii://a) \u2014 Alpha \u2014 First para second line.\n" +
			"- [`a-x`](iii://a-x) \u2014 a-x \u2014 no heading here second line\n" +
			"  - [`a/b`](iii://a/b) \u2014 B only\n" +
			"    - [`a/b/c`](iii://a/b/c) \u2014 C \u2014 " + strings.Repeat("x", 140) + "...\n" +
			"- [`b`](iii://b) \u2014 \n"
		Expect(registry.RenderIndex(entries)).To(Equal(want))
		Expect(entries[0].ID).To(Equal("a/b/c"), "input is not reordered")

		idx := registry.NewIndex()
		for _, e := range entries {
			idx.PutEntry(e)
		}
		Expect(idx.Render()).To(Equal(want))
	})

	It("uses the exact line format", func() {
		Expect(registry.IndexLine("x/y", "T", "D", true)).To(Equal("  - [`x/y`](iii://x/y) — T — D\n"))
		Expect(registry.IndexLine("x", "T", "", true)).To(Equal("- [`x`](iii://x) — T\n"))
		Expect(registry.IndexLine("x", "T", "D", false)).To(Equal("- [`x`](iii://x) — T\n"))
		Expect(registry.NewIndexEntry("z", "just text").Line()).To(Equal("- [`z`](iii://z) — z — just text\n"))
	})

	It("keeps 140-char descriptions unchanged", func() {
		p := strings.Repeat("d", 140)
		Expect(registry.NewIndexEntry("k", p).Line()).To(Equal("- [`k`](iii://k) — k — " + p + "\n"))
	})

	It("renders the error body", func() {
		Expect(registry.RenderIndexError("remote error (LIST_ERROR): boom")).To(Equal(
			"# Skills\n\n_Error reading skills index: remote error (LIST_ERROR): boom_\n"))
	})
})

var _ = Describe("Index", Label("pure"), func() {
	It("keeps entries sorted and invalidates the cached body on change", func() {
		idx := registry.NewIndex()
		idx.Put("b", "# Bee")
		idx.Put("a", "# Ay")
		first := idx.Render()
		Expect(first).To(Equal(header + "- [`a`](iii://a) — Ay\n- [`b`](iii://b) — Bee\n"))
		Expect(idx.Render()).To(Equal(first))

		idx.Put("a", "# Ay again")
		Expect(idx.Len()).To(Equal(2))
		Expect(idx.Render()).To(Equal(header + "- [`a`](iii://a) — Ay again\n- [`b`](iii://b) — Bee\n"))

		Expect(idx.Delete("missing")).To(BeFalse())
		Expect(idx.Delete("a")).To(BeTrue())
		Expect(idx.Render()).To(Equal(header + "- [`b`](iii://b) — Bee\n"))
		e, ok := idx.Get("b")
		Expect(ok).To(BeTrue())
		Expect(e.Title).To(Equal("Bee"))
		_, ok = idx.Get("a")
		Expect(ok).To(BeFalse())

		Expect(idx.Delete("b")).To(BeTrue())
		Expect(idx.Render()).To(Equal(header + "_No skills are currently registered._\n"))
	})

	It("Replace swaps the content, later duplicates winning", func() {
		var idx registry.Index // zero value is usable
		idx.Put("old", "# Old")
		idx.Replace([]registry.IndexEntry{
			registry.NewIndexEntry("z", "# Z1"),
			registry.NewIndexEntry("m", "# M"),
			registry.NewIndexEntry("z", "# Z2"),
		})
		Expect(idx.Entries()).To(HaveLen(2))
		Expect(idx.Entries()[0].ID).To(Equal("m"))
		Expect(idx.Render()).To(Equal(header + "- [`m`](iii://m) — M\n- [`z`](iii://z) — Z2\n"))
		idx.Put("a", "# A")
		Expect(idx.Entries()[0].ID).To(Equal("a"))
	})

	It("agrees with RenderIndex after random operations", func() {
		r := rand.New(rand.NewPCG(1, 2))
		idx := registry.NewIndex()
		ref := map[string]registry.IndexEntry{}
		for i := 0; i < 2000; i++ {
			id := []string{"a", "a-x", "a/b", "b", "b/c/d", "c_1", "a/b/c"}[r.IntN(7)]
			if r.IntN(3) == 0 {
				Expect(idx.Delete(id)).To(Equal(ref[id].ID != ""))
				delete(ref, id)
				continue
			}
			e := registry.NewIndexEntry(id, "# T"+id+"\n\nd")
			idx.PutEntry(e)
			ref[id] = e
		}
		all := make([]registry.IndexEntry, 0, len(ref))
		for _, e := range ref {
			all = append(all, e)
		}
		Expect(idx.Render()).To(Equal(registry.RenderIndex(all)))
	})

	It("is safe for concurrent use", func() {
		idx := registry.NewIndex()
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					idx.Put(strings.Repeat(string(rune('a'+w)), 1+i%5), "# t")
					_ = idx.Render()
				}
			}(w)
		}
		wg.Wait()
		Expect(idx.Len()).To(Equal(40))
	})
})
