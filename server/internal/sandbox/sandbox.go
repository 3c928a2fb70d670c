package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrUnavailable means bubblewrap is not installed (or not runnable here).
var ErrUnavailable = errors.New("sandbox unavailable")

// InstallHint says how to get bubblewrap on the machines we support.
const InstallHint = "install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap; Fedora: dnf install bubblewrap)"

// Inside is the uid and gid the command runs as inside the sandbox.
const Inside = 1000

// Limits bound one run. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	Wall           time.Duration // wall-clock time, then SIGKILL
	CPU            time.Duration // CPU time (RLIMIT_CPU soft limit, whole seconds rounded up, at least 1; SIGXCPU, SIGKILL a second later)
	MemoryBytes    int64         // address space per process (RLIMIT_AS)
	RunMemoryBytes int64         // memory of the whole run, all processes together (the run cgroup's limit; only when Sandbox.CgroupMode is not CgroupNone)
	Processes      int           // processes and threads of the sandbox uid (RLIMIT_NPROC)
	OutputBytes    int64         // bytes kept of stdout and of stderr each; more kills the run
	FileBytes      int64         // largest file the command may write (RLIMIT_FSIZE)
	WorkspaceBytes int64         // size of each tmpfs a run may write: /workspace, /tmp and /dev/shm
	OpenFiles      int           // open file descriptors (RLIMIT_NOFILE)
}

// DefaultLimits are the limits of a run that asks for nothing else.
var DefaultLimits = Limits{
	Wall:           30 * time.Second,
	CPU:            30 * time.Second,
	MemoryBytes:    512 << 20,
	RunMemoryBytes: 512 << 20,
	Processes:      32,
	OutputBytes:    1 << 20,
	FileBytes:      64 << 20,
	WorkspaceBytes: 64 << 20,
	OpenFiles:      256,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Wall > 0 {
		d.Wall = l.Wall
	}
	if l.CPU > 0 {
		d.CPU = l.CPU
	}
	if l.MemoryBytes > 0 {
		d.MemoryBytes = l.MemoryBytes
	}
	if l.RunMemoryBytes > 0 {
		d.RunMemoryBytes = l.RunMemoryBytes
	}
	if l.Processes > 0 {
		d.Processes = l.Processes
	}
	if l.OutputBytes > 0 {
		d.OutputBytes = l.OutputBytes
	}
	if l.FileBytes > 0 {
		d.FileBytes = l.FileBytes
	}
	if l.WorkspaceBytes > 0 {
		d.WorkspaceBytes = l.WorkspaceBytes
	}
	if l.OpenFiles > 0 {
		d.OpenFiles = l.OpenFiles
	}
	return d
}

// Mount is a host file or folder copied read-only into the sandbox. It is
// copied (bwrap --file from an open descriptor), not bound: a bind would
// show its host path in /proc/self/mountinfo.
type Mount struct {
	Source string // host path (file or directory of regular files)
	Target string // absolute path inside the sandbox
}

// MaxMountFiles bounds the files the Mounts of one run may hold together:
// each is passed to bwrap as an open descriptor.
const MaxMountFiles = 4096

// Spec is one command to run.
type Spec struct {
	// Command is the program and its arguments as seen inside the sandbox
	// (e.g. /usr/bin/python3 …).
	Command []string
	// Mounts are read-only copies of host files; targets must be
	// absolute, clean and outside /usr, /proc and /dev.
	Mounts []Mount
	// Env is the whole environment of the command.
	Env map[string]string
	// Dir is the working directory inside the sandbox (default /workspace).
	Dir string
	// Stdin is fed to the command (nil: empty).
	Stdin []byte
	// Limits of this run.
	Limits Limits
}

// Outcome says how a run ended.
type Outcome string

