package fsource

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/registry"
)

// unitKind is what a scanned path is.
type unitKind int

const (
	unitSkillDir unitKind = iota // <dir>/SKILL.md: an Agent Skills folder
	unitBundle                   // <dir>/skill.toml: a Skills Protocol bundle
	unitFile                     // <path>.md: an iii-directory skill
	unitPrompt                   // */prompts/*.md
)

// unit is one served thing found on disk, keyed by its path (a file, or
// the folder of an Agent Skills skill or bundle).
type unit struct {
	kind   unitKind
	path   string
	entry  *catalog.Entry // skills
	prompt *Prompt        // prompts
}

// Prompt is one prompt file (iii-directory: */prompts/*.md with a
// description in its frontmatter).
type Prompt struct {
	Name        string
	Description string
	// Folder is the absolute folder root; Path the file relative to it.
	Folder   string
	Path     string
	Size     int64
	Modified time.Time
	// Body reads the frontmatter-stripped markdown from disk.
	Body catalog.Content
}

// BundleDir is a Skills Protocol bundle found in a folder, handed to a
// BundleReader.
type BundleDir struct {
	// Folder is the absolute folder root; Dir the bundle's folder relative
	// to it ('/'-separated).
	Folder string
	Dir    string
	// Manifest is the raw skill.toml.
	Manifest []byte
}

// BundleReader completes the entry of a bundle: e arrives with ID (the
// bundle's folder path), Files (every file, digests computed), Main and
// Body (SKILL.md when present), Frontmatter, Origin (kind bundle) and
// Modified filled in; the reader parses the manifest and sets what it
// says (Version, Kind, ID, Description, Extra…). An error skips the bundle
// and is listed by Problems.
type BundleReader func(b BundleDir, e *catalog.Entry) error

// folder is one configured skills folder.
type folder struct {
	configured string // as given
	root       string // absolute
	index      int
	jobs       []job // found by the current walk, not loaded yet
	src        *catalog.Source
	bundle     BundleReader
	watch      func(abs string) // adds a watch on a directory

	fsRoot atomic.Pointer[os.Root] // nil while the folder is missing

	units    map[string]*unit   // by path
	byKey    map[string][]*unit // skills by skillKey, prompts by promptKey
	problems map[string]string  // by path ("" for the folder itself)
	// warnings: what is served with a caveat (Agent Skills metadata that
	// is not a map of strings, a bundle's bundleWarning), by path.
	warnings      map[string][]string
	bundleWarning func(*catalog.Entry) string
	exists        bool

	// What the folder serves (the best unit of each key), as applied to
	// the catalog source: skills by id (ascending versions), prompts by
	// name.
	skills  map[string][]*catalog.Entry
	prompts map[string]*Prompt
}

func newFolder(configured, root string, index int, src *catalog.Source, bundle BundleReader, watch func(string)) *folder {
	return &folder{
		configured: configured, root: root, index: index, src: src, bundle: bundle, watch: watch,
		units: map[string]*unit{}, byKey: map[string][]*unit{}, problems: map[string]string{}, warnings: map[string][]string{},
		skills: map[string][]*catalog.Entry{}, prompts: map[string]*Prompt{},
	}
}

func promptKey(name string) string { return "\x00" + name }

// skillKey keys a skill version; several versions of one id (bundles) may
// sit side by side.
func skillKey(id, version string) string { return id + "\x01" + version }

func splitSkillKey(k string) (id, version string) {
	id, version, _ = strings.Cut(k, "\x01")
	return id, version
}

func isPromptKey(k string) bool { return strings.HasPrefix(k, "\x00") }

func mapKey(u *unit) string {
	if u.kind == unitPrompt {
		return promptKey(u.prompt.Name)
	}
	return skillKey(u.entry.ID, u.entry.Version)
}

// within reports whether p is scope or under it ("" is the whole folder).
func within(p, scope string) bool {
	return scope == "" || p == scope || strings.HasPrefix(p, scope+"/")
}

