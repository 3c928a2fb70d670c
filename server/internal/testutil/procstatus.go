package testutil

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ProcStatus reads a size field of /proc/PID/status (VmRSS, RssAnon,
// RssFile, VmHWM …) in bytes. The test is skipped where /proc or the field
// does not exist: the numbers are Linux's.
func ProcStatus(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Skipf("no /proc status on this platform: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("/proc/%d/status: %s is %q, expected a size in kB", pid, field, strings.TrimSpace(rest))
			}
			return kb << 10
		}
	}
	tb.Skipf("/proc/%d/status reports no %s", pid, field)
	return 0
}

// SelfRSS is this process's resident set size in bytes after a collection
// that returns freed memory to the OS, so only live data is counted.
func SelfRSS(tb testing.TB) int64 {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	return ProcStatus(tb, os.Getpid(), "VmRSS")
}

// SettledRSS polls another process's resident size (VmRSS, bytes) until
// two readings a second apart differ by less than 1 %, for at most 15 s:
// the process cannot be asked to collect, and its scavenger returns freed
// memory over seconds.
func SettledRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	last := ProcStatus(tb, pid, "VmRSS")
	for range 15 {
		time.Sleep(time.Second)
		cur := ProcStatus(tb, pid, "VmRSS")
		if diff := cur - last; diff*100 < last && -diff*100 < last {
			return cur
		}
		last = cur
	}
	return last
}
