package fsource

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
)

var quote = rules.RustQuote

// DefaultDebounce is how long the watcher gathers file events before it
// rescans: an editor's atomic save (write a temporary file, rename it over
// the original) arrives as one change.
const DefaultDebounce = 20 * time.Millisecond

// DefaultMaxWait bounds the debounce: the watcher rescans at most this
// long after the first pending event, even when events keep arriving (a
// file rewritten every few milliseconds would otherwise postpone every
// rescan, and changes must be visible within 200 ms).
const DefaultMaxWait = 100 * time.Millisecond

// Options configure a Set.
type Options struct {
	// Folders in precedence order (the earlier wins). Relative paths are
	// resolved against Dir.
	Folders []string
	// Dir resolves relative folders; empty means the working directory.
	Dir string
	// Catalog receives one source per folder, "folder:<absolute path>" at
	// rank catalog.RankFolder+i. Required.
	Catalog *catalog.Catalog
	Logger  *slog.Logger
	// Watch keeps the folders current with fsnotify.
	Watch bool
	// Debounce overrides DefaultDebounce.
	Debounce time.Duration
	// MaxWait overrides DefaultMaxWait: the longest a pending event waits
	// for its rescan however many events follow it.
	MaxWait time.Duration
	// Bundle reads Skills Protocol bundles; without it they are skipped
	// and listed by Problems.
	Bundle BundleReader
	// BundleWarning, when set, is asked about every bundle Bundle
	// accepted: a non-empty message is listed by Warnings (the bundle is
	// served all the same), e.g. a secret it asks for that no grant gives.
	BundleWarning func(e *catalog.Entry) string
}

// Kinds of Event.
const (
	KindSkill  = "skill"
	KindPrompt = "prompt"
)

// Event is a change of what the folders serve at one skill id or prompt
// name, after precedence between folders (a change hidden by an earlier
// folder is no event).
type Event struct {
	Kind string // KindSkill or KindPrompt
	Op   catalog.Op
	// Key is the skill id or the prompt name.
	Key string
	// Folder and Path locate the new file (or the removed one).
	Folder string
	Path   string
	Skill  *catalog.Entry // new skill (nil on remove or for prompts)
	Prompt *Prompt        // new prompt (nil on remove or for skills)
}

// Problem is a file (or folder) that is not served, and why.
type Problem struct {
	// Folder is the absolute folder root; Path the file relative to it
	// ("" for the folder itself); File the absolute path.
	Folder string
	Path   string
	File   string
	Reason string
}

// FolderInfo describes one configured folder.
type FolderInfo struct {
	Configured string
	Root       string
	Source     string // catalog source name
	Exists     bool
	Skills     int
	Prompts    int
	Problems   int
}

// Set is the configured skills folders: it scans them, feeds the catalog,
// keeps prompts, and reports problems and changes.
type Set struct {
	opts    Options
	log     *slog.Logger
	folders []*folder

	writeMu sync.Mutex   // one scan at a time; events leave in order
	mu      sync.RWMutex // guards folder state for readers
	gen     uint64
	skills  *skillSnap
	prompts *promptSnap

	subMu sync.Mutex
	subs  []*func([]Event)

	watcher *fsnotify.Watcher
	watchMu sync.Mutex // watch runs on the loaders' goroutines
	watched map[string]bool
	stop    chan struct{}
	done    chan struct{}
}

type skillSnap struct {
	gen     uint64
	entries []*catalog.Entry
}

type promptSnap struct {
	gen     uint64
	prompts []*Prompt
}

// SourceName is the catalog source name of a folder root.
func SourceName(root string) string { return "folder:" + root }