// fsName turns a relative path into an os.Root name ("" is ".").
func fsName(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// abs is the absolute path of rel, for messages.
func (f *folder) abs(rel string) string {
	if rel == "" {
		return f.root
	}
	return filepath.Join(f.root, filepath.FromSlash(rel))
}

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

func (f *folder) problem(rel, reason string) { f.problems[rel] = reason }

// walk scans rel, a file or a folder.
func (f *folder) walk(rel string) {
	r := f.fsRoot.Load()
	fi, err := r.Lstat(fsName(rel))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.problem(rel, f.reason(err))
		}
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		st, err := r.Stat(fsName(rel))
		switch {
		case err != nil:
			f.problem(rel, f.reason(err))
		case st.IsDir():
			f.problem(rel, msgSymlinkDir)
		case st.Mode().IsRegular():
			f.classify(rel)
		}
		return
	}
	if fi.IsDir() {
		f.walkDir(rel)
		return
	}
	if fi.Mode().IsRegular() {
		f.classify(rel)
	}
}

func (f *folder) walkDir(rel string) {
	r := f.fsRoot.Load()
	entries, err := fs.ReadDir(r.FS(), fsName(rel))
	if err != nil {
		f.problem(rel, f.reason(err))
		return
	}
	f.watch(f.abs(rel))
	if rel != "" {
		has := func(name string) bool {
			return slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == name })
		}
		if has(BundleManifest) {
			f.jobs = append(f.jobs, job{unitBundle, rel})
			return
		}
		if has(SkillFile) {
			f.jobs = append(f.jobs, job{unitSkillDir, rel})
			return
		}
	}
	for _, e := range entries {
		if isIgnored(e.Name()) {
			continue
		}
		child := joinRel(rel, e.Name())
		switch {
		case e.IsDir():
			f.walkDir(child)
		case e.Type()&fs.ModeSymlink != 0:
			f.walk(child)
		case e.Type().IsRegular():
			f.classify(child)
		}
	}
}

// classify loads a regular file outside skill folders.
func (f *folder) classify(rel string) {
	if isIgnored(path.Base(rel)) || path.Ext(rel) != ".md" {
		return
	}
	if isPromptPath(rel) {
		f.jobs = append(f.jobs, job{unitPrompt, rel})
		return
	}
	f.jobs = append(f.jobs, job{unitFile, rel})
}

// job is a file or skill folder found by the walk, loaded in parallel.
type job struct {
	kind unitKind
	path string
}

// scanOut collects what loading one job found.
type scanOut struct {
	units    []*unit
	problems [][2]string // path, reason
	warnings [][2]string // path, caveat of something served
	// sub is a root of folder subDir, shared by the jobs of one folder.
	sub    *os.Root
	subDir string
}

func (o *scanOut) problem(rel, reason string) {
	o.problems = append(o.problems, [2]string{rel, reason})
}

func (o *scanOut) add(u *unit) { o.units = append(o.units, u) }

// runJobs loads the walk's jobs on several goroutines (reading files is
// mostly system calls, which overlap well) and applies the results in
// walk order, so the outcome does not depend on scheduling.
func (f *folder) runJobs() {
	jobs := f.jobs
	f.jobs = nil
	outs := make([]scanOut, len(jobs))
	workers := min(max(4, 2*runtime.GOMAXPROCS(0)), len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sub *os.Root // this goroutine's root of the last folder it read
			subDir := ""
			defer func() {
				if sub != nil {
					_ = sub.Close()
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				o := &outs[i]
				if j := jobs[i]; j.kind == unitFile || j.kind == unitPrompt {
					if dir := path.Dir(j.path); dir != "." && dir != subDir {
						if sub != nil {
							_ = sub.Close()
						}
						sub, subDir = nil, dir
						if r := f.fsRoot.Load(); r != nil {
							sub, _ = r.OpenRoot(dir) // on failure: read through the folder root
						}
					}
					if path.Dir(j.path) == subDir {
						o.sub, o.subDir = sub, subDir
					}
				}
				switch j := jobs[i]; j.kind {
				case unitFile:
					f.loadFileSkill(o, j.path)
				case unitPrompt:
					f.loadPrompt(o, j.path)
				case unitSkillDir:
					f.loadSkillDir(o, j.path)
				case unitBundle:
					f.loadBundle(o, j.path)
				}
			}
		}()
	}
	wg.Wait()
	for _, o := range outs {
		for _, p := range o.problems {
			f.problems[p[0]] = p[1]
		}
		for _, w := range o.warnings {
			f.warnings[w[0]] = append(f.warnings[w[0]], w[1])
		}
		for _, u := range o.units {
			f.add(u)
		}
	}
}

