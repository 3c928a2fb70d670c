package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/sandbox"
)

// A run reports the CPU it burnt and the memory it touched, and the
// Observe hook receives that same result once.
func TestRunReportsCPUAndPeakMemory(t *testing.T) {
	newSandbox(t) // skips nothing: fails without bwrap and python3, like the other tests
	var seen []sandbox.Result
	s := sandbox.New(sandbox.Config{Observe: func(r sandbox.Result) { seen = append(seen, r) }})
	const touched = 96 << 20
	res, err := s.Run(context.Background(), sandbox.Spec{
		// Touch 96 MiB, then burn CPU until 300 ms of process time.
		Command: []string{python, "-I", "-S", "-c", `
import time
b = bytearray(96 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
t = time.process_time()
while time.process_time() - t < 0.3:
    pass
print("done")
`},
		Env: map[string]string{"PATH": "/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != sandbox.Exited || res.ExitCode != 0 {
		t.Fatalf("outcome %s %d: %s", res.Outcome, res.ExitCode, res.Stderr)
	}
	mode, _ := s.CgroupMode()
	switch {
	case s.CountsCPU() && res.CPU < 300*time.Millisecond:
		t.Errorf("CPU = %v, want at least the 300 ms the command burnt (cgroup mode %s)", res.CPU, mode)
	case !s.CountsCPU() && res.CPU != 0:
		t.Errorf("CPU = %v without a cgroup that counts CPU (cgroup mode %s), want 0", res.CPU, mode)
	}
	if res.PeakMemoryBytes < touched {
		t.Errorf("PeakMemoryBytes = %d, want at least the %d bytes the command touched (cgroup mode %s)", res.PeakMemoryBytes, touched, mode)
	}
	if len(seen) != 1 || seen[0].CPU != res.CPU || seen[0].PeakMemoryBytes != res.PeakMemoryBytes || seen[0].Outcome != res.Outcome {
		t.Fatalf("Observe saw %d results (%+v), want exactly the one Run returned", len(seen), seen)
	}
	t.Logf("cgroup mode %s: CPU %v, peak %d MiB", mode, res.CPU, res.PeakMemoryBytes>>20)

	// A run killed for its wall-clock limit is observed too, with its outcome.
	res, err = s.Run(context.Background(), sandbox.Spec{
		Command: []string{python, "-I", "-S", "-c", "while True: pass"},
		Env:     map[string]string{"PATH": "/usr/bin:/bin"},
		Limits:  sandbox.Limits{Wall: 500 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != sandbox.TimedOut || len(seen) != 2 || seen[1].Outcome != sandbox.TimedOut {
		t.Fatalf("outcome %s, observed %d runs (last %+v); want timed_out observed", res.Outcome, len(seen), seen[len(seen)-1].Outcome)
	}
}

// Without a cgroup (rlimits only) a run reports no CPU time rather than
// bwrap's own few milliseconds, and a peak memory from the kernel's rusage.
func TestRunUsageWithoutCgroup(t *testing.T) {
	newSandbox(t)
	s := sandbox.New(sandbox.Config{Cgroups: "off"})
	res, err := s.Run(context.Background(), sandbox.Spec{
		Command: []string{python, "-I", "-S", "-c", "print(1)"},
		Env:     map[string]string{"PATH": "/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.CountsCPU() {
		t.Fatal("CountsCPU with cgroups off")
	}
	if res.Outcome != sandbox.Exited || res.CPU != 0 || res.PeakMemoryBytes <= 0 {
		t.Fatalf("outcome %s, CPU %v, peak %d: want exited, no CPU time, a positive peak", res.Outcome, res.CPU, res.PeakMemoryBytes)
	}
}
