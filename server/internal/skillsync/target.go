package skillsync

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Target is a folder skills are written into (an agent's skills folder).
type Target struct {
	// Path is the folder, absolute.
	Path string
	// Base, when set, is the folder Path was derived from (the project's
	// root, the home folder): no folder between them may be a symbolic
	// link either.
	Base string
}

// target is a Target while a run writes into it: its staging folder is
// made and locked against other runs on first use.
type target struct {
	Target
	staging string
	lock    *os.File
	err     error // why it cannot be written (set once)
	ready   bool
}

// checkLinks refuses a target that is, or lies under, a symbolic link
// (between Base and Path).
func (t Target) checkLinks() error {
	p := t.Path
	for {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			dest, _ := os.Readlink(p)
			return &SymlinkError{Path: p, Dest: dest}
		}
		if err == nil && p == t.Path && !fi.IsDir() {
			return fmt.Errorf("target %s is %s, not a folder", p, kindOf(fi.Mode()))
		}
		parent := filepath.Dir(p)
		if t.Base == "" || p == t.Base || parent == p || !strings.HasPrefix(parent, t.Base) {
			return nil
		}
		p = parent
	}
}

// prepare makes the target and its staging folder, takes the run's lock
// on it and puts back or clears what a run that stopped half-way left.
func (t *target) prepare() error {
	if t.ready || t.err != nil {
		return t.err
	}
	t.err = t.doPrepare()
	t.ready = t.err == nil
	return t.err
}

func (t *target) doPrepare() error {
	if err := t.checkLinks(); err != nil {
		return err
	}
	if err := os.MkdirAll(t.Path, 0o755); err != nil {
		return fmt.Errorf("cannot write into target %s: %w", t.Path, unwrapPath(err))
	}
	t.staging = filepath.Join(t.Path, stagingDir)
	if err := os.Mkdir(t.staging, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot write into target %s: %w", t.Path, unwrapPath(err))
	}
	if fi, err := os.Lstat(t.staging); err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is not the folder skills sync stages into (a link or a file of the same name?): move it away", t.staging)
	}
	f, err := os.OpenFile(filepath.Join(t.staging, ".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write into target %s: %w", t.Path, unwrapPath(err))
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return fmt.Errorf("another skills sync is writing into %s right now (%s is locked); try again when it is done", t.Path, f.Name())
	}
	t.lock = f
	t.recover()
	return nil
}

// recover puts back a folder that a run stopped between two renames left
// aside, and removes every other staged leftover.
func (t *target) recover() {
	entries, _ := os.ReadDir(t.staging)
	for _, e := range entries {
		name := e.Name()
		if name == ".lock" {
			continue
		}
		p := filepath.Join(t.staging, name)
		if skill, _, ok := strings.Cut(name, ".aside-"); ok && checkName(skill) == nil {
			if _, err := os.Lstat(filepath.Join(t.Path, skill)); errors.Is(err, fs.ErrNotExist) && os.Rename(p, filepath.Join(t.Path, skill)) == nil {
				continue
			}
		}
		_ = os.RemoveAll(p)
	}
}

// release unlocks the target and removes its staging folder.
func (t *target) release() {
	if t.lock == nil {
		return
	}
	_ = os.Remove(t.lock.Name())
	_ = t.lock.Close()
	t.lock = nil
	_ = os.Remove(t.staging) // only when empty
	t.ready = false
}

// unwrapPath drops the path of an *fs.PathError the message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, pe.Path, pe.Err)
	}
	return err
}