// reason renders a read error as a skip reason.
func (f *folder) reason(err error) string {
	var tl *tooLargeError
	switch {
	case errors.As(err, &tl):
		return fmt.Sprintf(fmtTooLarge, tl.size, MaxFileBytes)
	case errors.Is(err, errNotRegular):
		return msgNotRegular
	case errors.Is(err, errSymlinkDir):
		return msgSymlinkDir
	case strings.Contains(err.Error(), "escapes"):
		return fmt.Sprintf(fmtEscapes, err)
	}
	return fmt.Sprintf(fmtUnreadable, err)
}

var (
	errNotRegular = errors.New(msgNotRegular)
	errSymlinkDir = errors.New(msgSymlinkDir)
)

// openRead opens name for reading without blocking: a FIFO (named SKILL.md,
// or a symlink to one inside a skill folder) would otherwise block the
// scan until some process writes to it. The caller refuses what is not a
// regular file; O_NONBLOCK changes nothing for regular files.
func openRead(r *os.Root, name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

type tooLargeError struct{ size int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf(fmtTooLarge, e.size, MaxFileBytes)
}

// readFile reads a regular file through the folder's root (which refuses
// paths and symlinks that leave it), up to limit bytes.
func (f *folder) readFile(rel string, limit int64) ([]byte, fs.FileInfo, error) {
	return f.readFileIn(nil, rel, limit)
}

// readFileIn is readFile through the scan's root of rel's folder when o
// holds it: one openat per file instead of one per path component.
func (f *folder) readFileIn(o *scanOut, rel string, limit int64) ([]byte, fs.FileInfo, error) {
	var fh *os.File
	var err error
	if o != nil && o.sub != nil && path.Dir(rel) == o.subDir {
		fh, err = openRead(o.sub, path.Base(rel))
	} else {
		r := f.fsRoot.Load()
		if r == nil {
			return nil, nil, fmt.Errorf("%s: %w", f.root, fs.ErrNotExist)
		}
		fh, err = openRead(r, rel)
	}
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, errNotRegular
	}
	if limit >= 0 && fi.Size() > limit {
		return nil, fi, &tooLargeError{size: fi.Size()}
	}
	// Sized from the stat, so a file that did not change is read with one
	// allocation; one that grew meanwhile is still read whole, up to limit.
	data := make([]byte, 0, fi.Size()+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := fh.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if limit >= 0 && int64(len(data)) > limit {
			return nil, fi, &tooLargeError{size: int64(len(data))}
		}
		if err == io.EOF {
			return data, fi, nil
		}
		if err != nil {
			return nil, fi, err
		}
	}
}

