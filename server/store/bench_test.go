package store

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
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