// The ways a run ends.
const (
	Exited         Outcome = "exited"          // the command exited (see ExitCode)
	Signaled       Outcome = "signaled"        // killed by a signal it did not choose to ignore (CPU limit: SIGKILL/SIGXCPU)
	TimedOut       Outcome = "timed_out"       // wall-clock limit reached
	OutputExceeded Outcome = "output_exceeded" // stdout or stderr passed Limits.OutputBytes
	Canceled       Outcome = "canceled"        // the caller's context ended
	// MemoryExceeded: the run cgroup hit Limits.RunMemoryBytes and the
	// kernel's OOM killer killed a process of the run.
	MemoryExceeded Outcome = "memory_exceeded"
)

// Result is what a run produced.
type Result struct {
	Outcome  Outcome
	ExitCode int    // exit status when Outcome is Exited, else -1
	Signal   string // the signal's name when Outcome is Signaled
	Stdout   []byte // at most Limits.OutputBytes
	Stderr   []byte // at most Limits.OutputBytes
	Duration time.Duration
	Limits   Limits // the limits applied
	// CPU is the CPU time (user and system) of every process of the run,
	// counted by its cgroup (v2 cpu.stat, v1 cpuacct). Zero when the run
	// had no cgroup that counts CPU (rlimits only): bwrap's own rusage
	// would miss its PID namespace's processes, which it does not wait for.
	CPU time.Duration
	// PeakMemoryBytes is the run's peak memory: the run cgroup's peak
	// (v2 memory.peak, v1 memory.max_usage_in_bytes), else the largest
	// resident size of one of its waited-for processes.
	PeakMemoryBytes int64
}

// Config is how to reach bubblewrap.
type Config struct {
	// Bwrap is the bwrap binary (default: "bwrap" looked up on PATH, then
	// /usr/bin/bwrap).
	Bwrap string
	// Prlimit is util-linux prlimit as seen inside the sandbox (default
	// /usr/bin/prlimit; /usr is bound read-only).
	Prlimit string
	// HostUIDBase is the first host uid given to runs when the server runs
	// as root (default 200000); run n uses HostUIDBase + n mod HostUIDs.
	HostUIDBase int
	// HostUIDs is the size of that pool (default 1000).
	HostUIDs int
	// Cgroups is "" or "auto" (a cgroup per run when the host allows it)
	// or "off" (rlimits only).
	Cgroups string
	// CgroupParent is the cgroup path (as in /proc/self/cgroup) run
	// cgroups are created under. Default on cgroup v2: the parent of the
	// server's own cgroup (it must be delegated: writable, memory and pids
	// controllers enabled or enablable); on cgroup v1: the server's own
	// cgroup in the memory and in the pids hierarchy.
	CgroupParent string
	// CgroupFS is where the cgroup filesystems are mounted (default
	// /sys/fs/cgroup).
	CgroupFS string
	// Shell starts bwrap inside the run cgroup on cgroup v1 (default
	// /bin/sh): it writes its own pid into the cgroup, then execs bwrap.
	Shell string
	// Observe, when set, is called with the Result of every run that
	// started (whatever its Outcome), on the caller's goroutine before Run
	// returns: the registry's metrics count runs by outcome with their CPU
	// and memory. It must be quick.
	Observe func(Result)
}

// Sandbox runs commands. It is safe for concurrent use.
type Sandbox struct {
	cfg   Config
	bwrap string
	err   error
	seq   atomic.Uint64
	once  sync.Once
	cg    cgroups
}

