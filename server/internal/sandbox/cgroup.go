package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// CgroupMode says how the memory and process count of a whole run are
// bounded.
type CgroupMode string

// The modes New can pick.
const (
	// CgroupNone: no usable cgroup; only the per-process rlimits apply.
	CgroupNone CgroupMode = "rlimits"
	// CgroupV1: a child cgroup per run in the v1 memory and pids hierarchies.
	CgroupV1 CgroupMode = "cgroup-v1"
	// CgroupV2: a child cgroup per run in the unified (v2) hierarchy.
	CgroupV2 CgroupMode = "cgroup-v2"
)

// pidsOverhead is what bwrap itself adds to the command's processes: the
// outer bwrap and the PID namespace's init, plus slack for prlimit's exec.
const pidsOverhead = 4

// cgroups is the detected cgroup setup: where run cgroups are created.
type cgroups struct {
	mode   CgroupMode
	why    string // why CgroupNone was chosen
	parent string // v2: the parent directory of run cgroups
	memory string // v1: parent directory in the memory hierarchy
	pids   string // v1: parent directory in the pids hierarchy
	// cpuacct is the v1 parent directory in the cpuacct hierarchy, where
	// run cgroups count CPU time; "" when that hierarchy is absent or not
	// writable (the run then reports no CPU time).
	cpuacct string
}

// detectCgroups finds a writable place for per-run cgroups. fsRoot is the
// cgroup mount root (/sys/fs/cgroup); parent, when set, is a cgroup path
// (as in /proc/self/cgroup) to create run cgroups under instead of the
// default (v2: the parent of the server's own cgroup, v1: the server's own
// cgroup in each hierarchy).
func detectCgroups(fsRoot, parent string) cgroups {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroups{mode: CgroupNone, why: fmt.Sprintf("read /proc/self/cgroup: %v", err)}
	}
	if _, err := os.Stat(filepath.Join(fsRoot, "cgroup.controllers")); err == nil {
		return detectV2(fsRoot, parent, self)
	}
	if _, err := os.Stat(filepath.Join(fsRoot, "memory", "memory.limit_in_bytes")); err == nil {
		return detectV1(fsRoot, parent, self)
	}
	return cgroups{mode: CgroupNone, why: "no cgroup v2 hierarchy and no cgroup v1 memory controller under " + fsRoot}
}

// ownCgroup returns the server's cgroup path in the hierarchy whose
// /proc/self/cgroup controller field is ctrl ("" for v2).
func ownCgroup(self []byte, ctrl string) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if ctrl == "" && f[0] == "0" && f[1] == "" {
			return f[2], true
		}
		if ctrl != "" {
			for _, c := range strings.Split(f[1], ",") {
				if c == ctrl {
					return f[2], true
				}
			}
		}
	}
	return "", false
}

func detectV2(fsRoot, parent string, self []byte) cgroups {
	if parent == "" {
		own, ok := ownCgroup(self, "")
		if !ok {
			return cgroups{mode: CgroupNone, why: "cgroup v2: the server's cgroup is not in /proc/self/cgroup"}
		}
		// A v2 cgroup with processes cannot have children with
		// controllers: run cgroups are siblings of the server's own.
		parent = filepath.Dir(own)
	}
	dir := filepath.Join(fsRoot, filepath.Clean("/"+parent))
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return cgroups{mode: CgroupNone, why: fmt.Sprintf("cgroup v2: %v", err)}
	}
	for _, c := range []string{"memory", "pids"} {
		if !hasWord(string(ctl), c) {
			if err := writeCtl(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c)); err != nil {
				return cgroups{mode: CgroupNone, why: fmt.Sprintf("cgroup v2: the %s controller is not enabled in %s and could not be: %v", c, dir, err)}
			}
		}
	}
	c := cgroups{mode: CgroupV2, parent: dir}
	if err := c.probe(); err != nil {
		return cgroups{mode: CgroupNone, why: err.Error()}
	}
	return c
}

