package search

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Benchmarks over 10 000 skills made from the evaluation corpus: skill i
// is corpus skill i mod 322 with its own id and a third of another
// skill's body appended, so bodies and vocabulary vary like a real
// catalog's. Run with `make bench` or
//
//	go test -run '^$' -bench . ./server/internal/search/

const benchSkills = 10_000

func benchCorpus(b *testing.B) (docs []corpusDoc, bodyBytes int64) {
	b.Helper()
	base := loadCorpus(b)
	docs = make([]corpusDoc, benchSkills)
	for i := range docs {
		d, o := base[i%len(base)], base[(i*7+3)%len(base)]
		f := d.fields
		f.Name = d.id + "-" + strconv.Itoa(i)
		f.Body = f.Body + "\n\n" + o.fields.Body[:len(o.fields.Body)/3]
		docs[i] = corpusDoc{id: f.Name, fields: f}
		bodyBytes += int64(len(f.Body))
	}
	return docs, bodyBytes
}

// shared is the 10 000-skill index the query and re-index benchmarks use,
// built once per run (building it takes seconds).
var shared struct {
	once  sync.Once
	docs  []corpusDoc
	index *Index
}

func sharedIndex(b *testing.B) ([]corpusDoc, *Index) {
	shared.once.Do(func() {
		shared.docs, _ = benchCorpus(b)
		shared.index = benchIndex(b, shared.docs)
	})
	return shared.docs, shared.index
}

func benchIndex(b *testing.B, docs []corpusDoc) *Index {
	x := New()
	for _, d := range docs {
		if err := x.Put(d.id, d.fields); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

func benchQueries(b *testing.B) []string {
	var qs []string
	for _, q := range loadQueries(b, newAnalyzer()) {
		qs = append(qs, q.text)
	}
	return qs
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50_µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99_µs")
}

// BenchmarkQuery10k: one search (limit 10) over 10 000 skills, queries of
// the evaluation set in turn. Target: p50 ≤ 2 ms.
func BenchmarkQuery10k(b *testing.B) {
	_, x := sharedIndex(b)
	qs := benchQueries(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		x.Search(Query{Text: qs[i%len(qs)], Limit: 10})
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkReindexOne10k: one skill of 10 000 changed (re-analysed and its
// postings replaced). Target: ≤ 1 ms.
func BenchmarkReindexOne10k(b *testing.B) {
	docs, x := sharedIndex(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := docs[(i*7919)%len(docs)]
		f := d.fields
		if i%2 == 0 { // a real edit: the next put differs
			f.Body += "\n\nEdited " + strconv.Itoa(i)
		}
		t0 := time.Now()
		if err := x.Put(d.id, f); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkIndexMemory10k: the heap the index of 10 000 skills holds,
// against the bytes of their bodies. Target: ≤ 0.5 × the bodies.
func BenchmarkIndexMemory10k(b *testing.B) {
	docs, bodyBytes := benchCorpus(b)
	var x *Index
	var grown uint64
	for i := 0; i < b.N; i++ {
		x = nil
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		x = benchIndex(b, docs)
		runtime.GC()
		runtime.ReadMemStats(&after)
		grown = after.HeapAlloc - before.HeapAlloc
	}
	runtime.KeepAlive(x)
	b.ReportMetric(float64(grown)/(1<<20), "index_MiB")
	b.ReportMetric(float64(bodyBytes)/(1<<20), "bodies_MiB")
	b.ReportMetric(float64(grown)/float64(bodyBytes), "index_per_body_byte")
}