// Open resolves the folders, adds their catalog sources, scans them once
// and, with Watch, starts watching. A folder that does not exist is not
// an error: it is listed by Problems and picked up when it appears.
func Open(opts Options) (*Set, error) {
	if opts.Catalog == nil {
		return nil, errors.New("fsource: Options.Catalog is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	base := opts.Dir
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("fsource: working directory: %w", err)
		}
		base = wd
	}
	s := &Set{opts: opts, log: opts.Logger, watched: map[string]bool{}}
	if opts.Watch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("fsource: start watching: %w", err)
		}
		s.watcher = w
	}
	seen := map[string]bool{}
	for _, configured := range opts.Folders {
		if strings.TrimSpace(configured) == "" {
			continue
		}
		root := configured
		if !filepath.IsAbs(root) {
			root = filepath.Join(base, root)
		}
		root = filepath.Clean(root)
		if seen[root] {
			s.log.Warn("skills folder listed twice; the later entry is ignored", "folder", root)
			continue
		}
		seen[root] = true
		src, err := opts.Catalog.AddSource(SourceName(root), catalog.RankFolder+len(s.folders))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("fsource: %w", err)
		}
		s.folders = append(s.folders, newFolder(configured, root, len(s.folders), src, opts.Bundle, s.watch))
		s.folders[len(s.folders)-1].bundleWarning = opts.BundleWarning
	}
	s.writeMu.Lock()
	var events []Event
	for _, f := range s.folders {
		s.watchParent(f)
		events = append(events, s.scan(f, "")...)
		info := s.folderInfo(f)
		s.log.Info("skills folder loaded", "folder", f.root, "shown_as", catalog.DisplayRoot(f.root), "skills", info.Skills, "prompts", info.Prompts, "skipped", info.Problems)
	}
	s.writeMu.Unlock()
	_ = events // nobody can be subscribed yet
	if s.watcher != nil {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.run()
	}
	return s, nil
}

// Close stops watching and removes the folders' catalog sources.
func (s *Set) Close() {
	if s.watcher != nil {
		if s.stop != nil {
			close(s.stop)
			<-s.done
			s.stop = nil
		}
		_ = s.watcher.Close()
	}
	for _, f := range s.folders {
		s.opts.Catalog.RemoveSource(f.src.Name())
	}
}