func detectV1(fsRoot, parent string, self []byte) cgroups {
	c := cgroups{mode: CgroupV1}
	for _, ctrl := range []string{"memory", "pids"} {
		p := parent
		if p == "" {
			own, ok := ownCgroup(self, ctrl)
			if !ok {
				return cgroups{mode: CgroupNone, why: "cgroup v1: the server's " + ctrl + " cgroup is not in /proc/self/cgroup"}
			}
			p = own
		}
		dir := filepath.Join(fsRoot, ctrl, filepath.Clean("/"+p))
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			return cgroups{mode: CgroupNone, why: fmt.Sprintf("cgroup v1 %s: %v", ctrl, err)}
		}
		if ctrl == "memory" {
			c.memory = dir
		} else {
			c.pids = dir
		}
	}
	if err := c.probe(); err != nil {
		return cgroups{mode: CgroupNone, why: err.Error()}
	}
	c.cpuacct = cpuacctParent(fsRoot, parent, self)
	return c
}

// cpuacctParent is where v1 run cgroups count CPU time, when the cpuacct
// hierarchy is there and a cgroup can be made in it; else "".
func cpuacctParent(fsRoot, parent string, self []byte) string {
	p := parent
	if p == "" {
		own, ok := ownCgroup(self, "cpuacct")
		if !ok {
			return ""
		}
		p = own
	}
	dir := filepath.Join(fsRoot, "cpuacct", filepath.Clean("/"+p))
	probe := filepath.Join(dir, fmt.Sprintf("skills-probe-%d-%d", os.Getpid(), probes.Add(1)))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return ""
	}
	_, err := os.Stat(filepath.Join(probe, "cpuacct.usage"))
	_ = syscall.Rmdir(probe)
	if err != nil {
		return ""
	}
	return dir
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

var probes atomic.Uint64

// probe creates and removes one run cgroup, so that a host which lists
// the controllers but forbids writing is found at construction. It also
// removes the run cgroups a previous server process left behind when it
// died mid-run (their names carry its pid).
func (c cgroups) probe() error {
	c.removeStale()
	rc, err := c.create(fmt.Sprintf("skills-probe-%d-%d", os.Getpid(), probes.Add(1)), DefaultLimits.withDefaults(), -1)
	if err != nil {
		return err
	}
	if c.mode == CgroupV2 {
		// Runs are started into their cgroup with clone3 (Linux 5.7+) and
		// ended with cgroup.kill (5.14+): an older kernel keeps rlimits
		// instead of failing every run.
		if _, err := os.Stat(filepath.Join(rc.dirs[0], "cgroup.kill")); err != nil {
			_ = rc.remove()
			return fmt.Errorf("cgroup v2: this kernel has no cgroup.kill (Linux 5.14 or later is needed): %w", err)
		}
	}
	return rc.remove()
}

// runCgroup is the cgroup of one run: one directory on v2, one per
// controller on v1.
type runCgroup struct {
	mode CgroupMode
	dirs []string // v2: [dir]; v1: [memory dir, pids dir]
}