// New returns a Sandbox; it does not fail when bwrap is missing (Available
// and Run say so).
func New(cfg Config) *Sandbox {
	if cfg.Prlimit == "" {
		cfg.Prlimit = "/usr/bin/prlimit"
	}
	if cfg.HostUIDBase <= 0 {
		cfg.HostUIDBase = 200000
	}
	if cfg.HostUIDs <= 0 {
		cfg.HostUIDs = 1000
	}
	if cfg.CgroupFS == "" {
		cfg.CgroupFS = "/sys/fs/cgroup"
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	s := &Sandbox{cfg: cfg}
	switch cfg.Cgroups {
	case "off":
		s.cg = cgroups{mode: CgroupNone, why: "cgroups turned off in the configuration"}
	case "", "auto":
		s.cg = detectCgroups(cfg.CgroupFS, cfg.CgroupParent)
		if s.cg.mode == CgroupV1 {
			if _, err := os.Stat(cfg.Shell); err != nil {
				s.cg = cgroups{mode: CgroupNone, why: fmt.Sprintf("cgroup v1 needs %s to start bwrap inside the run cgroup: %v", cfg.Shell, err)}
			}
		}
	default:
		s.cg = cgroups{mode: CgroupNone, why: fmt.Sprintf("unknown Config.Cgroups %q (expected auto or off)", cfg.Cgroups)}
	}
	return s
}

// CgroupMode reports how the memory and processes of a whole run are
// bounded, and, for CgroupNone, why no cgroup is used. It is decided once,
// in New.
func (s *Sandbox) CgroupMode() (CgroupMode, string) {
	if s.cg.mode == "" {
		return CgroupNone, "sandbox not built with New"
	}
	return s.cg.mode, s.cg.why
}

// CountsCPU reports whether runs get a cgroup that counts their CPU time
// (Result.CPU): cgroup v2, or v1 with a writable cpuacct hierarchy.
func (s *Sandbox) CountsCPU() bool {
	return s.cg.mode == CgroupV2 || s.cg.mode == CgroupV1 && s.cg.cpuacct != ""
}

// Available reports nil when bwrap and prlimit are installed, else an error
// wrapping ErrUnavailable that says how to install what is missing.
func (s *Sandbox) Available() error {
	s.once.Do(func() {
		name := s.cfg.Bwrap
		if name == "" {
			name = "bwrap"
		}
		p, err := exec.LookPath(name)
		if err != nil && s.cfg.Bwrap == "" {
			if _, serr := os.Stat("/usr/bin/bwrap"); serr == nil {
				p, err = "/usr/bin/bwrap", nil
			}
		}
		if err != nil {
			s.err = fmt.Errorf("%w: bubblewrap (bwrap) is not installed: %s", ErrUnavailable, InstallHint)
			return
		}
		if _, err := os.Stat(s.cfg.Prlimit); err != nil {
			s.err = fmt.Errorf("%w: %s is missing (it sets the kernel limits): install util-linux", ErrUnavailable, s.cfg.Prlimit)
			return
		}
		s.bwrap = p
	})
	return s.err
}

// Args returns the bwrap command line for spec (without the binary), for
// tests and diagnostics. Run passes it to bwrap through a descriptor
// (--args), so that /proc/1/cmdline inside the sandbox shows no host path;
// descriptor numbers here are those Run uses.
func (s *Sandbox) Args(spec Spec) ([]string, error) {
	p, err := s.plan(spec)
	p.closeFiles()
	return p.args, err
}

// Descriptors bwrap gets (exec.Cmd.ExtraFiles start at 3): its arguments,
// the seccomp filter, then one per copied file.
const (
	argsFD    = 3
	seccompFD = 4
	firstFile = 5
)

// runPlan is the bwrap command line of one run and the files it copies in.
type runPlan struct {
	args  []string
	split int        // args[:split] are bwrap's options, args[split:] "--" and the command
	files []*os.File // descriptor firstFile+i
}

func (p runPlan) closeFiles() {
	for _, f := range p.files {
		_ = f.Close()
	}
}

func (s *Sandbox) plan(spec Spec) (runPlan, error) {
	var p runPlan
	if len(spec.Command) == 0 {
		return p, errors.New("sandbox: empty command")
	}
	l := spec.Limits.withDefaults()
	dir := spec.Dir
	if dir == "" {
		dir = "/workspace"
	}
	size := strconv.FormatInt(l.WorkspaceBytes, 10)
	a := []string{
		"--unshare-all", // user, ipc, pid, net, uts, cgroup namespaces: no network
		"--unshare-user", "--uid", strconv.Itoa(Inside), "--gid", strconv.Itoa(Inside),
		"--disable-userns", // no nested user namespaces to regain capabilities in
		"--die-with-parent", "--new-session",
		"--hostname", "sandbox",
		"--seccomp", strconv.Itoa(seccompFD),
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc",
		// bwrap's /dev is a tmpfs the sandbox uid owns, with no size:
		// shared memory gets its own capped tmpfs, and /dev itself is
		// made read-only.
		"--dev", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--perms", "0755", "--size", size, "--tmpfs", "/workspace",
		"--perms", "1777", "--size", size, "--tmpfs", "/tmp",
	}
	mounts := append([]Mount(nil), spec.Mounts...)
	sort.SliceStable(mounts, func(i, j int) bool { return mounts[i].Target < mounts[j].Target })
	for _, m := range mounts {
		if err := checkTarget(m.Target); err != nil {
			return p, err
		}
		var err error
		if a, err = p.copyIn(a, m); err != nil {
			p.closeFiles()
			return runPlan{}, err
		}
	}
	// The root itself is a tmpfs bwrap built, now holding the copies:
	// make it read-only so that only the capped tmpfs take writes.
	a = append(a, "--remount-ro", "/", "--chdir", dir, "--clearenv")
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.closeFiles()
			return runPlan{}, fmt.Errorf("sandbox: invalid environment variable name %q", k)
		}
		a = append(a, "--setenv", k, spec.Env[k])
	}
	cpu := int64((l.CPU + time.Second - 1) / time.Second)
	if cpu < 1 {
		cpu = 1
	}
	p.split = len(a)
	a = append(a, "--", s.cfg.Prlimit,
		// soft:hard, so the kernel sends SIGXCPU (reported as such) a
		// second before the SIGKILL of the hard limit.
		"--cpu="+strconv.FormatInt(cpu, 10)+":"+strconv.FormatInt(cpu+1, 10),
		"--as="+strconv.FormatInt(l.MemoryBytes, 10),
		"--nproc="+strconv.Itoa(l.Processes),
		"--fsize="+strconv.FormatInt(l.FileBytes, 10),
		"--nofile="+strconv.Itoa(l.OpenFiles),
		"--core=0",
		"--")
	p.args = append(a, spec.Command...)
	return p, nil
}

