package registry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/registry"
)

// benchEntries builds n summarized skills shaped like a real registry:
// roots with two levels of children, titles and ~200-char paragraphs.
func benchEntries(n int) []registry.IndexEntry {
	para := strings.Repeat("Orientation on when and why to call these functions. ", 4)
	out := make([]registry.IndexEntry, 0, n)
	for i := 0; len(out) < n; i++ {
		root := fmt.Sprintf("worker-%05d", i)
		for _, id := range []string{root, root + "/email", root + "/email/send", root + "/contacts"} {
			if len(out) == n {
				break
			}
			out = append(out, registry.NewIndexEntry(id, "# "+id+"\n\n"+para+"\n\n## Details\n\nmore"))
		}
	}
	return out
}

func benchmarkRenderIndex(b *testing.B, n int) {
	entries := benchEntries(n)
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for b.Loop() {
		size = len(registry.RenderIndex(entries))
	}
	b.ReportMetric(float64(size), "body-bytes")
}

func BenchmarkRenderIndex1000(b *testing.B)  { benchmarkRenderIndex(b, 1_000) }
func BenchmarkRenderIndex10000(b *testing.B) { benchmarkRenderIndex(b, 10_000) }

// BenchmarkIndexRenderAfterPut10000 measures one Put into a 10 000-entry
// Index followed by the re-render a read then pays.
func BenchmarkIndexRenderAfterPut10000(b *testing.B) {
	idx := registry.NewIndex()
	idx.Replace(benchEntries(10_000))
	e := registry.NewIndexEntry("worker-00042/email", "# changed\n\nnew paragraph")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		idx.PutEntry(e)
		_ = idx.Render()
	}
}

func BenchmarkExtractDescription2KiB(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("# Title\n\n")
	for sb.Len() < 2048 {
		sb.WriteString("A line of the first paragraph that keeps going for a while.\n")
	}
	body := sb.String()[:2048]
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = registry.ExtractDescription(body)
	}
}

func BenchmarkSummarize2KiB(b *testing.B) {
	body := "# Title\n\n" + strings.Repeat("Paragraph text that goes on. ", 70)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = registry.Summarize(body)
	}
}