// bodyLoader reads a markdown file's body on demand, with iii-directory's
// read errors (absolute path, 256 KiB cap, empty body).
func (f *folder) bodyLoader(rel string) catalog.Loader {
	return func() ([]byte, error) {
		abs := f.abs(rel)
		data, _, err := f.readFile(rel, MaxFileBytes)
		var tl *tooLargeError
		switch {
		case errors.As(err, &tl):
			return nil, fmt.Errorf(fmtReadTooLarge, abs, tl.size, MaxFileBytes)
		case err != nil:
			return nil, fmt.Errorf(fmtReadErr, abs, err)
		}
		_, body, _ := catalog.SplitFrontmatter(string(data))
		if !checkBody(body) {
			return nil, fmt.Errorf(fmtReadEmpty, abs)
		}
		return []byte(body), nil
	}
}

// fileLoader reads a supporting file on demand.
func (f *folder) fileLoader(rel string) catalog.Loader {
	return func() ([]byte, error) {
		data, _, err := f.readFile(rel, MaxSkillBytes)
		if err != nil {
			return nil, fmt.Errorf(fmtReadErr, f.abs(rel), err)
		}
		return data, nil
	}
}

func (f *folder) add(u *unit) {
	f.units[u.path] = u
	k := mapKey(u)
	f.byKey[k] = append(f.byKey[k], u)
}

// markdown reads and splits a markdown file; the frontmatter is parsed
// when present (required reports its absence as a problem).
func (f *folder) markdown(o *scanOut, rel string, required bool) (data string, fi fs.FileInfo, fm catalog.Frontmatter, body string, ok bool) {
	raw, fi, err := f.readFileIn(o, rel, MaxFileBytes)
	if err != nil {
		o.problem(rel, f.reason(err))
		return
	}
	data = string(raw)
	yamlText, body, has := catalog.SplitFrontmatter(data)
	if !has && required {
		o.problem(rel, msgNoFrontmatter)
		return
	}
	if has {
		fm, err = catalog.ParseFrontmatter(strings.Clone(yamlText))
		if err != nil {
			o.problem(rel, err.Error())
			return
		}
	}
	return data, fi, fm, body, true
}

// summary fills Title and Description without keeping the body alive.
func summary(e *catalog.Entry, body string) {
	e.SetSummary(body)
	e.Title = strings.Clone(e.Title)
	e.Description = strings.Clone(e.Description)
}

func (f *folder) loadFileSkill(o *scanOut, rel string) {
	id := strings.TrimSuffix(rel, ".md")
	if err := registry.ValidateID(id); err != nil {
		o.problem(rel, fmt.Sprintf(fmtInvalidID, rules.RustQuote(id), err))
		return
	}
	data, fi, fm, body, ok := f.markdown(o, rel, false)
	if !ok {
		return
	}
	if !checkBody(body) {
		o.problem(rel, msgEmptyBody)
		return
	}
	base := path.Base(rel)
	e := &catalog.Entry{
		ID:          id,
		Kind:        catalog.KindInstruction,
		Frontmatter: fm,
		Body:        catalog.Lazy(int64(len(body)), f.bodyLoader(rel)),
		BodyDigest:  catalog.DigestOfString(body),
		Files: []catalog.File{{
			Path: base, Size: int64(len(data)), Digest: catalog.DigestOfString(data), MIME: catalog.MIMEType(base),
			Modified: fi.ModTime(), Content: catalog.Lazy(int64(len(data)), f.fileLoader(rel)),
		}},
		Main:     base,
		Origin:   catalog.Origin{Kind: catalog.OriginFolder, Source: f.root, Path: rel},
		Modified: fi.ModTime(),
	}
	summary(e, body)
	o.add(&unit{kind: unitFile, path: rel, entry: e})
}

