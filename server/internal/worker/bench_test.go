package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// TestMain removes the skills binary the tests built (testutil.BuildSkills).
func TestMain(m *testing.M) { testutil.Main(m) }

// Benchmarks of the registry end to end: a caller client → embedded engine →
// registry worker → engine → caller, over loopback, as in standalone mode.
// Each reports ops/s and p50/p99 latency; run with `make bench`.

// measure runs b.N calls of op spread over `callers` goroutines and reports
// throughput and latency percentiles.
func measure(b *testing.B, callers int, op func(i int) error) {
	b.Helper()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	b.ResetTimer()
	start := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
}

func benchCall(s *stack, fn string, payload any) error {
	if payload == nil {
		payload = struct{}{} // sent as {}, like an absent payload
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	_, err = s.caller.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 30 * time.Second})
	return err
}

// body2K is a skill body of about 2 KiB with a title and a description.
func body2K(i int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Skill %d\n\nWhen and why to call the tools of worker %d.\n\n", i, i)
	for sb.Len() < 2048 {
		sb.WriteString("- a line of orientation text about one function and its arguments\n")
	}
	return sb.String()[:2048]
}

// loadSkills registers n skills of 2 KiB with 64 concurrent callers.
func loadSkills(tb testing.TB, s *stack, n int) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id := "w" + strconv.Itoa(i/100) + "/s" + strconv.Itoa(i)
				if err := benchCall(s, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body2K(i)}); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
}

func BenchmarkRegister(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := startStack(b, b.TempDir())
			body := body2K(0)
			measure(b, callers, func(i int) error {
				return benchCall(s, rules.FnSkillsRegister, map[string]string{"id": "bench/s" + strconv.Itoa(i%1000), "skill": body})
			})
		})
	}
}

func BenchmarkResourcesRead(b *testing.B) {
	s := startStack(b, b.TempDir())
	loadSkills(b, s, 100)
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			measure(b, callers, func(i int) error {
				return benchCall(s, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://w0/s" + strconv.Itoa(i%100)})
			})
		})
	}
}

func BenchmarkFetch(b *testing.B) {
	s := startStack(b, b.TempDir())
	loadSkills(b, s, 100)
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = "iii://w0/s" + strconv.Itoa(i*7)
	}
	for _, tc := range []struct {
		uris    int
		callers int
	}{{1, 1}, {1, 64}, {10, 1}, {10, 64}} {
		b.Run(fmt.Sprintf("uris=%d/callers=%d", tc.uris, tc.callers), func(b *testing.B) {
			measure(b, tc.callers, func(i int) error {
				if tc.uris == 1 {
					return benchCall(s, rules.FnSkillFetch, map[string]string{"uri": "iii://w0/s" + strconv.Itoa(i%100)})
				}
				return benchCall(s, rules.FnSkillFetch, map[string][]string{"uris": ten})
			})
		})
	}
}

// BenchmarkIndexRead reads iii://skills end to end with 1 000 and 10 000
// registered skills (upstream re-lists and re-parses the scope on each read).
func BenchmarkIndexRead(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		// Loading happens once per size: a parent benchmark runs once, its
		// sub-benchmark is re-run with growing b.N.
		s := startStack(b, b.TempDir())
		loadSkills(b, s, n)
		b.Run(fmt.Sprintf("skills=%d", n), func(b *testing.B) {
			measure(b, 1, func(int) error {
				return benchCall(s, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"})
			})
		})
		s.stop()
	}
}

// BenchmarkMemory10K loads 10 000 skills of 2 KiB into a standalone stack
// (engine, worker and caller in this process) and reports the growth of
// resident memory against the body bytes. The target (at most 2× the bodies
// + 300 B per skill) is the registry's: BenchmarkWorkerProcessMemory10K
// measures that alone. The engine's store keeps no copy of the values (it
// reads bbolt's map), so the worker's is the only one; the standalone
// process seen from outside is measured by server/internal/xproc.
func BenchmarkMemory10K(b *testing.B) {
	const n = 10000
	defer debug.SetGCPercent(debug.SetGCPercent(50)) // as the skills binary runs
	s := startStack(b, b.TempDir())
	before := testutil.SelfRSS(b)
	loadSkills(b, s, n)
	if err := benchCall(s, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}); err != nil {
		b.Fatal(err)
	}
	growth := float64(testutil.SelfRSS(b) - before)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	reportMemory(b, s, n, growth, "heap_inuse_MiB", float64(ms.HeapInuse))
}

// BenchmarkWorkerProcessMemory10K runs the registry as its own process
// (`skills --url`, the way it is deployed beside a real iii engine) against
// the embedded engine in this process, registers 10 000 skills of 2 KiB
// through it and reports that process's resident memory growth: the cost of
// the registry itself, without the engine's copy of the state.
func BenchmarkWorkerProcessMemory10K(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	bin := testutil.BuildSkills(b)
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", DataDir: dir, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	worker := exec.Command(bin, "--url", eng.URL(), "--config", filepath.Join(dir, "absent.yaml"), "--log-level", "error")
	if err := worker.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	pid := worker.Process.Pid

	s := &stack{caller: iii.RegisterWorker(eng.URL(), iii.WithName("caller"), iii.WithLogger(quiet))}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.caller.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.caller.Close() })
	for benchCall(s, rules.FnSkillsList, map[string]any{}) != nil {
		if ctx.Err() != nil {
			b.Fatal("the skills process did not register its functions within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := testutil.ProcStatus(b, pid, "VmRSS")
	loadSkills(b, s, n)
	if err := benchCall(s, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://skills"}); err != nil {
		b.Fatal(err)
	}
	// The process cannot be asked to collect: wait until its resident size
	// stops moving (state events drained, the runtime's scavenger done).
	after := testutil.SettledRSS(b, pid)
	growth := float64(after - before)
	reportMemory(b, s, n, growth, "rss_anon_MiB", float64(testutil.ProcStatus(b, pid, "RssAnon")))
}

// reportMemory reports the resident growth after loading n skills of 2 KiB
// against the target (2× the bodies + 300 B per skill) and one more size in
// bytes, under a sub-benchmark that keeps reading a skill.
func reportMemory(b *testing.B, s *stack, n int, growth float64, extraName string, extraBytes float64) {
	bodies := float64(n * 2048)
	b.Run(fmt.Sprintf("skills=%d", n), func(b *testing.B) {
		for range b.N {
			if err := benchCall(s, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://w0/s1"}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(growth/(1<<20), "rss_growth_MiB")
		b.ReportMetric(extraBytes/(1<<20), extraName)
		b.ReportMetric(growth/bodies, "rss_per_body_byte")
		b.ReportMetric((2*bodies+300*float64(n))/(1<<20), "target_MiB")
	})
}