// create makes the run cgroup name with l's limits. When uid >= 0 the
// cgroup.procs files are given to uid, so that a wrapper running as that
// unprivileged uid can move itself in (v1).
func (c cgroups) create(name string, l Limits, uid int) (*runCgroup, error) {
	rc := &runCgroup{mode: c.mode}
	var files [][2]string // file, value: written in this order
	switch c.mode {
	case CgroupV2:
		rc.dirs = []string{filepath.Join(c.parent, name)}
		files = [][2]string{
			{"memory.max", strconv.FormatInt(l.RunMemoryBytes, 10)},
			{"memory.swap.max", "0"},
			// The whole run dies together when it runs out of memory.
			{"memory.oom.group", "1"},
			{"pids.max", strconv.Itoa(l.Processes + pidsOverhead)},
		}
	case CgroupV1:
		rc.dirs = []string{filepath.Join(c.memory, name), filepath.Join(c.pids, name)}
		if c.cpuacct != "" {
			rc.dirs = append(rc.dirs, filepath.Join(c.cpuacct, name))
		}
		files = [][2]string{
			{"memory.limit_in_bytes", strconv.FormatInt(l.RunMemoryBytes, 10)},
			// memsw must not be below the memory limit: set it after.
			{"memory.memsw.limit_in_bytes", strconv.FormatInt(l.RunMemoryBytes, 10)},
			{"pids.max", strconv.Itoa(l.Processes + pidsOverhead)},
		}
	default:
		return nil, errors.New("sandbox: no cgroup support")
	}
	for _, d := range rc.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = rc.remove()
			return nil, fmt.Errorf("sandbox: create cgroup %s: %w", d, err)
		}
	}
	for _, f := range files {
		p := rc.find(f[0])
		if p == "" {
			if f[0] == "memory.memsw.limit_in_bytes" || f[0] == "memory.swap.max" || f[0] == "memory.oom.group" {
				continue // no swap accounting / older kernel: optional
			}
			_ = rc.remove()
			return nil, fmt.Errorf("sandbox: cgroup file %s is missing", f[0])
		}
		if err := writeCtl(p, []byte(f[1])); err != nil {
			_ = rc.remove()
			return nil, fmt.Errorf("sandbox: set %s: %w", p, err)
		}
	}
	if uid >= 0 && c.mode == CgroupV1 {
		for _, d := range rc.dirs {
			if err := os.Chown(filepath.Join(d, "cgroup.procs"), uid, uid); err != nil {
				_ = rc.remove()
				return nil, fmt.Errorf("sandbox: hand the run cgroup to uid %d: %w", uid, err)
			}
		}
	}
	return rc, nil
}