// copyIn adds the bwrap operations that copy m into the sandbox: --dir
// for folders, --file from an open descriptor for regular files (0555
// when executable, else 0444). Anything else in the source is refused;
// errors name paths relative to the source only.
func (p *runPlan) copyIn(a []string, m Mount) ([]string, error) {
	add := func(src, target string, mode os.FileMode) error {
		if len(p.files) >= MaxMountFiles {
			return fmt.Errorf("sandbox: the mounts of a run hold more than %d files", MaxMountFiles)
		}
		f, err := os.Open(src)
		if err != nil {
			return fmt.Errorf("sandbox: open %s: %w", target, errors.Unwrap(err))
		}
		perms := "0444"
		if mode&0o111 != 0 {
			perms = "0555"
		}
		a = append(a, "--perms", perms, "--file", strconv.Itoa(firstFile+len(p.files)), target)
		p.files = append(p.files, f)
		return nil
	}
	info, err := os.Stat(m.Source)
	if err != nil {
		return a, fmt.Errorf("sandbox: mount for %s: %w", m.Target, errors.Unwrap(err))
	}
	if !info.IsDir() {
		if d := path.Dir(m.Target); d != "/" {
			a = append(a, "--dir", d)
		}
		return a, add(m.Source, m.Target, info.Mode())
	}
	err = filepath.WalkDir(m.Source, func(src string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(m.Source, src)
		if rerr != nil {
			return rerr
		}
		target := path.Join(m.Target, filepath.ToSlash(rel))
		if err != nil {
			return fmt.Errorf("sandbox: read %s: %w", target, errors.Unwrap(err))
		}
		switch {
		case d.IsDir():
			a = append(a, "--perms", "0555", "--dir", target)
			return nil
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("sandbox: read %s: %w", target, errors.Unwrap(err))
			}
			return add(src, target, info.Mode())
		}
		return fmt.Errorf("sandbox: %s is not a regular file or folder (only those are copied into a run)", target)
	})
	return a, err
}

