package metrics_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/metrics"
	"github.com/iii-skills/skills/server/internal/surface"
)

// BenchmarkCall is the cost metrics add to each call: one counter and one
// histogram update, series cached.
func BenchmarkCall(b *testing.B) {
	m, _ := newMetrics(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Call(rules.FnSkillFetch, surface.III, metrics.CodeOK, time.Duration(i%1000)*time.Microsecond)
	}
}

// BenchmarkCallParallel: every core recording calls at once, spread over
// functions, surfaces and codes.
func BenchmarkCallParallel(b *testing.B) {
	m, _ := newMetrics(b)
	codes := append([]string{metrics.CodeOK}, testCodes...)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Call(testFunctions[i%len(testFunctions)], surface.Surface(i%surface.Count), codes[i%len(codes)], time.Millisecond)
			i++
		}
	})
}

// BenchmarkCallUndeclared: an id outside the declared set (counted as
// "other") costs the same.
func BenchmarkCallUndeclared(b *testing.B) {
	m, _ := newMetrics(b)
	b.ReportAllocs()
	for b.Loop() {
		m.Call("some/skill-id::not-a-function", surface.RPC, "SOME_CODE", time.Millisecond)
	}
}

// BenchmarkScrape: one scrape with every call series of the declared sets
// in use (the worst case for its size), bytes per scrape reported.
func BenchmarkScrape(b *testing.B) {
	m, url := newMetrics(b)
	codes := append([]string{metrics.CodeOK, "other"}, testCodes...)
	for _, f := range append(testFunctions, "other") {
		for _, s := range surface.All() {
			for _, c := range codes {
				m.Call(f, s, c, time.Millisecond)
			}
		}
	}
	var size int64
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		size, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