// watch adds an fsnotify watch on a directory (once).
func (s *Set) watch(abs string) {
	if s.watcher == nil {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watched[abs] {
		return
	}
	if err := s.watcher.Add(abs); err != nil {
		s.log.Warn("cannot watch folder; changes under it are seen on the next rescan", "dir", abs, "err", err)
		return
	}
	s.watched[abs] = true
}

// watchParent watches the folder's parent, so the folder itself appearing,
// disappearing or being replaced is seen.
func (s *Set) watchParent(f *folder) {
	if s.watcher == nil {
		return
	}
	parent := filepath.Dir(f.root)
	if parent != f.root {
		if _, err := os.Stat(parent); err == nil {
			s.watch(parent)
		}
	}
}

// scan rescans scope of f and applies the result; called with writeMu held.
func (s *Set) scan(f *folder, scope string) []Event {
	s.mu.Lock()
	oldProblems := map[string]string{}
	for p, r := range f.problems {
		if within(p, scope) {
			oldProblems[p] = r
		}
	}
	oldWarnings := map[string]bool{}
	for p, rs := range f.warnings {
		if within(p, scope) {
			for _, r := range rs {
				oldWarnings[p+"\x00"+r] = true
			}
		}
	}
	touched := f.rescan(scope)
	events := s.apply(f, touched)
	var fresh, freshWarnings []Problem
	for p, r := range f.problems {
		if within(p, scope) && oldProblems[p] != r {
			fresh = append(fresh, Problem{Folder: f.root, Path: p, File: f.abs(p), Reason: r})
		}
	}
	for p, rs := range f.warnings {
		for _, r := range rs {
			if within(p, scope) && !oldWarnings[p+"\x00"+r] {
				freshWarnings = append(freshWarnings, Problem{Folder: f.root, Path: p, File: f.abs(p), Reason: r})
			}
		}
	}
	s.mu.Unlock()
	byPath := func(a, b Problem) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(fresh, byPath)
	for _, p := range fresh {
		s.log.Warn("skipped fs entry", "file", p.File, "reason", p.Reason)
	}
	// Served, but worth fixing: logged once per new caveat.
	slices.SortStableFunc(freshWarnings, byPath)
	for _, p := range freshWarnings {
		s.log.Warn("served fs entry with a warning", "file", p.File, "reason", p.Reason)
	}
	return events
}

// apply pushes the touched keys' best units into the folder's served
// maps and catalog source, and returns the events, after precedence
// between folders. Called with s.mu held.
func (s *Set) apply(f *folder, touched map[string]struct{}) []Event {
	keys := make([]string, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type before struct {
		skill  *catalog.Entry
		prompt *Prompt
	}
	prev := map[string]before{}
	for _, k := range keys {
		if isPromptKey(k) {
			prev[k] = before{prompt: s.mergedPrompt(k[1:])}
		} else {
			id, _ := splitSkillKey(k)
			prev[k] = before{skill: s.mergedSkill(id)}
		}
	}
	var puts []*catalog.Entry
	type idVersion struct{ id, version string }
	var removes []idVersion
	for _, k := range keys {
		us := f.byKey[k]
		b := best(us)
		for _, u := range us {
			switch {
			case u == b:
				if strings.HasPrefix(f.problems[u.path], "duplicate ") {
					delete(f.problems, u.path)
				}
			case u.kind == unitPrompt:
				f.problems[u.path] = fmt.Sprintf(fmtDuplicateName, quote(u.prompt.Name), b.path)
			default:
				f.problems[u.path] = fmt.Sprintf(fmtDuplicateID, quote(u.entry.ID), b.path)
			}
		}
		if isPromptKey(k) {
			name := k[1:]
			if b == nil {
				delete(f.prompts, name)
			} else {
				f.prompts[name] = b.prompt
			}
			continue
		}
		id, version := splitSkillKey(k)
		vs := f.skills[id]
		i := slices.IndexFunc(vs, func(e *catalog.Entry) bool { return e.Version == version })
		switch {
		case b == nil && i >= 0:
			vs = slices.Delete(slices.Clone(vs), i, i+1)
			removes = append(removes, idVersion{id, version})
		case b != nil && i >= 0 && vs[i] != b.entry:
			vs = slices.Clone(vs)
			vs[i] = b.entry
			puts = append(puts, b.entry)
		case b != nil && i < 0:
			vs = append(slices.Clone(vs), b.entry)
			slices.SortFunc(vs, func(x, y *catalog.Entry) int { return catalog.CompareVersions(x.Version, y.Version) })
			puts = append(puts, b.entry)
		}
		if len(vs) == 0 {
			delete(f.skills, id)
		} else {
			f.skills[id] = vs
		}
	}
	if len(puts) > 0 {
		if err := f.src.Put(puts...); err != nil {
			// Entries were checked when loaded; this cannot happen unless a
			// bundle reader changed one after its check.
			s.log.Error("catalog refused folder skills", "folder", f.root, "err", err)
		}
	}
	for _, r := range removes {
		f.src.RemoveVersion(r.id, r.version)
	}
	var events []Event
	seen := map[string]bool{}
	for _, k := range keys {
		if isPromptKey(k) {
			name := k[1:]
			old, cur := prev[k].prompt, s.mergedPrompt(name)
			if old == cur {
				continue
			}
			ev := Event{Kind: KindPrompt, Key: name, Op: catalog.OpPut, Prompt: cur}
			if cur == nil {
				ev.Op, ev.Folder, ev.Path = catalog.OpRemove, old.Folder, old.Path
			} else {
				ev.Folder, ev.Path = cur.Folder, cur.Path
			}
			events = append(events, ev)
			continue
		}
		id, _ := splitSkillKey(k)
		if seen[id] {
			continue
		}
		seen[id] = true
		old, cur := prev[k].skill, s.mergedSkill(id)
		if old == cur {
			continue
		}
		ev := Event{Kind: KindSkill, Key: id, Op: catalog.OpPut, Skill: cur}
		if cur == nil {
			ev.Op, ev.Folder, ev.Path = catalog.OpRemove, old.Origin.Source, old.Origin.Path
		} else {
			ev.Folder, ev.Path = cur.Origin.Source, cur.Origin.Path
		}
		events = append(events, ev)
	}
	if len(events) > 0 || len(touched) > 0 {
		s.gen++
	}
	return events
}

// mergedSkill is what the folders serve at id: the first folder holding
// it, its highest version. Called with s.mu held.
func (s *Set) mergedSkill(id string) *catalog.Entry {
	for _, f := range s.folders {
		if vs := f.skills[id]; len(vs) > 0 {
			return vs[len(vs)-1]
		}
	}
	return nil
}

// mergedPrompt is what the folders serve as prompt name: the first
// folder holding it, except that a prompt a download wrote loses to the
// operator's in any folder. Called with s.mu held.
func (s *Set) mergedPrompt(name string) *Prompt {
	var downloaded *Prompt
	for _, f := range s.folders {
		if p := f.prompts[name]; p != nil {
			if !p.Downloaded {
				return p
			}
			if downloaded == nil {
				downloaded = p
			}
		}
	}
	return downloaded
}

// Subscribe calls fn with the events of each scan, in order, from the
// scanning goroutine: fn must hand slow work off. The returned function
// stops delivery.
func (s *Set) Subscribe(fn func([]Event)) (cancel func()) {
	p := &fn
	s.subMu.Lock()
	s.subs = append(slices.Clip(s.subs), p)
	s.subMu.Unlock()
	return func() {
		s.subMu.Lock()
		s.subs = slices.DeleteFunc(slices.Clone(s.subs), func(x *func([]Event)) bool { return x == p })
		s.subMu.Unlock()
	}
}

func (s *Set) deliver(events []Event) {
	if len(events) == 0 {
		return
	}
	s.subMu.Lock()
	subs := s.subs
	s.subMu.Unlock()
	for _, fn := range subs {
		(*fn)(events)
	}
}

// Rescan scans every folder again from scratch (after an operator copied
// files while the server was not watching, for example) and delivers the
// events.
func (s *Set) Rescan() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var events []Event
	for _, f := range s.folders {
		events = append(events, s.scan(f, "")...)
	}
	s.deliver(events)
}

// Refresh rescans the given absolute paths (files or folders) now, the
// way the watcher would, and delivers the events before returning.
// Paths outside every folder are ignored.
func (s *Set) Refresh(paths ...string) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.deliver(s.refresh(paths))
}