func checkTarget(t string) error {
	if !path.IsAbs(t) || path.Clean(t) != t || t == "/" {
		return fmt.Errorf("sandbox: mount target %q must be an absolute clean path", t)
	}
	for _, reserved := range []string{"/usr", "/proc", "/dev", "/bin", "/lib", "/lib64", "/sbin"} {
		if t == reserved || strings.HasPrefix(t, reserved+"/") {
			return fmt.Errorf("sandbox: mount target %q is inside the reserved %s", t, reserved)
		}
	}
	return nil
}

// Run runs spec and waits for it. The error is non-nil only when the run
// could not start (ErrUnavailable, a bad spec); everything the command does
// is reported in Result.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (Result, error) {
	if err := s.Available(); err != nil {
		return Result{}, err
	}
	p, err := s.plan(spec)
	if err != nil {
		return Result{}, err
	}
	defer p.closeFiles()
	filter, err := seccompFilter()
	if err != nil {
		return Result{}, err
	}
	// bwrap reads its arguments and the filter from pipes: /proc/1/cmdline
	// inside the sandbox is bwrap's own, and must name no host path.
	argsR, argsW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: pipe: %w", err)
	}
	defer argsR.Close()
	filterR, filterW, err := os.Pipe()
	if err != nil {
		argsW.Close()
		return Result{}, fmt.Errorf("sandbox: pipe: %w", err)
	}
	defer filterR.Close()
	// bwrap takes only options through --args: the command after "--"
	// stays on its command line (it names no host path).
	opts, command := p.args[:p.split], p.args[p.split:]
	go writeAndClose(argsW, []byte(strings.Join(opts, "\x00")+"\x00"))
	go writeAndClose(filterW, filter)
	args := append([]string{"--args", strconv.Itoa(argsFD)}, command...)
	l := spec.Limits.withDefaults()
	seq := s.seq.Add(1)
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid := -1
	if os.Geteuid() == 0 {
		// Root would map the sandbox uid onto host root: start bwrap as an
		// unprivileged host uid instead, one per concurrent run.
		uid = s.cfg.HostUIDBase + int(seq%uint64(s.cfg.HostUIDs))
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), NoSetGroups: true}
	}
	bin := s.bwrap
	var rc *runCgroup
	if s.cg.mode != CgroupNone && s.cg.mode != "" {
		rc, err = s.cg.create(fmt.Sprintf("skills-run-%d-%d", os.Getpid(), seq), l, uid)
		if err != nil {
			return Result{}, err
		}
		defer rc.remove()
		switch rc.mode {
		case CgroupV2:
			// clone3(CLONE_INTO_CGROUP): the child starts in the cgroup,
			// checked with the server's credentials before setuid.
			fd, err := syscall.Open(rc.dirs[0], syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return Result{}, fmt.Errorf("sandbox: open run cgroup: %w", err)
			}
			defer syscall.Close(fd)
			attr.UseCgroupFD, attr.CgroupFD = true, fd
		case CgroupV1:
			wrap := append([]string{"-c", joinScript, "sh"}, rc.procsFiles()...)
			args = append(append(append(wrap, "--"), s.bwrap), args...)
			bin = s.cfg.Shell
		}
	}
	var oom <-chan struct{}
	if rc != nil {
		// Registered before the start: an OOM in the first instant is
		// seen too.
		var stopOOM func()
		if oom, stopOOM, err = rc.watchOOM(); err != nil {
			return Result{}, err
		}
		defer stopOOM()
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{} // bwrap --clearenv too; nothing of the server leaks
	cmd.Dir = "/"        // nor its working directory (bwrap's own, /proc/1/cwd)
	cmd.ExtraFiles = append([]*os.File{argsR, filterR}, p.files...)
	cmd.SysProcAttr = attr
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: stdout pipe: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: stderr pipe: %w", err)
	}
	start := time.Now()
	err = cmd.Start()
	// bwrap has its copies now. Our read ends must go at once: if bwrap
	// dies before reading its setup pipes, their writers then get EPIPE
	// instead of blocking for ever.
	_ = argsR.Close()
	_ = filterR.Close()
	p.closeFiles()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: start bwrap: %w", err)
	}
	var (
		mu       sync.Mutex
		outcome  Outcome
		killOnce sync.Once
	)
	kill := func(o Outcome) {
		killOnce.Do(func() {
			mu.Lock()
			outcome = o
			mu.Unlock()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		})
	}
	var wg sync.WaitGroup
	var outBuf, errBuf []byte
	wg.Add(2)
	go func() { defer wg.Done(); outBuf = readCapped(stdout, l.OutputBytes, func() { kill(OutputExceeded) }) }()
	go func() { defer wg.Done(); errBuf = readCapped(stderr, l.OutputBytes, func() { kill(OutputExceeded) }) }()

	timer := time.NewTimer(l.Wall)
	defer timer.Stop()
	stopWatch := make(chan struct{})
	go func() {
		select {
		case <-timer.C:
			kill(TimedOut)
		case <-ctx.Done():
			kill(Canceled)
		case <-oom:
			kill(MemoryExceeded)
			// The OOM killer may have taken bwrap's init already: kill
			// what is left of the run directly.
			for _, p := range rc.procsFiles() {
				killAll(p)
			}
		case <-stopWatch:
		}
	}()
	wg.Wait()
	werr := cmd.Wait()
	close(stopWatch)
	res := Result{Stdout: outBuf, Stderr: errBuf, Duration: time.Since(start), ExitCode: -1, Limits: l}
	res.CPU, res.PeakMemoryBytes = runUsage(cmd.ProcessState, rc)
	if s.cfg.Observe != nil {
		defer func() { s.cfg.Observe(res) }()
	}
	mu.Lock()
	res.Outcome = outcome
	mu.Unlock()
	if res.Outcome != "" {
		return res, nil
	}
	if rc != nil && rc.oomKilled() {
		// Whatever the exit status says, the run lost a process (or
		// all of them, v2 memory.oom.group) to its memory limit.
		res.Outcome = MemoryExceeded
		return res, nil
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		res.Outcome, res.ExitCode = Exited, 0
	case errors.As(werr, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Outcome, res.Signal = Signaled, ws.Signal().String()
		} else {
			res.Outcome, res.ExitCode = Exited, ws.ExitStatus()
			// bwrap reports the command's death by signal as 128+n.
			if n := ws.ExitStatus() - 128; n > 0 && n < 65 {
				res.Outcome, res.Signal, res.ExitCode = Signaled, syscall.Signal(n).String(), -1
			}
		}
	default:
		return res, fmt.Errorf("sandbox: wait: %w", werr)
	}
	if rc != nil && rc.mode == CgroupV1 && res.ExitCode == 125 && bytes.HasPrefix(res.Stderr, []byte(joinFailed)) {
		return res, errors.New(strings.TrimSpace(string(res.Stderr)))
	}
	return res, nil
}