// find returns the path of a control file in whichever dir holds it.
func (rc *runCgroup) find(file string) string {
	for _, d := range rc.dirs {
		p := filepath.Join(d, file)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// procsFiles are the cgroup.procs files a process writes its pid into to
// join the run cgroup (v1).
func (rc *runCgroup) procsFiles() []string {
	out := make([]string, len(rc.dirs))
	for i, d := range rc.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}

// oomKilled reports whether the kernel killed a process of the run because
// the run cgroup ran out of memory.
func (rc *runCgroup) oomKilled() bool {
	switch rc.mode {
	case CgroupV2:
		return counter(rc.find("memory.events"), "oom_kill") > 0
	case CgroupV1:
		if n := counter(rc.find("memory.oom_control"), "oom_kill"); n >= 0 {
			return n > 0
		}
		// Kernels before 4.13 have no oom_kill line: the limit was hit.
		b, err := os.ReadFile(rc.find("memory.failcnt"))
		if err != nil {
			return false
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n > 0
	}
	return false
}

// cpuUsage is the CPU time of every process the run cgroup held (v2
// cpu.stat usage_usec, present without the cpu controller; v1 cpuacct.usage
// when the run has a cpuacct cgroup).
func (rc *runCgroup) cpuUsage() (time.Duration, bool) {
	if rc.mode == CgroupV1 {
		b, err := os.ReadFile(rc.find("cpuacct.usage"))
		if err != nil {
			return 0, false
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(ns), err == nil
	}
	us := counter(rc.find("cpu.stat"), "usage_usec")
	if us < 0 {
		return 0, false
	}
	return time.Duration(us) * time.Microsecond, true
}

// peakMemory is the run cgroup's peak memory (v2 memory.peak, Linux 5.19
// and later; v1 memory.max_usage_in_bytes).
func (rc *runCgroup) peakMemory() (int64, bool) {
	file := "memory.peak"
	if rc.mode == CgroupV1 {
		file = "memory.max_usage_in_bytes"
	}
	p := rc.find(file)
	if p == "" {
		return 0, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// counter reads "key value" lines and returns key's value, -1 when absent.
func counter(file, key string) int64 {
	if file == "" {
		return -1
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// remove kills whatever is left in the run cgroup and removes it. bwrap's
// PID namespace is usually gone already; this catches a process that
// escaped the process group (setsid) or is still being torn down.
func (rc *runCgroup) remove() error {
	if rc.mode == CgroupV2 && len(rc.dirs) == 1 {
		_ = writeCtl(filepath.Join(rc.dirs[0], "cgroup.kill"), []byte("1"))
	}
	var last error
	for _, d := range rc.dirs {
		last = nil
		// A killed task leaves the cgroup only once the kernel has torn it
		// down: retry rmdir (EBUSY) for a bounded time.
		for i := 0; i < 60; i++ { // at most ~1.8 s
			killAll(filepath.Join(d, "cgroup.procs"))
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				last = nil
				break
			}
			last = fmt.Errorf("sandbox: remove cgroup %s: %w", d, err)
			if !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(time.Duration(i+1) * time.Millisecond)
		}
	}
	return last
}

func killAll(procs string) {
	b, err := os.ReadFile(procs)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// joinScript is the wrapper bwrap is started through on cgroup v1: it
// writes its own pid into each cgroup.procs given before "--" and then
// execs the rest, so bwrap and everything it forks start inside the run
// cgroup (no window in which a child could fork outside it).
const joinScript = `for f; do
  if [ "$f" = -- ]; then shift; unset PWD OLDPWD; exec "$@"; fi
  echo $$ > "$f" || { echo "sandbox: cannot join the run cgroup ($f)" >&2; exit 125; }
  shift
done
exit 125`

// joinFailed is the wrapper's marker on stderr when it could not join.
const joinFailed = "sandbox: cannot join the run cgroup"

// watchOOM returns a channel that receives once when the run cgroup runs
// out of memory, so that the whole run is killed at once rather than
// going on without the process the OOM killer took. v2 needs no watcher
// (memory.oom.group): its channel is nil. On v1 it is an eventfd
// registered through cgroup.event_control; stop releases it.
func (rc *runCgroup) watchOOM() (oom <-chan struct{}, stop func(), err error) {
	if rc.mode != CgroupV1 {
		return nil, func() {}, nil
	}
	ctl, err := os.Open(rc.find("memory.oom_control"))
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: watch oom: %w", err)
	}
	defer ctl.Close()
	efd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		return nil, nil, fmt.Errorf("sandbox: eventfd: %w", errno)
	}
	ev := os.NewFile(efd, "oom-eventfd")
	reg := fmt.Sprintf("%d %d", efd, ctl.Fd())
	if err := writeCtl(filepath.Join(rc.dirs[0], "cgroup.event_control"), []byte(reg)); err != nil {
		ev.Close()
		return nil, nil, fmt.Errorf("sandbox: watch oom: %w", err)
	}
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [8]byte
		// Read returns on an OOM event, or with an error once stop closes
		// the eventfd. The event the cgroup's removal sends is never seen:
		// the caller stops the watcher before removing the cgroup.
		if _, err := ev.Read(b[:]); err == nil {
			ch <- struct{}{}
		}
	}()
	return ch, func() { ev.Close(); <-done }, nil
}

// writeCtl writes a cgroup control file; it never creates one (a missing
// control file is an error, not a new plain file in the folder).
func writeCtl(file string, data []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeStale removes skills-run-<pid>-<n> cgroups of processes that are
// gone, killing anything still inside.
func (c cgroups) removeStale() {
	parents := []string{c.parent}
	if c.mode == CgroupV1 {
		parents = []string{c.memory, c.pids, c.cpuacct}
	}
	for _, parent := range parents {
		if parent == "" {
			continue // no cpuacct hierarchy
		}
		dirs, _ := filepath.Glob(filepath.Join(parent, "skills-run-*"))
		for _, d := range dirs {
			pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "skills-run-"), "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid <= 0 || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
			_ = (&runCgroup{mode: c.mode, dirs: []string{d}}).remove()
		}
	}
}
