package skillsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Options configure a run.
type Options struct {
	// Source is the registry (Open); SourceURL its URL as the lock
	// records it (ParseSourceURL). Check needs neither.
	Source    Source
	SourceURL string
	// Selection is what to sync (Sync), or what the lock must have been
	// made for (Frozen, Check; empty: whatever it was made for).
	Selection Selection
	// Targets are the folders written (Sync); Frozen and Check use the
	// lock's.
	Targets []Target
	// LockPath is the lock file (DefaultLockFile in the current folder).
	LockPath string
	// Force overwrites files edited since the last sync and files the
	// sync did not write that are in the way.
	Force bool
	// YankPolicy, when set, replaces the lock's.
	YankPolicy YankPolicy
	// Concurrency is how many skills are read at once (default 8).
	Concurrency int
	// Log gets a line for each skill written or removed (nil: none).
	Log io.Writer
	// Home is the home folder for the lock's ~/ paths (default: the
	// user's).
	Home string

	// cache keeps file digests from one round of a watch to the next.
	cache *digestCache
}

// run is one Sync, Frozen or Check.
type run struct {
	opts      Options
	rep       *Report
	lock      *Lock
	lockBytes []byte // the lock as read (nil: none), to skip rewriting it unchanged
	paths     lockPaths
	targets   map[string]*target // by path
}

