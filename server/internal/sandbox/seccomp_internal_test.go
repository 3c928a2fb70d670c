package sandbox

import (
	"encoding/binary"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
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

// The hand-written numbers match golang.org/x/sys for the build's
// architecture (CI on arm64 checks the other column).
func TestDeniedSyscallNumbers(t *testing.T) {
	want := map[string]uintptr{
		"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
		"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY, "bpf": unix.SYS_BPF,
		"userfaultfd": unix.SYS_USERFAULTFD, "perf_event_open": unix.SYS_PERF_EVENT_OPEN, "mount": unix.SYS_MOUNT,
		"umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT, "open_tree": unix.SYS_OPEN_TREE, "move_mount": unix.SYS_MOVE_MOUNT,
		"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK,
		"mount_setattr": unix.SYS_MOUNT_SETATTR, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
		"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "init_module": unix.SYS_INIT_MODULE,
		"finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE, "unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS,
		"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "acct": unix.SYS_ACCT, "quotactl": unix.SYS_QUOTACTL,
		"shmget": unix.SYS_SHMGET, "memfd_create": unix.SYS_MEMFD_CREATE,
	}
	if len(want) != len(DeniedSyscalls) {
		t.Fatalf("%d names checked, %d denied", len(want), len(DeniedSyscalls))
	}
	for _, d := range DeniedSyscalls {
		got := d.AMD64
		switch runtime.GOARCH {
		case "arm64":
			got = d.ARM64
		case "amd64":
		default:
			t.Skipf("the filter has no table for %s", runtime.GOARCH)
		}
		if nr, ok := want[d.Name]; !ok || uintptr(got) != nr {
			t.Errorf("%s: %d in the table, x/sys says %d", d.Name, got, nr)
		}
	}
}
