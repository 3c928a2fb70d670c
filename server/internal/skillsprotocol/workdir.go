package skillsprotocol

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Work folders the runtime creates itself (Options.WorkDir empty) are
// removed by Close. A server killed before it could close (SIGKILL, a
// crash, the OOM killer) leaves its folder behind, and over weeks of
// restarts the temp folder fills with them. So each such folder holds a
// lock file that its server keeps flock'ed while it lives (the kernel
// releases the lock when the process dies, however it dies), and a
// server creating its folder first removes the others whose lock nobody
// holds.
const (
	workPrefix   = "skills-protocol-"
	workLockFile = ".lock"
	// workSweepMinAge spares a folder another server has just created and
	// not yet locked.
	workSweepMinAge = time.Minute
	// workSweepUnlockedAge is how old a folder without a lock file (made
	// by a server from before the lock) must be to count as left behind.
	workSweepUnlockedAge = 24 * time.Hour
)

// lockWorkDir creates dir's lock file and holds an exclusive flock on it
// until the returned file is closed or the process ends.
func lockWorkDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, workLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("skillsprotocol: work dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("skillsprotocol: work dir lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// sweepWorkDirs removes the work folders under parent that servers of
// this user left behind: their lock is free (or, for folders from before
// the lock, they are older than workSweepUnlockedAge). It returns how
// many it removed; what it cannot remove is logged and left.
func sweepWorkDirs(parent string, now time.Time, log *slog.Logger) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workPrefix) {
			continue // a symlink is not a folder here: never followed
		}
		dir := filepath.Join(parent, e.Name())
		info, err := os.Lstat(dir)
		if err != nil || !info.IsDir() || now.Sub(info.ModTime()) < workSweepMinAge {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue // another user's server
		}
		if !leftBehind(dir, info, now) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("skills protocol: cannot remove the work folder of a server that is gone", "dir", dir, "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		log.Info("skills protocol: removed work folders left by servers that are gone", "folders", removed, "in", parent)
	}
	return removed
}

// leftBehind reports whether no live server holds work folder dir.
func leftBehind(dir string, info fs.FileInfo, now time.Time) bool {
	f, err := os.OpenFile(filepath.Join(dir, workLockFile), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return now.Sub(info.ModTime()) >= workSweepUnlockedAge
	}
	if err != nil {
		return false
	}
	defer f.Close()
	// Taking the lock proves its holder is gone; it is dropped with the
	// file, just before the folder goes.
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