func newRun(opts Options) (*run, error) {
	if opts.LockPath == "" {
		opts.LockPath = DefaultLockFile
	}
	abs, err := filepath.Abs(opts.LockPath)
	if err != nil {
		return nil, err
	}
	opts.LockPath = abs
	if opts.Home == "" {
		opts.Home, _ = os.UserHomeDir()
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	lock, raw, err := readLock(abs)
	if err != nil {
		return nil, err
	}
	// raw is what is there: a lock that encodes to it is not written again.
	return &run{opts: opts, rep: &Report{Log: opts.Log}, lock: lock, lockBytes: raw, targets: map[string]*target{},
		paths: lockPaths{base: filepath.Dir(abs), home: opts.Home}}, nil
}

// target is the run's handle on the folder at t.Path.
func (r *run) target(t Target) *target {
	if x, ok := r.targets[t.Path]; ok {
		return x
	}
	x := &target{Target: t}
	r.targets[t.Path] = x
	return x
}

func (r *run) release() {
	for _, t := range r.targets {
		t.release()
	}
}

// lockTarget is a target named in the lock, as a Target.
func (r *run) lockTarget(s string) (Target, error) {
	p, err := r.paths.decode(s)
	if err != nil {
		return Target{}, err
	}
	base := r.paths.base
	if strings.HasPrefix(s, "~/") {
		base = r.paths.home
	} else if filepath.IsAbs(s) {
		base = ""
	}
	return Target{Path: p, Base: base}, nil
}

// job is one skill to write into some targets.
type job struct {
	name    string
	listed  Listed
	entry   *LockedSkill              // what the lock says once written
	folders map[string]*plannedFolder // target path → its folder's plan
	stages  map[string]*staged
	failed  bool
}

// Sync brings the targets to the selection's skills and records them in
// the lock. The error is for a run that could not start or could not read
// the registry; everything else is in the Report.
func Sync(ctx context.Context, opts Options) (*Report, error) {
	r, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	defer r.release()
	url := opts.SourceURL
	if opts.YankPolicy != "" {
		r.lock.YankPolicy = opts.YankPolicy
	}
	res, err := resolve(ctx, opts.Source, opts.Selection, r.lock, url, r.lock.YankPolicy, r.rep)
	if err != nil {
		return nil, err
	}
	old := make(map[string]*LockedSkill, len(r.lock.Skills))
	for name, e := range r.lock.Skills {
		old[name] = e
	}
	r.lock.Sources[url] = &LockSource{Selectors: opts.Selection.Strings(), QueryLimit: queryLimitOf(opts.Selection)}
	runTargets := map[string]Target{}
	for _, t := range opts.Targets {
		runTargets[r.paths.encode(t.Path)] = t
	}

	// What the lock has that the run no longer selects, or no longer
	// writes there: removed where the sync wrote it.
	for _, name := range sortedKeys(old) {
		e := old[name]
		if e.Source != url || res.hold[name] {
			continue
		}
		_, wanted := res.wants[name]
		var gone []string
		for _, enc := range e.Targets {
			if _, ok := runTargets[enc]; !wanted || !ok {
				gone = append(gone, enc)
			}
		}
		if !r.removeFrom(name, e, gone) {
			res.hold[name] = true // its edits stay, and so does its entry
			delete(res.wants, name)
			continue
		}
		if !wanted {
			delete(r.lock.Skills, name)
		}
	}

	var jobs []*job
	for _, name := range sortedKeys(res.wants) {
		w := res.wants[name]
		j, err := r.plan(w, old[name], opts.Targets)
		if err != nil {
			return nil, err
		}
		if j != nil {
			jobs = append(jobs, j)
		}
	}
	r.write(ctx, jobs)
	r.rep.sortProblems()
	if err := r.saveLock(); err != nil {
		return r.rep, err
	}
	return r.rep, nil
}

// queryLimitOf is the limit the lock records (0 when no query ran).
func queryLimitOf(s Selection) int {
	for _, x := range s.Selectors {
		if x.Kind == SelQuery {
			return s.QueryLimit
		}
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// removeFrom removes skill name (as the lock entry e has it) from the
// targets listed (lock form). It reports false when a file edited since
// the sync kept it somewhere.
func (r *run) removeFrom(name string, e *LockedSkill, encs []string) bool {
	ok := true
	ours := e.hexFiles()
	for _, enc := range encs {
		t, err := r.lockTarget(enc)
		if err != nil {
			r.rep.problem(Problem{Skill: name, Target: enc, Msg: err.Error()})
			ok = false
			continue
		}
		dir := filepath.Join(t.Path, name)
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			continue
		}
		tg := r.target(t)
		if err := tg.prepare(); err != nil {
			r.rep.problem(Problem{Skill: name, Target: enc, Msg: err.Error()})
			ok = false
			continue
		}
		conflicts, err := removeSkill(t.Path, dir, ours, r.opts.Force)
		if err != nil {
			r.rep.problem(Problem{Skill: name, Target: enc, Msg: "remove: " + unwrapPath(err).Error()})
			ok = false
			continue
		}
		if len(conflicts) > 0 {
			for _, c := range conflicts {
				r.rep.problem(Problem{Skill: name, Target: enc, File: c.File, Msg: c.Reason + "; the skill is no longer selected, but it is kept until the edit is undone or --force is given"})
			}
			ok = false
			continue
		}
		r.rep.removed(name, enc)
	}
	return ok
}

// hexFiles is the entry's files with bare hex digests.
func (s *LockedSkill) hexFiles() map[string]string {
	out := make(map[string]string, len(s.Files))
	for p := range s.Files {
		out[p] = s.digest(p)
	}
	return out
}

// entryFor is the lock entry of a skill as read.
func entryFor(w *want, source string) *LockedSkill {
	m := w.listed.Meta
	e := &LockedSkill{Source: source, ID: w.listed.ID, Version: m.Version, Selector: w.selector, Label: w.label,
		SHA256: m.SHA256, Signature: m.Signed, SignedBy: m.SignedBy, Key: m.Key, Yanked: m.Yanked,
		Files: make(map[string]string, len(w.listed.Files))}
	for _, f := range w.listed.Files {
		e.Files[f.Path] = "sha256:" + f.SHA256
	}
	return e
}

// sameFiles reports whether two entries name the same files and digests.
func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for p, d := range a {
		if b[p] != d {
			return false
		}
	}
	return true
}

// plan compares one wanted skill with the lock entry of its name and the
// folders: nil when every target already has it (the lock entry is
// updated), else the job that writes it where it differs.
func (r *run) plan(w *want, prev *LockedSkill, targets []Target) (*job, error) {
	entry := entryFor(w, r.opts.SourceURL)
	if prev != nil && prev.ID == entry.ID && sameFiles(prev.Files, entry.Files) && entry.Version == 0 {
		entry.Version = prev.Version // the registry did not say; the content is the one recorded
	}
	next := entry.hexFiles()
	j := &job{name: w.name, listed: w.listed, entry: entry, folders: map[string]*plannedFolder{}}
	blocked := false
	for _, t := range targets {
		r.target(t)
		enc := r.paths.encode(t.Path)
		var had map[string]string
		if prev != nil && slices.Contains(prev.Targets, enc) {
			had = prev.hexFiles()
		}
		if err := t.checkLinks(); err != nil {
			r.rep.problem(Problem{Skill: w.name, Target: enc, Msg: err.Error()})
			blocked = true
			continue
		}
		pf, err := planFolder(filepath.Join(t.Path, w.name), r.opts.cache, next, had)
		if err != nil {
			r.rep.problem(Problem{Skill: w.name, Target: enc, Msg: unwrapPath(err).Error()})
			blocked = true
			continue
		}
		if len(pf.conflicts) > 0 && !r.opts.Force {
			for _, c := range pf.conflicts {
				r.rep.problem(Problem{Skill: w.name, Target: enc, File: c.File, Msg: c.Reason + "; the skill is not synced there until the edit is undone or --force is given"})
			}
			blocked = true
			continue
		}
		if pf.matches(next) {
			entry.Targets = append(entry.Targets, enc)
			continue
		}
		j.folders[t.Path] = pf
	}
	if blocked {
		return nil, nil // the old entry stays: its folders were not touched
	}
	if len(j.folders) == 0 {
		r.lock.Skills[w.name] = entry
		r.rep.mu.Lock()
		r.rep.Unchanged++
		r.rep.mu.Unlock()
		return nil, nil
	}
	return j, nil
}

// matches reports whether the folder holds exactly the skill's files
// (what the sync did not write may be there too) and none the sync wrote
// before that the skill no longer has.
func (pf *plannedFolder) matches(next map[string]string) bool {
	if !pf.exists || len(pf.conflicts) > 0 {
		return false
	}
	for p, d := range next {
		if e, ok := pf.entries[p]; !ok || e.kind != kindFile || e.sha256 != d {
			return false
		}
	}
	for p := range pf.prev {
		if _, still := next[p]; !still {
			if _, there := pf.entries[p]; there {
				return false
			}
		}
	}
	return true
}

// write reads, stages and swaps in every job, then records what was
// written in the lock. encode names a target in the lock.
func (r *run) write(ctx context.Context, jobs []*job) {
	if len(jobs) == 0 {
		return
	}
	// Targets are made and locked before anything is read: a target that
	// cannot be written stops its skills before the registry is asked.
	for _, j := range jobs {
		for path := range j.folders {
			if err := r.target(Target{Path: path}).prepare(); err != nil {
				r.rep.problem(Problem{Skill: j.name, Target: r.paths.encode(path), Msg: err.Error()})
				j.failed = true
			}
		}
	}
	work := make(chan *job)
	var wg sync.WaitGroup
	for range r.opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				r.fetchAndStage(ctx, j)
			}
		}()
	}
	for _, j := range jobs {
		if !j.failed {
			work <- j
		}
	}
	close(work)
	wg.Wait()

	// One flush per target makes every staged file durable before any
	// folder is swapped in.
	staged := map[string][]string{}
	for _, j := range jobs {
		for path, st := range j.stages {
			staged[path] = append(staged[path], st.files...)
		}
	}
	flushErr := map[string]error{}
	for path, files := range staged {
		flushErr[path] = flush(path, files)
	}
	swapped := map[string]bool{}
	defer func() {
		for path := range swapped {
			_ = syncDir(path) // the swaps themselves, durable
		}
	}()
	for _, j := range jobs {
		if j.failed {
			continue
		}
		var committed []string
		for _, path := range sortedKeys(j.stages) {
			st := j.stages[path]
			enc := r.paths.encode(path)
			err := flushErr[path]
			if err == nil {
				err = st.commit()
			} else {
				st.abandon()
			}
			if err != nil {
				r.rep.problem(Problem{Skill: j.name, Target: enc, Msg: "swap the new folder into place: " + unwrapPath(err).Error()})
				continue
			}
			committed = append(committed, enc)
			swapped[path] = true
			r.rep.written(j.name, enc, describeWant(j))
		}
		if len(committed) > 0 && j.entry != nil {
			j.entry.Targets = append(j.entry.Targets, committed...)
			r.lock.Skills[j.name] = j.entry
		}
	}
}

