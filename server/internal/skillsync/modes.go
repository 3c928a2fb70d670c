package skillsync

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Frozen writes exactly what the lock says for the skills it has from
// opts.SourceURL, into the lock's targets, and fails (in the Report),
// naming the skill and the file, wherever the registry's content differs
// from the lock. The lock is not rewritten.
func Frozen(ctx context.Context, opts Options) (*Report, error) {
	r, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	defer r.release()
	url := opts.SourceURL
	src := r.lock.Sources[url]
	if src == nil {
		return nil, fmt.Errorf("the lock %s has no skills from %s (its sources: %s): run skills sync without --frozen first", opts.LockPath, url, strings.Join(sortedKeys(r.lock.Sources), ", "))
	}
	if !r.selectionMatches(url, opts.Selection) {
		return r.rep, nil
	}
	policy := r.lock.YankPolicy
	if opts.YankPolicy != "" {
		policy = opts.YankPolicy
	}
	var jobs []*job
	for _, name := range sortedKeys(r.lock.Skills) {
		e := r.lock.Skills[name]
		if e.Source != url {
			continue
		}
		l, path, ok, err := r.readLocked(ctx, e)
		if err != nil {
			return nil, err
		}
		if !ok {
			r.rep.problem(Problem{Skill: name, Msg: fmt.Sprintf("the registry no longer serves %s, the version the lock has", path)})
			continue
		}
		if !r.sameAsLock(name, e, l) {
			continue
		}
		if l.Meta.Yanked != "" {
			if policy == YankRemove {
				r.rep.problem(Problem{Skill: name, Msg: fmt.Sprintf("%s is yanked (%s) and the lock's yank_policy is remove: update the lock with skills sync", path, l.Meta.Yanked)})
				continue
			}
			r.rep.note("%s: %s is yanked (%s); written as the lock says", name, path, l.Meta.Yanked)
		}
		next := e.hexFiles()
		j := &job{name: name, listed: l, folders: map[string]*plannedFolder{}}
		blocked := false
		for _, enc := range e.Targets {
			t, err := r.lockTarget(enc)
			if err == nil {
				r.target(t)
				err = t.checkLinks()
			}
			var pf *plannedFolder
			if err == nil {
				pf, err = planFolder(filepath.Join(t.Path, name), r.opts.cache, next, next)
			}
			if err != nil {
				r.rep.problem(Problem{Skill: name, Target: enc, Msg: unwrapPath(err).Error()})
				blocked = true
				continue
			}
			if len(pf.conflicts) > 0 && !opts.Force {
				for _, c := range pf.conflicts {
					r.rep.problem(Problem{Skill: name, Target: enc, File: c.File, Msg: c.Reason + "; not overwritten unless --force is given"})
				}
				blocked = true
				continue
			}
			if !pf.matches(next) {
				j.folders[t.Path] = pf
			}
		}
		switch {
		case blocked:
		case len(j.folders) == 0:
			r.rep.Unchanged++
		default:
			jobs = append(jobs, j)
		}
	}
	r.write(ctx, jobs)
	r.rep.sortProblems()
	return r.rep, nil
}

// selectionMatches checks that the lock was made for the selection the
// run names (a run that names none takes the lock's).
func (r *run) selectionMatches(url string, sel Selection) bool {
	if len(sel.Selectors) == 0 {
		return true
	}
	src := r.lock.Sources[url]
	got := sel.Strings()
	if src != nil && slices.Equal(got, src.Selectors) {
		return true
	}
	had := "nothing"
	if src != nil {
		had = "[" + strings.Join(src.Selectors, " ") + "]"
	}
	r.rep.problem(Problem{Msg: fmt.Sprintf("the lock was made for the selectors %s of %s, and this run names [%s]: run skills sync without --frozen or --check to update it", had, url, strings.Join(got, " "))})
	return false
}

// readLocked reads what a lock entry names: its version, else its digest,
// else its label, else the served skill.
func (r *run) readLocked(ctx context.Context, e *LockedSkill) (Listed, string, bool, error) {
	src := r.opts.Source
	switch {
	case e.Version > 0:
		path := e.ID + "@" + strconv.Itoa(e.Version)
		l, ok, err := src.Get(ctx, path)
		return l, path, ok, err
	case e.SHA256 != "":
		path := e.ID + "@sha256:" + e.SHA256
		l, ok, err := getPinned(ctx, src, e.ID, "sha256:"+e.SHA256)
		if ok || err != nil {
			return l, path, ok, err
		}
	case e.Label != "":
		path := e.ID + "@" + e.Label
		l, ok, err := src.Get(ctx, path)
		return l, path, ok, err
	}
	l, ok, err := src.Get(ctx, e.ID)
	return l, e.ID, ok, err
}

