package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/sandbox"
)

// sandboxes are the modes this host offers: the default (a cgroup per run
// when possible) and rlimits only.
func sandboxes(t *testing.T) map[string]*sandbox.Sandbox {
	s := newSandbox(t)
	out := map[string]*sandbox.Sandbox{"default": s}
	if mode, _ := s.CgroupMode(); mode != sandbox.CgroupNone {
		out["rlimits"] = sandbox.New(sandbox.Config{Cgroups: "off"})
	}
	return out
}

// Every denied system call fails with EPERM inside a run (python3 calls
// them through libc's syscall(2) with zero arguments).
func TestSeccompDeniesSyscalls(t *testing.T) {
	var calls []string
	for _, d := range sandbox.DeniedSyscalls {
		nr := d.AMD64
		if runtime.GOARCH == "arm64" {
			nr = d.ARM64
		}
		calls = append(calls, fmt.Sprintf("(%q, %d)", d.Name, nr))
	}
	code := `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for name, nr in [` + strings.Join(calls, ", ") + `]:
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    e = ctypes.get_errno()
    print(name, "EPERM" if r == -1 and e == errno.EPERM else "ALLOWED r=%d errno=%d" % (r, e))
print("getpid", os.getpid())
`
	for mode, s := range sandboxes(t) {
		t.Run(mode, func(t *testing.T) {
			res := runPy(t, s, code, sandbox.Limits{})
			out := string(res.Stdout)
			for _, d := range sandbox.DeniedSyscalls {
				if !strings.Contains(out, d.Name+" EPERM\n") {
					t.Errorf("%s not denied with EPERM: %s", d.Name, lineOf(out, d.Name+" "))
				}
			}
			if !strings.Contains(out, "getpid ") {
				t.Fatalf("the run did not finish: %s %s", out, res.Stderr)
			}
		})
	}
}

func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return "(no line)"
}

// Every tmpfs a run can write is capped: /dev/shm like /workspace and
// /tmp; /dev itself takes no writes.
func TestEveryTmpfsIsCapped(t *testing.T) {
	code := `
import os
def fill(path):
    try:
        with open(path, "wb") as f:
            for _ in range(64):
                f.write(b"x" * (1 << 20))
        return "WROTE"
    except OSError as e:
        return "capped errno=%d" % e.errno
for p in ["/dev/shm/big", "/workspace/big", "/tmp/big", "/dev/big"]:
    print(p, fill(p))
    try:
        os.unlink(p)
    except OSError:
        pass
`
	for mode, s := range sandboxes(t) {
		t.Run(mode, func(t *testing.T) {
			res := runPy(t, s, code, sandbox.Limits{WorkspaceBytes: 8 << 20})
			out := string(res.Stdout)
			for _, p := range []string{"/dev/shm/big", "/workspace/big", "/tmp/big", "/dev/big"} {
				if !strings.Contains(out, p+" capped") {
					t.Errorf("%s not capped: %s %s", p, out, res.Stderr)
				}
			}
		})
	}
}

// Nothing inside a run names a host path or the server's environment or
// working directory: not the mount table, not bwrap's own /proc/1.
func TestNoHostPathsInside(t *testing.T) {
	t.Setenv("SANDBOX_SERVER_SECRET", "server-env-value")
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.MkdirTemp("", "host-path-marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(src) })
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "tool.sh"), []byte("#!/bin/sh\necho tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	code := `
import os, glob
def read(p):
    try:
        with open(p, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError as e:
        return "<%s>" % e
out = []
for p in ["/proc/self/mountinfo", "/proc/self/mounts", "/proc/1/mountinfo", "/proc/1/cmdline", "/proc/1/environ", "/proc/self/environ", "/proc/self/cmdline"]:
    out.append(p + "=" + read(p))
for p in ["/proc/1/cwd", "/proc/self/cwd", "/proc/1/root"]:
    try:
        out.append(p + "->" + os.readlink(p))
    except OSError as e:
        out.append(p + "-><%s>" % e)
out.append("env=" + repr(dict(os.environ)))
out.append("data=" + read("/data/a.txt"))
out.append("tool=" + os.popen("/data/sub/tool.sh").read())
print("\n".join(out))
`
	for mode, s := range sandboxes(t) {
		t.Run(mode, func(t *testing.T) {
			res := runPy(t, s, code, sandbox.Limits{}, sandbox.Mount{Source: src, Target: "/data"})
			out := string(res.Stdout)
			if !strings.Contains(out, "data=hello") || !strings.Contains(out, "tool=tool") {
				t.Fatalf("mounted files not readable or not executable: %s %s", out, res.Stderr)
			}
			for _, leak := range []string{src, filepath.Base(src), cwd, "server-env-value", "SANDBOX_SERVER_SECRET", os.TempDir() + "/"} {
				if strings.Contains(out, leak) {
					t.Errorf("the run sees %q:\n%s", leak, out)
				}
			}
		})
	}
}

// Environment values reach the command intact, "--" included (bwrap's
// options go through a pipe, the command stays on its command line).
func TestEnvironmentValuesLikeOptions(t *testing.T) {
	s := newSandbox(t)
	res, err := s.Run(context.Background(), sandbox.Spec{
		Command: []string{python, "-I", "-S", "-c", `import os; print(os.environ["A"], os.environ["B"])`},
		Env:     map[string]string{"A": "--", "B": "--ro-bind / /host"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "-- --ro-bind / /host" {
		t.Fatalf("got %q (%s)", got, res.Stderr)
	}
}