// runUsage is the CPU time and peak memory of a finished run: the run
// cgroup's figures where it has them; without one, no CPU time and the
// largest resident size the kernel reported for bwrap's waited-for
// processes.
func runUsage(ps *os.ProcessState, rc *runCgroup) (cpu time.Duration, peak int64) {
	if ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss << 10 // KiB on Linux
		}
	}
	if rc != nil {
		if c, ok := rc.cpuUsage(); ok {
			cpu = c
		}
		if p, ok := rc.peakMemory(); ok && p > 0 {
			peak = p
		}
	}
	return cpu, peak
}

// writeAndClose feeds one of bwrap's setup pipes. If bwrap exits before
// reading, the write fails with EPIPE, which only ends this goroutine.
func writeAndClose(w *os.File, b []byte) {
	_, _ = w.Write(b)
	_ = w.Close()
}

// readCapped reads r until EOF, keeping at most max bytes; past that it
// calls over once and discards the rest (the caller kills the writer).
func readCapped(r io.Reader, max int64, over func()) []byte {
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, io.LimitReader(r, max))
	if n == max {
		var one [1]byte
		if m, _ := r.Read(one[:]); m > 0 {
			over()
		}
	}
	_, _ = io.Copy(io.Discard, r)
	return buf.Bytes()
}