// sameAsLock compares what the registry serves with the lock's files,
// naming every file that differs.
func (r *run) sameAsLock(name string, e *LockedSkill, l Listed) bool {
	same := true
	served := map[string]bool{}
	for _, f := range l.Files {
		served[f.Path] = true
		want, ok := e.Files[f.Path]
		switch {
		case !ok:
			r.rep.problem(Problem{Skill: name, File: f.Path, Msg: fmt.Sprintf("the registry's %s has this file and the lock does not", l.Path)})
			same = false
		case want != "sha256:"+f.SHA256:
			r.rep.problem(Problem{Skill: name, File: f.Path, Msg: fmt.Sprintf("the registry serves sha256 %s for %s, the lock says %s", f.SHA256, l.Path, strings.TrimPrefix(want, "sha256:"))})
			same = false
		}
	}
	for _, p := range sortedKeys(e.Files) {
		if !served[p] {
			r.rep.problem(Problem{Skill: name, File: p, Msg: fmt.Sprintf("the lock has this file and the registry's %s does not", l.Path)})
			same = false
		}
	}
	if same {
		if err := checkListed(l); err != nil {
			r.rep.problem(Problem{Skill: name, Msg: err.Error()})
			return false
		}
	}
	return same
}

// Check compares every folder the lock names with the lock, without the
// registry: a missing folder or file, a file changed since the sync, a
// link where a folder was written. With a selection (and its source) or
// targets in opts it also checks that the lock was made for them.
func Check(opts Options) (*Report, error) {
	r, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	if r.lockBytes == nil {
		return nil, fmt.Errorf("there is no lock at %s to check against: run skills sync first (or name the lock with --lock)", r.opts.LockPath)
	}
	if opts.SourceURL != "" {
		r.selectionMatches(opts.SourceURL, opts.Selection)
	}
	var runTargets []string
	for _, t := range opts.Targets {
		runTargets = append(runTargets, r.paths.encode(t.Path))
	}
	sort.Strings(runTargets)
	for _, name := range sortedKeys(r.lock.Skills) {
		e := r.lock.Skills[name]
		if len(runTargets) > 0 && (opts.SourceURL == "" || e.Source == opts.SourceURL) && !slices.Equal(runTargets, e.Targets) {
			r.rep.problem(Problem{Skill: name, Msg: fmt.Sprintf("the lock has it in [%s], and this run names [%s]: run skills sync to update the lock",
				strings.Join(e.Targets, " "), strings.Join(runTargets, " "))})
		}
		inSync := true
		for _, enc := range e.Targets {
			if !r.checkFolder(name, e, enc) {
				inSync = false
			}
		}
		if inSync {
			r.rep.Unchanged++
		}
	}
	r.rep.sortProblems()
	return r.rep, nil
}

// checkFolder compares one skill folder with its lock entry.
func (r *run) checkFolder(name string, e *LockedSkill, enc string) bool {
	t, err := r.lockTarget(enc)
	if err == nil {
		err = t.checkLinks()
	}
	var entries map[string]diskEntry
	exists := false
	if err == nil {
		entries, exists, err = scanFolder(filepath.Join(t.Path, name), nil, func(rel string) bool { return e.Files[rel] != "" })
	}
	if err != nil {
		r.rep.problem(Problem{Skill: name, Target: enc, Msg: unwrapPath(err).Error()})
		return false
	}
	if !exists {
		r.rep.problem(Problem{Skill: name, Target: enc, Msg: "the skill folder is missing: run skills sync (or skills sync --frozen) to write it"})
		return false
	}
	ok := true
	for _, p := range sortedKeys(e.Files) {
		d := e.digest(p)
		got, there := entries[p]
		switch {
		case !there:
			r.rep.problem(Problem{Skill: name, Target: enc, File: p, Msg: "missing"})
		case got.kind != kindFile:
			r.rep.problem(Problem{Skill: name, Target: enc, File: p, Msg: fmt.Sprintf("is %s; the sync wrote a file", got.kind)})
		case got.sha256 != d:
			r.rep.problem(Problem{Skill: name, Target: enc, File: p, Msg: fmt.Sprintf("changed since the sync: sha256 %s, the lock says %s", got.sha256, d)})
		default:
			continue
		}
		ok = false
	}
	return ok
}
