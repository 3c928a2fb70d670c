package fsource

// Rescans: what to drop and scan again when a path changes.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// rescan drops everything found at or under scope and scans it again. It
// returns the keys (skill ids, promptKey(name)) whose units changed.
func (f *folder) rescan(scope string) map[string]struct{} {
	touched := map[string]struct{}{}
	for p, u := range f.units {
		if within(p, scope) {
			k := mapKey(u)
			touched[k] = struct{}{}
			f.byKey[k] = slices.DeleteFunc(f.byKey[k], func(x *unit) bool { return x == u })
			if len(f.byKey[k]) == 0 {
				delete(f.byKey, k)
			}
			delete(f.units, p)
		}
	}
	for p := range f.problems {
		if within(p, scope) {
			delete(f.problems, p)
		}
	}
	for p := range f.warnings {
		if within(p, scope) {
			delete(f.warnings, p)
		}
	}
	if scope == "" || f.fsRoot.Load() == nil {
		f.openRoot()
	}
	if f.fsRoot.Load() != nil {
		f.walk(scope)
		f.runJobs()
	}
	for p, u := range f.units {
		if within(p, scope) {
			touched[mapKey(u)] = struct{}{}
		}
	}
	return touched
}

// openRoot (re)opens the folder; a missing folder is a problem, not an error.
func (f *folder) openRoot() {
	r, err := os.OpenRoot(f.root)
	if err != nil {
		f.fsRoot.Store(nil)
		f.exists = false
		if errors.Is(err, fs.ErrNotExist) {
			f.problems[""] = msgFolderMissing
		} else {
			f.problems[""] = fmt.Sprintf(fmtUnreadable, err)
		}
		return
	}
	f.fsRoot.Store(r)
	f.exists = true
	f.watch(f.root)
}

// scopeFor maps a changed path to the scope to rescan: the enclosing
// skill folder or bundle when there is one (on disk or known), else the
// path itself.
func (f *folder) scopeFor(rel string) string {
	if rel == "" {
		return ""
	}
	r := f.fsRoot.Load()
	parts := strings.Split(rel, "/")
	if b := parts[len(parts)-1]; (isSkillFileName(b) || b == BundleManifest) && len(parts) > 1 {
		parts = parts[:len(parts)-1]
		// SKILL.md or skill.toml appeared or went: the folder changes kind,
		// unless an outer skill folder holds it.
		scope := strings.Join(parts, "/")
		if outer := f.enclosing(parts[:len(parts)-1], r); outer != "" {
			return outer
		}
		return scope
	}
	if outer := f.enclosing(parts, r); outer != "" {
		return outer
	}
	return rel
}

// enclosing returns the outermost ancestor (a prefix of parts, at least
// one component) that is a skill folder or bundle, known or on disk (a
// skill file in another letter case than SKILL.md and skill.md is found
// once scanned).
func (f *folder) enclosing(parts []string, r *os.Root) string {
	for i := 1; i <= len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if u := f.units[dir]; u != nil && (u.kind == unitSkillDir || u.kind == unitBundle) {
			return dir
		}
		if r == nil {
			continue
		}
		for _, marker := range []string{BundleManifest, SkillFile, "skill.md"} {
			if fi, err := r.Stat(dir + "/" + marker); err == nil && !fi.IsDir() {
				return dir
			}
		}
	}
	return ""
}