func (f *folder) loadSkillDir(o *scanOut, dir string) {
	main := joinRel(dir, SkillFile)
	if err := registry.ValidateID(dir); err != nil {
		o.problem(main, fmt.Sprintf(fmtInvalidID, rules.RustQuote(dir), err))
		return
	}
	_, _, fm, body, ok := f.markdown(o, main, true)
	if !ok {
		return
	}
	warnings, err := ValidateAgentSkill(fm.Fields, path.Base(dir))
	if err != nil {
		o.problem(main, err.Error())
		return
	}
	if !checkBody(body) {
		o.problem(main, msgEmptyBody)
		return
	}
	e, ok := f.skillEntry(o, dir, catalog.OriginFolder, fm, body)
	if !ok {
		return
	}
	desc, _ := fm.Fields.String("description")
	e.Description, e.HasDescription = strings.TrimSpace(desc), true
	for _, w := range warnings {
		o.warnings = append(o.warnings, [2]string{main, w})
	}
	o.add(&unit{kind: unitSkillDir, path: dir, entry: e})
}

// skillEntry builds the entry of a skill folder: every file hashed once,
// contents lazy.
func (f *folder) skillEntry(o *scanOut, dir string, kind catalog.OriginKind, fm catalog.Frontmatter, body string) (*catalog.Entry, bool) {
	files, err := f.collectFiles(o, dir)
	if err != nil {
		o.problem(joinRel(dir, SkillFile), err.Error())
		return nil, false
	}
	main := joinRel(dir, SkillFile)
	e := &catalog.Entry{
		ID:          dir,
		Kind:        catalog.KindInstruction,
		Frontmatter: fm,
		Files:       files,
		Origin:      catalog.Origin{Kind: kind, Source: f.root, Path: main},
	}
	for _, fl := range files {
		if fl.Modified.After(e.Modified) {
			e.Modified = fl.Modified
		}
	}
	if _, ok := e.File(SkillFile); ok {
		e.Main = SkillFile
		e.Body = catalog.Lazy(int64(len(body)), f.bodyLoader(main))
		e.BodyDigest = catalog.DigestOfString(body)
		summary(e, body)
	}
	return e, true
}

