package sandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/sandbox"
)

const python = "/usr/bin/python3"

func newSandbox(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	s := sandbox.New(sandbox.Config{})
	// Never skipped: `make test` installs bubblewrap (make sandbox-deps).
	if err := s.Available(); err != nil {
		t.Fatalf("the sandbox tests need bubblewrap (make sandbox-deps installs it): %v", err)
	}
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is needed by the sandbox tests: %v", python, err)
	}
	return s
}

func runPy(t *testing.T, s *sandbox.Sandbox, code string, l sandbox.Limits, mounts ...sandbox.Mount) sandbox.Result {
	t.Helper()
	res, err := s.Run(context.Background(), sandbox.Spec{
		Command: []string{python, "-I", "-S", "-c", code},
		Env:     map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/workspace"},
		Mounts:  mounts,
		Limits:  l,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func TestRunsAsNonRootWithCleanEnvironment(t *testing.T) {
	s := newSandbox(t)
	t.Setenv("SANDBOX_TEST_SECRET", "leak")
	res := runPy(t, s, `import os,json; print(json.dumps({"uid":os.getuid(),"gid":os.getgid(),"env":dict(os.environ),"cwd":os.getcwd(),"root":sorted(os.listdir("/"))}))`, sandbox.Limits{})
	if res.Outcome != sandbox.Exited || res.ExitCode != 0 {
		t.Fatalf("outcome %s %d: %s", res.Outcome, res.ExitCode, res.Stderr)
	}
	out := string(res.Stdout)
	for _, want := range []string{`"uid": 1000`, `"gid": 1000`, `"cwd": "/workspace"`, `"HOME": "/workspace"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in %s", want, out)
		}
	}
	for _, bad := range []string{"SANDBOX_TEST_SECRET", "leak", `"etc"`, `"home"`, `"work"`, `"var"`} {
		if strings.Contains(out, bad) {
			t.Errorf("sandbox sees %s: %s", bad, out)
		}
	}
}

func TestNoNetwork(t *testing.T) {
	s := newSandbox(t)
	res := runPy(t, s, `
import socket
for host in [("1.1.1.1", 80), ("127.0.0.1", 22)]:
    try:
        socket.create_connection(host, timeout=2)
        print("CONNECTED", host)
    except OSError as e:
        print("blocked", e)
print(sorted(n for _, n in socket.if_nameindex()))
`, sandbox.Limits{})
	if strings.Contains(string(res.Stdout), "CONNECTED") {
		t.Fatalf("network reachable: %s", res.Stdout)
	}
	if !strings.Contains(string(res.Stdout), "['lo']") {
		t.Fatalf("expected only a loopback interface, got %s %s", res.Stdout, res.Stderr)
	}
}

func TestHostFilesAreInvisibleAndReadOnly(t *testing.T) {
	s := newSandbox(t)
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "state.db"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Mount sources must be readable by the unprivileged host uid the
	// sandbox runs under, like the runtime's own run directories.
	shared, err := os.MkdirTemp("", "sandbox-mount-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runPy(t, s, `
import os
def tryit(label, f):
    try:
        f(); print("OK", label)
    except Exception as e:
        print("denied", label, type(e).__name__)
tryit("shadow", lambda: open("/etc/shadow").read())
tryit("data", lambda: open("`+dataDir+`/state.db").read())
tryit("write-usr", lambda: open("/usr/evil", "w").write("x"))
tryit("write-root", lambda: open("/evil", "w").write("x"))
tryit("write-mount", lambda: open("/data/b.txt", "w").write("x"))
tryit("write-workspace", lambda: open("/workspace/ok.txt", "w").write("x"))
tryit("write-tmp", lambda: open("/tmp/ok.txt", "w").write("x"))
print(open("/data/a.txt").read())
`, sandbox.Limits{}, sandbox.Mount{Source: shared, Target: "/data"})
	out := string(res.Stdout)
	for _, label := range []string{"shadow", "data", "write-usr", "write-root", "write-mount"} {
		if !strings.Contains(out, "denied "+label) {
			t.Errorf("%s was not denied: %s %s", label, out, res.Stderr)
		}
	}
	for _, label := range []string{"write-workspace", "write-tmp"} {
		if !strings.Contains(out, "OK "+label) {
			t.Errorf("%s failed: %s %s", label, out, res.Stderr)
		}
	}
	if !strings.Contains(out, "hello") {
		t.Errorf("mounted file unreadable: %s", out)
	}
	if _, err := os.Stat(filepath.Join(shared, "b.txt")); err == nil {
		t.Errorf("sandbox wrote into a read-only mount")
	}
}

func TestForkBombIsCapped(t *testing.T) {
	s := newSandbox(t)
	res := runPy(t, s, `
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError as e:
    print("capped after", n, e.errno)
`, sandbox.Limits{Processes: 16, Wall: 20 * time.Second})
	if !strings.Contains(string(res.Stdout), "capped after") {
		t.Fatalf("fork bomb not capped: %s %s %s", res.Outcome, res.Stdout, res.Stderr)
	}
}

func TestMemoryBombFails(t *testing.T) {
	s := newSandbox(t)
	res := runPy(t, s, `x = bytearray(2 << 30); print("allocated", len(x))`, sandbox.Limits{MemoryBytes: 256 << 20})
	if strings.Contains(string(res.Stdout), "allocated") || !strings.Contains(string(res.Stderr), "MemoryError") {
		t.Fatalf("memory bomb not stopped: %s %s %s", res.Outcome, res.Stdout, res.Stderr)
	}
}

func TestEndlessLoopIsKilled(t *testing.T) {
	s := newSandbox(t)
	res := runPy(t, s, `while True: pass`, sandbox.Limits{Wall: 1500 * time.Millisecond})
	if res.Outcome != sandbox.TimedOut {
		t.Fatalf("outcome %s, want %s", res.Outcome, sandbox.TimedOut)
	}
	res = runPy(t, s, `while True: pass`, sandbox.Limits{CPU: time.Second, Wall: 20 * time.Second})
	if res.Outcome != sandbox.Signaled {
		t.Fatalf("CPU limit: outcome %s (%s), want %s", res.Outcome, res.Signal, sandbox.Signaled)
	}
}

func TestHugeOutputIsCut(t *testing.T) {
	s := newSandbox(t)
	res := runPy(t, s, `
import sys
chunk = "x" * (1 << 20)
for _ in range(1024):
    sys.stdout.write(chunk)
`, sandbox.Limits{OutputBytes: 64 << 10})
	if res.Outcome != sandbox.OutputExceeded {
		t.Fatalf("outcome %s, want %s", res.Outcome, sandbox.OutputExceeded)
	}
	if len(res.Stdout) != 64<<10 {
		t.Fatalf("kept %d bytes, want %d", len(res.Stdout), 64<<10)
	}
}

func TestWorkspaceIsCapped(t *testing.T) {
	s := newSandbox(t)
	res := runPy(t, s, `
try:
    with open("/workspace/big", "wb") as f:
        for _ in range(64):
            f.write(b"x" * (1 << 20))
    print("WROTE")
except OSError as e:
    print("capped", e.errno)
`, sandbox.Limits{WorkspaceBytes: 8 << 20})
	if strings.Contains(string(res.Stdout), "WROTE") {
		t.Fatalf("workspace not capped: %s %s", res.Stdout, res.Stderr)
	}
}

func TestConcurrentRuns(t *testing.T) {
	s := newSandbox(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Run(context.Background(), sandbox.Spec{Command: []string{python, "-I", "-S", "-c", "print(6*7)"}})
			if err != nil {
				errs <- err
				return
			}
			if strings.TrimSpace(string(res.Stdout)) != "42" {
				errs <- errors.New("bad output: " + string(res.Stdout) + string(res.Stderr))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestMissingBwrap(t *testing.T) {
	s := sandbox.New(sandbox.Config{Bwrap: "/nonexistent/bwrap"})
	_, err := s.Run(context.Background(), sandbox.Spec{Command: []string{"true"}})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install -y bubblewrap") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadMountTarget(t *testing.T) {
	s := sandbox.New(sandbox.Config{})
	for _, target := range []string{"relative", "/usr/x", "/a/../b", "/"} {
		if _, err := s.Args(sandbox.Spec{Command: []string{"true"}, Mounts: []sandbox.Mount{{Source: "/tmp", Target: target}}}); err == nil {
			t.Errorf("target %q accepted", target)
		}
	}
}

// TestRunMemoryIsCappedPerRun: 8 processes of 200 MiB each stay under the
// per-process RLIMIT_AS but together pass the run's cgroup memory limit;
// the run ends as MemoryExceeded, its cgroup is removed, and the next run
// works.
func TestRunMemoryIsCappedPerRun(t *testing.T) {
	s := newSandbox(t)
	mode, why := s.CgroupMode()
	if mode == sandbox.CgroupNone {
		if os.Geteuid() == 0 && cgroupHost() {
			t.Fatalf("this host has writable cgroups but the sandbox uses none: %s", why)
		}
		t.Skipf("no usable cgroup here (%s): only the per-process rlimits apply", why)
	}
	before := runCgroups(t)
	res := runPy(t, s, `
import os, time
pids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        b = bytearray(200 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(30)
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
print("ALL ALIVE")
`, sandbox.Limits{RunMemoryBytes: 512 << 20, Wall: 60 * time.Second})
	if res.Outcome != sandbox.MemoryExceeded {
		t.Fatalf("outcome %s (exit %d, signal %s), want %s: %s %s", res.Outcome, res.ExitCode, res.Signal, sandbox.MemoryExceeded, res.Stdout, res.Stderr)
	}
	if after := runCgroups(t); len(after) > len(before) {
		t.Fatalf("run cgroups left behind: %v (before: %v)", after, before)
	}
	ok := runPy(t, s, `print(6*7)`, sandbox.Limits{})
	if strings.TrimSpace(string(ok.Stdout)) != "42" {
		t.Fatalf("next run: %s %s %s", ok.Outcome, ok.Stdout, ok.Stderr)
	}
}

// cgroupHost reports whether a cgroup v1 memory or a v2 hierarchy exists.
func cgroupHost() bool {
	for _, p := range []string{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/cgroup.controllers"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// runCgroups lists this process's run cgroups anywhere under /sys/fs/cgroup.
func runCgroups(t *testing.T) []string {
	t.Helper()
	var out []string
	prefix := "skills-run-" + strconv.Itoa(os.Getpid()) + "-"
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}
