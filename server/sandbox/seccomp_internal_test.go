package sandbox

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
)

// The filter, run in x/net/bpf's VM for both architectures (the kernel
// runs it on the host's only; TestSeccompDeniesSyscalls covers that).
func TestSeccompProgramBothArches(t *testing.T) {
	raw, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the assembled filter does not disassemble")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	eperm := seccompRetErrno | uint32(syscall.EPERM)
	// seccomp_data {nr, arch, ip, args}; the VM loads big-endian.
	verdict := func(arch, nr uint32) uint32 {
		in := make([]byte, 64)
		binary.BigEndian.PutUint32(in[0:], nr)
		binary.BigEndian.PutUint32(in[4:], arch)
		v, err := vm.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(v)
	}
	for _, d := range DeniedSyscalls {
		if got := verdict(auditArchX8664, d.AMD64); got != eperm {
			t.Errorf("amd64 %s (%d): %#x, want EPERM", d.Name, d.AMD64, got)
		}
		if got := verdict(auditArchAArch64, d.ARM64); got != eperm {
			t.Errorf("arm64 %s (%d): %#x, want EPERM", d.Name, d.ARM64, got)
		}
		if got := verdict(auditArchX8664, d.AMD64|x32SyscallBit); got != eperm {
			t.Errorf("x32 %s: %#x, want EPERM", d.Name, got)
		}
	}
	// read, write, openat, clone, execve, getpid run.
	for _, nr := range []uint32{0, 1, 257, 56, 59, 39} {
		if got := verdict(auditArchX8664, nr); got != seccompRetAllow {
			t.Errorf("amd64 syscall %d: %#x, want allow", nr, got)
		}
	}
	for _, nr := range []uint32{63, 64, 56, 220, 221, 172} {
		if got := verdict(auditArchAArch64, nr); got != seccompRetAllow {
			t.Errorf("arm64 syscall %d: %#x, want allow", nr, got)
		}
	}
	// i386 (int 0x80 on x86-64) and arm32 compat: numbers differ, all denied.
	for _, arch := range []uint32{0x40000003, 0x40000028} {
		if got := verdict(arch, 20); got != eperm {
			t.Errorf("arch %#x: %#x, want EPERM", arch, got)
		}
	}
}
