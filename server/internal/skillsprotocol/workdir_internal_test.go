package skillsprotocol

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Work folders left by servers that are gone are removed; folders of live
// servers, young folders, other folders and folders without a lock that
// are not yet a day old stay.
func TestSweepWorkDirs(t *testing.T) {
	parent := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * workSweepMinAge)
	mk := func(name string, mtime time.Time, lock bool) string {
		t.Helper()
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(dir, "run-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(dir, workLockFile), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(dir, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// A server that died (however: the kernel drops a dead process's
	// flock) left its folder with a lock file nobody holds.
	gone := mk(workPrefix+"gone", old, true)
	live := mk(workPrefix+"live", old, true)
	lock, err := lockWorkDir(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	_ = os.Chtimes(live, old, old)
	young := mk(workPrefix+"young", now, true)
	legacyDay := mk(workPrefix+"legacy-old", now.Add(-2*workSweepUnlockedAge), false)
	legacyHour := mk(workPrefix+"legacy-young", now.Add(-time.Hour), false)
	other := mk("other-program", old, true)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if n := sweepWorkDirs(parent, now, quiet); n != 2 {
		t.Errorf("removed %d folders; want 2 (gone, legacy-old)", n)
	}
	for dir, want := range map[string]bool{gone: false, legacyDay: false,
		live: true, young: true, legacyHour: true, other: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s exists: %v; want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
