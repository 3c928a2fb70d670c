package catalog_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
)

func filled(b *testing.B, n int) (*catalog.Catalog, *catalog.Source) {
	c := catalog.New()
	s, _ := c.AddSource("s", 0)
	es := make([]*catalog.Entry, n)
	for i := range es {
		es[i] = entry(fmt.Sprintf("w%d/s%d", i/100, i), "", "# T\n\nd\n")
	}
	if err := s.Replace(es); err != nil {
		b.Fatal(err)
	}
	return c, s
}

// BenchmarkGetWhileWriting: parallel Get of 10 000 ids while one writer
// puts continuously (reads take the read lock; writes are map updates).
func BenchmarkGetWhileWriting(b *testing.B) {
	c, s := filled(b, 10000)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			_ = s.Put(entry(fmt.Sprintf("w%d/s%d", (i%10000)/100, i%10000), "", "# U\n"))
		}
	}()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok := c.Get(fmt.Sprintf("w%d/s%d", (i%10000)/100, i%10000)); !ok {
				b.Error("missing")
				return
			}
			i += 7
		}
	})
	b.StopTimer()
	stop.Store(true)
	<-done
}

// BenchmarkList10K: the sorted snapshot, unchanged (a pointer load) and
// rebuilt after each change.
func BenchmarkList10K(b *testing.B) {
	c, s := filled(b, 10000)
	b.Run("cached", func(b *testing.B) {
		for range b.N {
			if len(c.List()) != 10000 {
				b.Fatal("len")
			}
		}
	})
	b.Run("after-change", func(b *testing.B) {
		for i := range b.N {
			_ = s.Put(entry("w0/s1", "", fmt.Sprint(i)))
			if len(c.List()) != 10000 {
				b.Fatal("len")
			}
		}
	})
}

// BenchmarkPut: one put of an existing id with no subscriber.
func BenchmarkPut(b *testing.B) {
	_, s := filled(b, 10000)
	e := entry("w5/s500", "", "# P\n")
	b.ResetTimer()
	for range b.N {
		_ = s.Put(e)
	}
}