// describeWant says what was written, where the folder name does not:
// the id and the version.
func describeWant(j *job) string {
	var parts []string
	if j.listed.ID != j.name {
		parts = append(parts, j.listed.ID)
	}
	v := j.listed.Meta.Version
	if j.entry != nil && j.entry.Version > 0 {
		v = j.entry.Version
	}
	if v > 0 {
		parts = append(parts, fmt.Sprintf("version %d", v))
	}
	return strings.Join(parts, " ")
}

// fetchAndStage reads every file of a job's skill, checks each against
// the listed size and sha256, and stages the skill in each target.
func (r *run) fetchAndStage(ctx context.Context, j *job) {
	content := make(map[string][]byte, len(j.listed.Files))
	for _, f := range j.listed.Files {
		b, err := r.opts.Source.ReadFile(ctx, j.listed.Path, f.Path)
		if err != nil {
			r.rep.problem(Problem{Skill: j.name, File: f.Path, Msg: "read from the registry: " + err.Error()})
			j.failed = true
			return
		}
		if got := sum(b); int64(len(b)) != f.Size || got != f.SHA256 {
			r.rep.problem(Problem{Skill: j.name, File: f.Path, Msg: fmt.Sprintf("the registry sent %d bytes with sha256 %s, but listed %d bytes with sha256 %s (it changed while it was read, or it serves something else than it lists): not written",
				len(b), got, f.Size, f.SHA256)})
			j.failed = true
			return
		}
		content[f.Path] = b
	}
	if v, ok := r.opts.Source.(versioner); ok && j.entry != nil && j.entry.Version == 0 && j.listed.Origin == "published" && j.listed.Path == j.listed.ID {
		if n, err := v.ServedVersion(ctx, j.listed.ID, j.listed.skillMD()); err == nil {
			j.entry.Version = n
		}
	}
	j.stages = map[string]*staged{}
	for _, path := range sortedKeys(j.folders) {
		st, err := stage(path, j.name, j.folders[path], content)
		if err != nil {
			r.rep.problem(Problem{Skill: j.name, Target: r.paths.encode(path), Msg: "write: " + unwrapPath(err).Error()})
			for _, s := range j.stages {
				s.abandon()
			}
			j.stages = nil
			j.failed = true
			return
		}
		j.stages[path] = st
	}
}

// skillMD is the listed digest of SKILL.md.
func (l Listed) skillMD() string {
	for _, f := range l.Files {
		if f.Path == SkillFile {
			return f.SHA256
		}
	}
	return ""
}

// saveLock writes the lock when it changed.
func (r *run) saveLock() error {
	b := r.lock.Encode()
	if r.lockBytes != nil && bytes.Equal(b, r.lockBytes) {
		return nil
	}
	if err := WriteLock(r.opts.LockPath, r.lock); err != nil {
		return err
	}
	r.rep.LockWritten = true
	return nil
}
