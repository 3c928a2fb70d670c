// Package sandbox runs untrusted commands in a fresh bubblewrap (bwrap)
// sandbox with limits the kernel enforces. It knows nothing of skills: the
// caller says which host files appear where, which environment the command
// gets and which limits apply.
//
// Every run gets:
//
//   - new user, mount, PID, IPC, UTS, cgroup and network namespaces (no
//     network at all: only a loopback interface that is down);
//   - a non-root uid/gid (1000 inside). When the server runs as root, bwrap
//     itself is started under a distinct unprivileged host uid per
//     concurrent run (Config.HostUIDBase + slot), so even an escape from the
//     namespaces lands on an account that owns nothing;
//   - a read-only /usr (and the /bin, /lib, /lib64 symlinks into it), a fresh
//     /proc (of the new PID namespace) and a minimal, read-only /dev, and
//     nothing else of the host: no /etc, no /home, no server data directory;
//   - the caller's files (Spec.Mounts), copied read-only into the sandbox's
//     root from descriptors the server opened (bwrap --file), not bound:
//     a bind would name its host path in /proc/self/mountinfo. bwrap reads
//     its options from a pipe (--args), so /proc/1/cmdline names none
//     either, and it starts in / with an empty environment;
//   - an empty writable tmpfs at /workspace, /tmp and /dev/shm, each capped
//     at Limits.WorkspaceBytes (the root is read-only);
//   - a seccomp filter (bwrap --seccomp; seccomp.go) that answers EPERM to
//     the system calls in DeniedSyscalls (ptrace, io_uring, keyrings, bpf,
//     userfaultfd, perf_event_open, the mount and module calls, unshare,
//     setns, SysV shm, memfd…) on x86-64 and arm64, and to every call of
//     another ABI (x32, i386, arm32);
//   - only the environment the caller gives (bwrap --clearenv);
//   - rlimits set inside the new user namespace by util-linux prlimit just
//     before the command runs: CPU seconds (RLIMIT_CPU), address space
//     (RLIMIT_AS), processes (RLIMIT_NPROC, counted per user namespace so
//     concurrent runs do not share the budget), file size (RLIMIT_FSIZE),
//     open files (RLIMIT_NOFILE) and no core dumps;
//   - one cgroup per run when the host allows it (decided once in New,
//     see Sandbox.CgroupMode): cgroup v1 (memory and pids hierarchies, run
//     cgroups under the server's own) or v2 (a delegated subtree: the
//     parent of the server's cgroup, or Config.CgroupParent). It caps the
//     memory of all the run's processes together (Limits.RunMemoryBytes,
//     no swap) and their number (pids.max = Limits.Processes + 4 for bwrap
//     itself). bwrap starts inside it race-free: on v2 through
//     clone3(CLONE_INTO_CGROUP), on v1 through /bin/sh writing its own pid
//     into cgroup.procs before it execs bwrap. An OOM kill ends the whole
//     run as MemoryExceeded (v2 memory.oom.group, v1 an eventfd on
//     memory.oom_control); after the run every process left in the cgroup
//     is killed (v2 cgroup.kill) and the cgroup removed; run cgroups of a
//     server process that died mid-run are removed by the next New. Without a usable
//     cgroup only the per-process rlimits bound memory; they apply in
//     both modes (defence in depth);
//   - a wall-clock limit and an output cap enforced by this package: the
//     sandbox is killed with SIGKILL (bwrap --die-with-parent takes the whole
//     PID namespace down) when the time is up or when stdout or stderr
//     exceeds Limits.OutputBytes; at most that many bytes are ever read.
//
// Every Result carries the run's CPU time and peak memory, read from its
// cgroup before it is removed (v2 cpu.stat and memory.peak; v1 cpuacct.usage
// where the cpuacct hierarchy is writable, and memory.max_usage_in_bytes).
// Without a cgroup the CPU time is zero (unknown) and the peak is the
// kernel's rusage of the processes bwrap waited for. Config.Observe receives
// every Result (the registry's metrics count runs by outcome with them).
//
// Run reports ErrUnavailable (with the install command) when bwrap is not
// installed, so callers can answer with a clear failure and keep serving.
package sandbox
