package sandbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/sandbox"
)

// benchRun reports the p50/p99 of running cmd in a fresh sandbox.
func benchRun(b *testing.B, cmd ...string) { benchWith(b, newSandbox(b), cmd...) }

func benchWith(b *testing.B, s *sandbox.Sandbox, cmd ...string) {
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := s.Run(context.Background(), sandbox.Spec{Command: cmd})
		lat = append(lat, time.Since(start))
		if err != nil || res.Outcome != sandbox.Exited || res.ExitCode != 0 {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkSandboxStart is the sandbox's own start-up cost: bwrap, the
// namespaces, prlimit and /usr/bin/true.
func BenchmarkSandboxStart(b *testing.B) { benchRun(b, "/usr/bin/true") }

// BenchmarkSandboxPython adds the Python interpreter's start-up.
func BenchmarkSandboxPython(b *testing.B) { benchRun(b, python, "-I", "-S", "-c", "pass") }

// BenchmarkSandboxStartRlimitsOnly is BenchmarkSandboxStart without the
// per-run cgroup (Config.Cgroups "off"): the difference is the cgroup's
// cost (mkdir, limits, the /bin/sh hop on v1, kill and rmdir).
func BenchmarkSandboxStartRlimitsOnly(b *testing.B) {
	newSandbox(b)
	benchWith(b, sandbox.New(sandbox.Config{Cgroups: "off"}), "/usr/bin/true")
}