// refresh maps changed paths to scopes per folder and rescans them.
// Called with writeMu held.
func (s *Set) refresh(paths []string) []Event {
	var events []Event
	for _, f := range s.folders {
		var scopes []string
		full := false
		for _, p := range paths {
			p = filepath.Clean(p)
			if p == f.root {
				full = true
				continue
			}
			rel, err := filepath.Rel(f.root, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			rel = filepath.ToSlash(rel)
			if rel == "." {
				full = true
				continue
			}
			if ns, ok := isDownloadRecord(rel); ok {
				rel = ns // hidden, but it decides how the namespace is served
			}
			if slices.ContainsFunc(strings.Split(rel, "/"), isIgnored) {
				continue
			}
			s.mu.RLock()
			scope := f.scopeFor(rel)
			s.mu.RUnlock()
			scopes = append(scopes, scope)
		}
		if full || (!f.exists && len(scopes) > 0) {
			events = append(events, s.scan(f, "")...)
			continue
		}
		for _, scope := range outermost(scopes) {
			events = append(events, s.scan(f, scope)...)
		}
	}
	return events
}

// outermost sorts scopes and drops those inside another.
func outermost(scopes []string) []string {
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	var out []string
	for _, sc := range scopes {
		if len(out) > 0 && within(sc, out[len(out)-1]) {
			continue
		}
		out = append(out, sc)
	}
	return out
}

// run is the watcher loop: events are gathered until Debounce passes
// without one (or MaxWait after the first), then the touched scopes are
// rescanned.
func (s *Set) run() {
	defer close(s.done)
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var first time.Time // when the oldest pending event arrived
	arm := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		timer.Reset(min(s.opts.Debounce, s.opts.MaxWait-now.Sub(first)))
	}
	for {
		select {
		case <-s.stop:
			timer.Stop()
			return
		case ev, ok := <-s.watcher.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// inotify drops the watch of a folder that goes; one
				// created again at that path must be watched anew.
				s.watchMu.Lock()
				delete(s.watched, ev.Name)
				s.watchMu.Unlock()
			}
			arm()
			pending[ev.Name] = true
		case err, ok := <-s.watcher.Errors:
			if !ok {
				return
			}
			// An overflowed queue loses events: only a full rescan is safe.
			s.log.Warn("skills folder watcher error; rescanning every folder", "err", err)
			arm()
			pending[""] = true
		case <-timer.C:
			paths := make([]string, 0, len(pending))
			all := pending[""]
			for p := range pending {
				paths = append(paths, p)
			}
			clear(pending)
			first = time.Time{}
			s.writeMu.Lock()
			var events []Event
			if all {
				for _, f := range s.folders {
					events = append(events, s.scan(f, "")...)
				}
			} else {
				events = s.refresh(paths)
			}
			s.deliver(events)
			s.writeMu.Unlock()
		}
	}
}

