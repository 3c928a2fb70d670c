//go:build linux

package skillsync

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the folders at a and b in one rename (renameat2
// RENAME_EXCHANGE): b is never missing, not even for an instant. File
// systems without it get the two renames of exchangeByRenames.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return exchangeByRenames(a, b)
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}

// flush makes the staged files durable before they are swapped in: an
// fsync per file for a few, else one syncfs of the target's file system
// (which also waits for everything else written to it).
func flush(target string, files []string) error {
	if len(files) <= flushEach {
		return fsyncAll(files)
	}
	f, err := os.Open(target)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// lockFile takes an exclusive lock on the open file f without waiting.
func lockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}
