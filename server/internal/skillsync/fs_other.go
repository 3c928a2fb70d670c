//go:build !linux

package skillsync

import (
	"os"
	"syscall"
)

// exchange swaps the folders at a and b with two renames (no atomic
// exchange here): b is missing between them, never half-written.
func exchange(a, b string) error { return exchangeByRenames(a, b) }

// flush makes the staged files durable before they are swapped in.
func flush(_ string, files []string) error { return fsyncAll(files) }

// lockFile takes an exclusive lock on the open file f without waiting.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
