package skillsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// benchTransports runs f over HTTP and over iii against one registry.
func benchTransports(b *testing.B, reg *registry, f func(b *testing.B, src Source, url string)) {
	for _, overHTTP := range []bool{true, false} {
		name := map[bool]string{true: "http", false: "iii"}[overHTTP]
		b.Run(name, func(b *testing.B) {
			src, url := reg.source(b, overHTTP)
			f(b, src, url)
		})
	}
}

// BenchmarkSync322 is the first sync of the 322-skill corpus (572 files)
// from a `skills --standalone` on the same machine into an empty folder:
// wall time per sync.
func BenchmarkSync322(b *testing.B) {
	reg := startRegistry(b, registryOpts{folders: []string{corpus(b, "skills-322")}})
	benchTransports(b, reg, func(b *testing.B, src Source, url string) {
		for i := 0; b.Loop(); i++ {
			work := b.TempDir()
			rep, err := Sync(context.Background(), Options{Source: src, SourceURL: url, Targets: []Target{{Path: filepath.Join(work, "skills")}}, LockPath: filepath.Join(work, "skills.lock")})
			if err != nil || !rep.InSync() || len(rep.Written) != 322 {
				b.Fatalf("%v %s", err, rep.Summary())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/sync")
	})
}

// BenchmarkSync322Unchanged is a second sync of the same 322 skills, with
// nothing changed: the listing, a sha256 of every file on disk, no write
// (not even the lock). Target: under 1 s.
func BenchmarkSync322Unchanged(b *testing.B) {
	reg := startRegistry(b, registryOpts{folders: []string{corpus(b, "skills-322")}})
	benchTransports(b, reg, func(b *testing.B, src Source, url string) {
		work := b.TempDir()
		opts := Options{Source: src, SourceURL: url, Targets: []Target{{Path: filepath.Join(work, "skills")}}, LockPath: filepath.Join(work, "skills.lock")}
		if rep, err := Sync(context.Background(), opts); err != nil || len(rep.Written) != 322 {
			b.Fatalf("%v %s", err, rep.Summary())
		}
		for b.Loop() {
			rep, err := Sync(context.Background(), opts)
			if err != nil || !rep.InSync() || len(rep.Written)+len(rep.Removed) != 0 || rep.LockWritten || rep.Unchanged != 322 {
				b.Fatalf("%v %s lock written %v", err, rep.Summary(), rep.LockWritten)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/sync")
	})
}

// BenchmarkWatchLatency is the time from a skills::register (the call
// made) to the new content in the synced folder on disk, with `skills
// sync --watch` following the registry and every skill it serves (the
// 322-skill corpus besides the one registered): p50 and p99 over b.N
// registers. Target: p99 ≤ 500 ms.
func BenchmarkWatchLatency(b *testing.B) {
	reg := startRegistry(b, registryOpts{folders: []string{corpus(b, "skills-322")}})
	reg.register(b, "bench/watched", "# Watched\n\nstart\n")
	for _, overHTTP := range []bool{true, false} {
		name := map[bool]string{true: "http", false: "iii"}[overHTTP]
		b.Run(name, func(b *testing.B) {
			url := reg.ws
			if overHTTP {
				url = reg.http
			}
			work := b.TempDir()
			out := filepath.Join(work, "skills")
			ctx, cancel := context.WithCancel(context.Background())
			var failed atomic.Value
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = Watch(ctx, WatchOptions{
					Options:  Options{SourceURL: url, Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")},
					Open:     func(ctx context.Context) (Source, error) { return Open(ctx, url, "") },
					Interval: time.Hour,
					Round: func(rep *Report, err error) {
						if err != nil {
							failed.Store(err.Error())
						} else if !rep.InSync() {
							failed.Store(problems(rep))
						}
					},
				})
			}()
			defer func() { cancel(); <-done }()
			file := filepath.Join(out, "watched", SkillFile)
			wait := func(marker string) time.Duration {
				start := time.Now()
				for deadline := start.Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
					if c, _ := os.ReadFile(file); strings.Contains(string(c), marker) {
						return time.Since(start)
					}
					if time.Now().After(deadline) {
						b.Fatalf("%s not on disk after 30 s (last round: %v)", marker, failed.Load())
					}
				}
			}
			wait("") // the first round wrote it
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				marker := fmt.Sprintf("%s-%d-%d", name, i, time.Now().UnixNano())
				start := time.Now()
				reg.register(b, "bench/watched", "# Watched\n\n"+marker+"\n")
				wait(marker)
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50_ms")
			b.ReportMetric(pct(0.99), "p99_ms")
		})
	}
}
