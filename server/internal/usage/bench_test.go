package usage_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/kv/kvtest"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/usage"
)

// running starts c's Run loop (it keeps the clock reads are stamped with)
// for the benchmark's duration.
func running(b *testing.B, c *usage.Counter) *usage.Counter {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return c
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("team-%d/skill-%d", i%100, i)
	}
	return out
}

// BenchmarkRead is what counting adds to one read: 1 000 skills read by 8
// clients, each already counted in this interval (the steady state).
func BenchmarkRead(b *testing.B) {
	c := running(b, newCounter(b, usage.Options{KV: kv.NewMemoryTable()}))
	skills := ids(1000)
	clients := []string{"claude-code", "cursor", "codex", "worker-a", "worker-b", "vscode", "zed", "web"}
	for i := range 8000 {
		c.Read(skills[i%len(skills)], "3", surface.MCP, clients[i%len(clients)])
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Read(skills[i%len(skills)], "3", surface.MCP, clients[i%len(clients)])
	}
}

// BenchmarkReadParallel: every core reading at once, over the same skills.
func BenchmarkReadParallel(b *testing.B) {
	c := running(b, newCounter(b, usage.Options{KV: kv.NewMemoryTable()}))
	skills := ids(1000)
	b.ReportAllocs()
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1)) * 7919
		for pb.Next() {
			c.Read(skills[i%len(skills)], "3", surface.Surface(i%surface.Count), "claude-code")
			i++
		}
	})
}

// BenchmarkReadHotSkill: every core reading the same skill (one shard, one
// entry: the worst contention).
func BenchmarkReadHotSkill(b *testing.B) {
	c := running(b, newCounter(b, usage.Options{KV: kv.NewMemoryTable()}))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Read("team/hot", "1", surface.MCP, "claude-code")
		}
	})
}

// BenchmarkChannelAlternative is the design not taken, for comparison: each
// read sent on a buffered channel (dropped when full) to one goroutine
// that counts. Its per-read cost is the send alone.
func BenchmarkChannelAlternative(b *testing.B) {
	type read struct {
		id, version, client string
		s                   surface.Surface
	}
	ch := make(chan read, 65536)
	done := make(chan struct{})
	counts := map[string]uint64{}
	go func() {
		for r := range ch {
			counts[r.id]++
		}
		close(done)
	}()
	skills := ids(1000)
	var dropped atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			select {
			case ch <- read{skills[i%len(skills)], "3", "claude-code", surface.MCP}:
			default:
				dropped.Add(1)
			}
			i++
		}
	})
	b.StopTimer()
	close(ch)
	<-done
	b.ReportMetric(float64(dropped.Load())/float64(b.N)*100, "%dropped")
}

// BenchmarkMemory reads 100 000 skills by 1 000 clients (2 million reads)
// with the store down, so nothing is flushed: the worst case for the
// pending table (full, each entry naming its 16 clients). It reports the heap and resident memory the counter holds
// after the reads (after a GC), and how many reads went to "other".
func BenchmarkMemory(b *testing.B) {
	skills := ids(100000)
	clients := make([]string, 1000)
	for i := range clients {
		clients[i] = fmt.Sprintf("client-%04d", i)
	}
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		rssBefore := testutil.SelfRSS(b)
		flaky := &kvtest.Flaky{Table: kv.NewMemoryTable()}
		flaky.Down.Store(true)
		c := newCounter(b, usage.Options{KV: flaky})
		b.StartTimer()
		const reads = 2000000
		for i := range reads {
			// Every skill in turn (a stride through them), 20 times
			// each, by a different client each time: every entry meets
			// more clients than it names.
			round := i / len(skills)
			c.Read(skills[(i*7919)%len(skills)], "1", surface.Surface(i%surface.Count), clients[(i*31+round*17)%len(clients)])
		}
		b.StopTimer()
		_ = c.Flush(context.Background()) // fails: the counts stay
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		st := c.Stats()
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap_MiB")
		b.ReportMetric(float64(testutil.SelfRSS(b)-rssBefore)/(1<<20), "rss_growth_MiB")
		b.ReportMetric(float64(st.Pending), "entries")
		b.ReportMetric(float64(st.Overflowed)/reads*100, "%other")
		runtime.KeepAlive(c)
		b.StartTimer()
	}
}
