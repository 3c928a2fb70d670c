package skillsext_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// BenchmarkView: the cost of one change (a published skill re-registered;
// its SKILL.md header and digest are computed later, once, on first use)
// against the read path (Skill and ReadFile of that SKILL.md: look-ups of
// what was computed, and the header joined to the body), in a view of
// 10 000 skills.
func BenchmarkView(b *testing.B) {
	c := catalog.New()
	src, _ := c.AddSource("published", catalog.RankPublished)
	var entries []*catalog.Entry
	for i := range 10_000 {
		entries = append(entries, published(fmt.Sprintf("team/skill-%05d", i), fmt.Sprintf("# Skill %d\n\nDoes thing %d.\n\n%s", i, i, body4k)))
	}
	if err := src.Put(entries...); err != nil {
		b.Fatal(err)
	}
	v := skillsext.NewView(c)
	defer v.Close()
	ctx := context.Background()
	b.Run("change", func(b *testing.B) {
		done := make(chan struct{}, 1)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if _, err := v.Watch(wctx, func(string) { done <- struct{}{} }); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			_ = src.Put(published("team/skill-00042", fmt.Sprintf("# Skill 42\n\nVersion %d.\n\n%s", i, body4k)))
			<-done
		}
	})
	b.Run("read", func(b *testing.B) {
		for range b.N {
			if _, ok, _ := v.Skill(ctx, "team/skill-00042"); !ok {
				b.Fatal("missing")
			}
			if _, err := v.ReadFile(ctx, "team/skill-00042", "SKILL.md"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var body4k = func() string {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b) + "\n"
}()
