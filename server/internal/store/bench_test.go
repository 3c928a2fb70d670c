package store

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSetParallel64 measures durable Set throughput with 64 writers.
func BenchmarkSetParallel64(b *testing.B) {
	s, _ := openTemp(b)
	val := json.RawMessage(`{"id":"x","body":"# X\nsome markdown"}`)
	var n atomic.Int64
	b.SetParallelism(64 / max(1, runtimeProcs()))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := s.Set("bench", fmt.Sprintf("k%d", i%4096), val); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkSetSkills64 is the store's share of skills::register: 64
// writers each storing new 2 KiB rows under ids spread over 100 workers
// ("w7/s1234"). It reports the mean batch (writes per transaction and
// fsync) and the CPU time per write.
func BenchmarkSetSkills64(b *testing.B) {
	s, _ := openTemp(b)
	body, _ := json.Marshal(strings.Repeat("- a line of orientation text about one function\n", 44)[:2048])
	var n atomic.Int64
	b.SetParallelism(64 / max(1, runtimeProcs()))
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			id := "w" + strconv.FormatInt(i%100, 10) + "/s" + strconv.FormatInt(i, 10)
			row := `{"id":"` + id + `","registered_at":"2026-01-01T00:00:00+00:00","skill":` + string(body) + `}`
			if _, err := s.Set("skills", id, json.RawMessage(row)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu_µs/op")
	if c := s.commits.Load(); c > 0 {
		b.ReportMetric(float64(s.committed.Load())/float64(c), "writes/commit")
	}
}

// cpuTime is the user+system CPU time this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGet measures reads (a bbolt read transaction each).
func BenchmarkGet(b *testing.B) {
	s, _ := openTemp(b)
	for i := 0; i < 1000; i++ {
		mustSet(b, s, "bench", fmt.Sprintf("k%d", i), `{"id":"x"}`)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok, _ := s.Get("bench", fmt.Sprintf("k%d", i%1000)); !ok {
				b.Error("missing")
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