// Generation grows whenever a scan changed something.
func (s *Set) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// Roots lists the absolute folder roots in precedence order.
func (s *Set) Roots() []string {
	out := make([]string, len(s.folders))
	for i, f := range s.folders {
		out[i] = f.root
	}
	return out
}

// First is the first folder's absolute root ("" when none is configured):
// where downloads write.
func (s *Set) First() string {
	if len(s.folders) == 0 {
		return ""
	}
	return s.folders[0].root
}

// Skills lists what the folders serve, one entry per id (the first folder
// holding it, its highest version), sorted by id. The slice is a shared
// snapshot: do not modify it.
func (s *Set) Skills() []*catalog.Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if snap := s.skills; snap != nil && snap.gen == s.gen {
		return snap.entries
	}
	n := 0
	for _, f := range s.folders {
		n += len(f.skills)
	}
	seen := make(map[string]bool, n)
	out := make([]*catalog.Entry, 0, n)
	for _, f := range s.folders {
		for id, vs := range f.skills {
			if !seen[id] {
				seen[id] = true
				out = append(out, vs[len(vs)-1])
			}
		}
	}
	slices.SortFunc(out, func(a, b *catalog.Entry) int { return strings.Compare(a.ID, b.ID) })
	s.skills = &skillSnap{gen: s.gen, entries: out}
	return out
}

// Skill is what the folders serve at id.
func (s *Set) Skill(id string) (*catalog.Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.mergedSkill(id)
	return e, e != nil
}

// Prompts lists the prompts (per name, as mergedPrompt picks), by name.
func (s *Set) Prompts() []*Prompt {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if snap := s.prompts; snap != nil && snap.gen == s.gen {
		return snap.prompts
	}
	seen := map[string]bool{}
	var out []*Prompt
	for _, f := range s.folders {
		for name := range f.prompts {
			if !seen[name] {
				seen[name] = true
				out = append(out, s.mergedPrompt(name))
			}
		}
	}
	slices.SortFunc(out, func(a, b *Prompt) int { return strings.Compare(a.Name, b.Name) })
	s.prompts = &promptSnap{gen: s.gen, prompts: out}
	return out
}

// Prompt is the prompt called name.
func (s *Set) Prompt(name string) (*Prompt, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p := s.mergedPrompt(name)
	return p, p != nil
}

// Problems lists every file or folder that is not served, by folder order
// then path.
func (s *Set) Problems() []Problem {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Problem
	for _, f := range s.folders {
		start := len(out)
		for p, r := range f.problems {
			out = append(out, Problem{Folder: f.root, Path: p, File: f.abs(p), Reason: r})
		}
		slices.SortFunc(out[start:], func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	}
	return out
}

// Warnings lists what is served with a caveat (SKILL.md metadata that is
// not a map of strings, Options.BundleWarning), by folder order then path,
// one Problem per caveat.
func (s *Set) Warnings() []Problem {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Problem
	for _, f := range s.folders {
		start := len(out)
		for p, rs := range f.warnings {
			for _, r := range rs {
				out = append(out, Problem{Folder: f.root, Path: p, File: f.abs(p), Reason: r})
			}
		}
		// Stable: a file's caveats stay in the order they were found.
		slices.SortStableFunc(out[start:], func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	}
	return out
}

// Folders describes the configured folders in precedence order.
func (s *Set) Folders() []FolderInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]FolderInfo, len(s.folders))
	for i, f := range s.folders {
		out[i] = s.folderInfo(f)
	}
	return out
}

func (s *Set) folderInfo(f *folder) FolderInfo {
	return FolderInfo{
		Configured: f.configured, Root: f.root, Source: f.src.Name(), Exists: f.exists,
		Skills: len(f.skills), Prompts: len(f.prompts), Problems: len(f.problems),
	}
}