// collectFiles lists the files of a skill folder, recursively: hidden and
// temporary files are left out, symlinks that leave the folder are
// reported and left out, folders are watched.
func (f *folder) collectFiles(o *scanOut, dir string) ([]catalog.File, error) {
	var files []catalog.File
	var total int64
	var visit func(rel string) error
	visit = func(rel string) error {
		entries, err := fs.ReadDir(f.fsRoot.Load().FS(), rel)
		if err != nil {
			return fmt.Errorf(fmtUnreadable, err)
		}
		f.watch(f.abs(rel))
		for _, de := range entries {
			if isIgnored(de.Name()) {
				continue
			}
			child := rel + "/" + de.Name()
			if de.IsDir() {
				if err := visit(child); err != nil {
					return err
				}
				continue
			}
			if de.Type()&fs.ModeSymlink == 0 && !de.Type().IsRegular() {
				continue
			}
			fl, err := f.hashFile(child)
			if err != nil {
				o.problem(child, f.reason(err))
				continue
			}
			fl.Path = strings.TrimPrefix(child, dir+"/")
			files = append(files, fl)
			total += fl.Size
			if len(files) > MaxSkillFiles {
				return fmt.Errorf(fmtTooManyFiles, MaxSkillFiles)
			}
			if total > MaxSkillBytes {
				return fmt.Errorf(fmtSkillTooLarge, MaxSkillBytes)
			}
		}
		return nil
	}
	if err := visit(dir); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b catalog.File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// hashFile streams a file through sha256 once; its content stays on disk.
func (f *folder) hashFile(rel string) (catalog.File, error) {
	fh, err := openRead(f.fsRoot.Load(), rel)
	if err != nil {
		return catalog.File{}, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return catalog.File{}, err
	}
	if fi.IsDir() {
		return catalog.File{}, errSymlinkDir
	}
	if !fi.Mode().IsRegular() {
		return catalog.File{}, errNotRegular
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(fh, MaxSkillBytes+1))
	if err != nil {
		return catalog.File{}, err
	}
	var d catalog.Digest
	h.Sum(d[:0])
	return catalog.File{
		Size: n, Digest: d, MIME: catalog.MIMEType(rel), Modified: fi.ModTime(),
		Content: catalog.Lazy(n, f.fileLoader(rel)),
	}, nil
}

func (f *folder) loadBundle(o *scanOut, dir string) {
	manifestPath := joinRel(dir, BundleManifest)
	if f.bundle == nil {
		o.problem(manifestPath, msgNoBundleReader)
		return
	}
	manifest, _, err := f.readFile(manifestPath, MaxFileBytes)
	if err != nil {
		o.problem(manifestPath, f.reason(err))
		return
	}
	var fm catalog.Frontmatter
	var body string
	main := joinRel(dir, SkillFile)
	if _, err := f.fsRoot.Load().Stat(main); err == nil {
		var ok bool
		if _, _, fm, body, ok = f.markdown(o, main, false); !ok {
			return
		}
	}
	e, ok := f.skillEntry(o, dir, catalog.OriginBundle, fm, body)
	if !ok {
		return
	}
	e.Origin.Path = manifestPath
	if err := f.bundle(BundleDir{Folder: f.root, Dir: dir, Manifest: manifest}, e); err != nil {
		o.problem(manifestPath, fmt.Sprintf(fmtBundleRejected, err))
		return
	}
	if err := catalog.CheckEntry(e); err != nil {
		o.problem(manifestPath, fmt.Sprintf(fmtBundleRejected, err))
		return
	}
	if f.bundleWarning != nil {
		if msg := f.bundleWarning(e); msg != "" {
			o.warnings = append(o.warnings, [2]string{manifestPath, msg})
		}
	}
	o.add(&unit{kind: unitBundle, path: dir, entry: e})
}

func (f *folder) loadPrompt(o *scanOut, rel string) {
	_, fi, fm, body, ok := f.markdown(o, rel, true)
	if !ok {
		return
	}
	name := strings.TrimSuffix(path.Base(rel), ".md")
	if v, ok := fm.Fields.Get("name"); ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			o.problem(rel, fmt.Sprintf(fmtInvalidPrompt, rules.RustQuote(fmt.Sprint(v)), "name must be a string"))
			return
		}
		if s = strings.TrimSpace(s); s != "" {
			name = s
		}
	}
	if err := registry.ValidateName(name); err != nil {
		o.problem(rel, fmt.Sprintf(fmtInvalidPrompt, rules.RustQuote(name), err))
		return
	}
	desc, _ := fm.Fields.String("description")
	desc = strings.TrimSpace(desc)
	if desc == "" {
		o.problem(rel, msgNoPromptDesc)
		return
	}
	if !checkBody(body) {
		o.problem(rel, msgEmptyBody)
		return
	}
	p := &Prompt{
		Name: strings.Clone(name), Description: strings.Clone(desc), Folder: f.root, Path: rel,
		Size: fi.Size(), Modified: fi.ModTime(), Body: catalog.Lazy(int64(len(body)), f.bodyLoader(rel)),
	}
	o.add(&unit{kind: unitPrompt, path: rel, prompt: p})
}

// best is the unit that serves a key within the folder: skill folders and
// bundles before single files, then the lower path. The others are
// reported as duplicates.
func best(us []*unit) *unit {
	if len(us) == 0 {
		return nil
	}
	return slices.MinFunc(us, func(a, b *unit) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.path, b.path)
	})
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
	if b := parts[len(parts)-1]; (b == SkillFile || b == BundleManifest) && len(parts) > 1 {
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
// one component) that is a skill folder or bundle, known or on disk.
func (f *folder) enclosing(parts []string, r *os.Root) string {
	for i := 1; i <= len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if u := f.units[dir]; u != nil && (u.kind == unitSkillDir || u.kind == unitBundle) {
			return dir
		}
		if r == nil {
			continue
		}
		for _, marker := range []string{BundleManifest, SkillFile} {
			if fi, err := r.Stat(dir + "/" + marker); err == nil && !fi.IsDir() {
				return dir
			}
		}
	}
	return ""
}
