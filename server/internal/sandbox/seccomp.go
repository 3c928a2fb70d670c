package sandbox

// The seccomp filter every run gets (bwrap --seccomp FD): a denylist of
// system calls untrusted code has no business making, answered EPERM.
// Namespaces, dropped capabilities and rlimits already stop most of them;
// the filter also closes the kernel attack surface behind them (io_uring,
// bpf, userfaultfd, keyrings, perf) and the ways around the memory bounds
// that rlimits mode cannot see (SysV shared memory, memfd).
//
// The program is classic BPF, assembled with golang.org/x/net/bpf: the Go
// team's assembler checks every instruction and its VM lets the tests run
// the filter for both architectures on any machine.

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/net/bpf"
)

// Audit architectures (linux/audit.h) a filter tells apart.
const (
	auditArchX8664   = 0xc000003e
	auditArchAArch64 = 0xc00000b7
	// x32 system calls on x86-64 carry this bit in their number.
	x32SyscallBit = 0x40000000
)

// seccomp return values (linux/seccomp.h).
const (
	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000
)

// DeniedSyscall is one system call the sandbox refuses, with its number
// on each architecture.
type DeniedSyscall struct {
	Name         string
	AMD64, ARM64 uint32
}

// DeniedSyscalls lists the system calls a run gets EPERM for.
var DeniedSyscalls = []DeniedSyscall{
	{"ptrace", 101, 117},
	{"process_vm_readv", 310, 270},
	{"process_vm_writev", 311, 271},
	{"io_uring_setup", 425, 425},
	{"io_uring_enter", 426, 426},
	{"io_uring_register", 427, 427},
	{"keyctl", 250, 219},
	{"add_key", 248, 217},
	{"request_key", 249, 218},
	{"bpf", 321, 280},
	{"userfaultfd", 323, 282},
	{"perf_event_open", 298, 241},
	{"mount", 165, 40},
	{"umount2", 166, 39},
	{"pivot_root", 155, 41},
	{"open_tree", 428, 428},
	{"move_mount", 429, 429},
	{"fsopen", 430, 430},
	{"fsconfig", 431, 431},
	{"fsmount", 432, 432},
	{"fspick", 433, 433},
	{"mount_setattr", 442, 442},
	{"open_by_handle_at", 304, 265},
	{"name_to_handle_at", 303, 264},
	{"kexec_load", 246, 104},
	{"kexec_file_load", 320, 294},
	{"init_module", 175, 105},
	{"finit_module", 313, 273},
	{"delete_module", 176, 106},
	{"unshare", 272, 97},
	{"setns", 308, 268},
	{"swapon", 167, 224},
	{"swapoff", 168, 225},
	{"reboot", 169, 142},
	{"acct", 163, 89},
	{"quotactl", 179, 60},
	// Memory outside every tmpfs cap: SysV segments live as long as the
	// run's IPC namespace, memfd contents as long as an fd is open.
	{"shmget", 29, 194},
	{"memfd_create", 319, 279},
}

// seccompProgram assembles the filter: on x86-64 and arm64 the denied
// calls (and every x32 call) get EPERM and the rest run; any other
// architecture (i386 through int 0x80, arm32 compat) gets EPERM for every
// call, since its numbers differ.
func seccompProgram() ([]bpf.RawInstruction, error) {
	eperm := bpf.RetConstant{Val: seccompRetErrno | uint32(syscall.EPERM)}
	block := func(nrs []uint32, x32 bool) []bpf.Instruction {
		// ld nr; [jge x32 → deny]; jeq n → deny …; ret allow; deny: ret EPERM
		out := []bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 4}}
		checks := len(nrs)
		if x32 {
			checks++
			out = append(out, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipTrue: uint8(checks)})
		}
		for _, nr := range nrs {
			done := len(out) - 1 // checks emitted before this one
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(checks - done)})
		}
		return append(out, bpf.RetConstant{Val: seccompRetAllow}, eperm)
	}
	var amd64, arm64 []uint32
	for _, d := range DeniedSyscalls {
		amd64, arm64 = append(amd64, d.AMD64), append(arm64, d.ARM64)
	}
	if len(amd64)+1 > 250 {
		return nil, fmt.Errorf("sandbox: seccomp denylist too long for 8-bit jumps")
	}
	a, b := block(amd64, true), block(arm64, false)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX8664, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchAArch64, SkipTrue: uint8(1 + len(a))},
		eperm,
	}
	prog = append(append(prog, a...), b...)
	return bpf.Assemble(prog)
}

// seccompFilter is the filter in the form bwrap --seccomp reads: struct
// sock_filter entries in the host's byte order (little-endian on both
// supported architectures).
func seccompFilter() ([]byte, error) {
	raw, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
