package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOwnCgroup(t *testing.T) {
	self := []byte("12:pids:/user.slice\n4:cpu,cpuacct:/a\n4:memory:/process_api/x\n1:name=systemd:/s\n0::/system.slice/skills.service\n")
	for ctrl, want := range map[string]string{"memory": "/process_api/x", "pids": "/user.slice", "cpuacct": "/a", "": "/system.slice/skills.service"} {
		if got, ok := ownCgroup(self, ctrl); !ok || got != want {
			t.Errorf("ownCgroup(%q) = %q %v, want %q", ctrl, got, ok, want)
		}
	}
	if _, ok := ownCgroup(self, "blkio"); ok {
		t.Error("blkio found")
	}
}

func TestCounter(t *testing.T) {
	f := filepath.Join(t.TempDir(), "memory.events")
	if err := os.WriteFile(f, []byte("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := counter(f, "oom_kill"); n != 1 {
		t.Errorf("oom_kill = %d", n)
	}
	if n := counter(f, "oom_group_kill"); n != -1 {
		t.Errorf("absent key = %d, want -1", n)
	}
	if n := counter("", "oom_kill"); n != -1 {
		t.Errorf("no file = %d, want -1", n)
	}
}

// A v2 hierarchy whose run cgroups get no controller files (here: a plain
// folder posing as one) is not used, says why, and leaves nothing behind.
func TestDetectFallsBackToRlimits(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"cgroup.controllers", "cgroup.subtree_control"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("memory pids"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A run cgroup of a server process that died mid-run is removed.
	stale := filepath.Join(root, "skills-run-999999999-7")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	c := detectCgroups(root, "/")
	if _, err := os.Stat(stale); err == nil {
		t.Error("stale run cgroup left in place")
	}
	if c.mode != CgroupNone || !strings.Contains(c.why, "memory.max is missing") {
		t.Fatalf("mode %s, why %q", c.mode, c.why)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "skills-*")); len(left) != 0 {
		t.Fatalf("probe left %v", left)
	}
	if c := detectCgroups(t.TempDir(), ""); c.mode != CgroupNone || !strings.Contains(c.why, "no cgroup v2 hierarchy") {
		t.Fatalf("empty fs: mode %s, why %q", c.mode, c.why)
	}
	s := New(Config{Cgroups: "off"})
	if m, why := s.CgroupMode(); m != CgroupNone || !strings.Contains(why, "turned off") {
		t.Fatalf("off: %s %q", m, why)
	}
	s = New(Config{Cgroups: "v3"})
	if m, why := s.CgroupMode(); m != CgroupNone || !strings.Contains(why, `unknown Config.Cgroups "v3"`) {
		t.Fatalf("bogus: %s %q", m, why)
	}
}
