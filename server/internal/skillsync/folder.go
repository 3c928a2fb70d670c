package skillsync

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// How a skill folder on disk changes: a new version is written complete
// into a staging folder beside the target (<target>/.skills-sync/, one
// level deeper than any skill, so an agent listing <target>/*/SKILL.md
// never meets it), with the files the sync did not write linked in from
// the old folder, and then swapped with the old folder in one rename.

// stagingDir is the folder inside each target where skills are staged.
const stagingDir = ".skills-sync"

// entryKind is what a path in a skill folder is.
type entryKind int

const (
	kindFile entryKind = iota
	kindDir
	kindLink
	kindOther
)

func (k entryKind) String() string {
	return [...]string{"a file", "a folder", "a symbolic link", "a special file"}[k]
}

// diskEntry is one path of a scanned skill folder.
type diskEntry struct {
	kind   entryKind
	sha256 string // of a file asked to be hashed
	mode   fs.FileMode
}

// SymlinkError is a target or skill folder that is a symbolic link: the
// sync writes only into real folders.
type SymlinkError struct {
	Path, Dest string
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link to %s: skills sync writes only into real folders, never through a link (remove the link, or name the folder it points to as the target)", e.Path, e.Dest)
}

// scanFolder lists the skill folder dir without following links, hashing
// the files named in hash (through cache, when not nil). exists is false
// when there is no folder.
func scanFolder(dir string, cache *digestCache, hash func(rel string) bool) (entries map[string]diskEntry, exists bool, err error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		dest, _ := os.Readlink(dir)
		return nil, true, &SymlinkError{Path: dir, Dest: dest}
	}
	if !fi.IsDir() {
		return nil, true, fmt.Errorf("%s is %s, not a skill folder: move it away (skills sync never deletes what it did not write)", dir, kindOf(fi.Mode()))
	}
	entries = map[string]diskEntry{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := diskEntry{kind: kindOf(info.Mode()), mode: info.Mode()}
		if e.kind == kindFile && hash(rel) {
			if e.sha256, err = cache.hash(p, info); err != nil {
				return err
			}
		}
		entries[rel] = e
		return nil
	})
	return entries, true, err
}

func kindOf(m fs.FileMode) entryKind {
	switch {
	case m.IsRegular():
		return kindFile
	case m.IsDir():
		return kindDir
	case m&fs.ModeSymlink != 0:
		return kindLink
	}
	return kindOther
}

// digestCache remembers the digests of files a watch hashed, by path,
// with the file's identity, size and modification time: a file that has
// not changed is not read again. A nil cache reads every time.
type digestCache struct {
	mu sync.Mutex
	m  map[string]cachedDigest
}

type cachedDigest struct {
	info fs.FileInfo
	sum  string
}

func newDigestCache() *digestCache { return &digestCache{m: map[string]cachedDigest{}} }

// hash is the hex sha256 of the regular file at p, whose Lstat is info.
func (c *digestCache) hash(p string, info fs.FileInfo) (string, error) {
	if c == nil {
		return hashFile(p)
	}
	c.mu.Lock()
	old, ok := c.m[p]
	c.mu.Unlock()
	if ok && os.SameFile(old.info, info) && old.info.Size() == info.Size() && old.info.ModTime().Equal(info.ModTime()) {
		return old.sum, nil
	}
	s, err := hashFile(p)
	if err == nil {
		c.mu.Lock()
		c.m[p] = cachedDigest{info: info, sum: s}
		c.mu.Unlock()
	}
	return s, err
}

// hashFile is the hex sha256 of the regular file at p, opened without
// following a link.
func hashFile(p string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sum is the hex sha256 of b.
func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Conflict is a path of a skill folder the sync will not overwrite or
// delete without --force: edited since the last sync, or never written by
// the sync.
type Conflict struct {
	File   string
	Reason string
}

// plannedFolder is what a write of one skill into one target must do
// with the folder there.
type plannedFolder struct {
	dir       string               // <target>/<name>
	exists    bool                 // there is a folder
	entries   map[string]diskEntry // its content
	prev      map[string]string    // what the sync wrote there before
	keep      []string             // paths the sync did not write: carried over
	conflicts []Conflict
}

// planFolder compares the folder at dir with the files a write puts there
// (next, hex digests) and the ones the sync wrote there before (prev, hex
// digests; nil when the lock has none in this target).
func planFolder(dir string, cache *digestCache, next, prev map[string]string) (*plannedFolder, error) {
	entries, exists, err := scanFolder(dir, cache, func(rel string) bool { return next[rel] != "" || prev[rel] != "" })
	if err != nil {
		return nil, err
	}
	pf := &plannedFolder{dir: dir, exists: exists, entries: entries, prev: prev}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	nextDirs, prevDirs := parentDirs(next), parentDirs(prev)
	conflicted := map[string]bool{}
	for _, p := range paths {
		e := entries[p]
		want, wanted := next[p]
		had, ours := prev[p]
		var reason string
		switch {
		case e.kind == kindDir && nextDirs[p]:
			// a folder the new version has too
		case e.kind == kindDir && wanted:
			reason = "a folder that skills sync did not write is where the registry's skill has a file"
		case e.kind == kindDir:
			if !prevDirs[p] {
				pf.keep = append(pf.keep, p) // the user's folder, even empty
			}
		case wanted && e.kind == kindFile && e.sha256 == want:
			// already what the registry serves
		case ours && e.kind == kindFile && e.sha256 == had:
			// written by the sync and unchanged: replaced or dropped
		case ours:
			reason = describeEdit(e)
		case wanted:
			reason = fmt.Sprintf("%s that skills sync did not write is in the way", e.kind)
		case nextDirs[p]:
			reason = fmt.Sprintf("%s that skills sync did not write is where the registry's skill has a folder", e.kind)
		default:
			pf.keep = append(pf.keep, p)
		}
		if reason != "" {
			pf.conflicts = append(pf.conflicts, Conflict{p, reason})
			conflicted[p] = true
		}
	}
	// With --force a conflicting path is overwritten: nothing is carried
	// into it.
	kept := pf.keep[:0]
	for _, p := range pf.keep {
		inside := false
		for d := range conflicted {
			inside = inside || strings.HasPrefix(p, d+"/")
		}
		if !inside {
			kept = append(kept, p)
		}
	}
	pf.keep = kept
	return pf, nil
}

// describeEdit says how a file the sync wrote changed.
func describeEdit(e diskEntry) string {
	if e.kind != kindFile {
		return fmt.Sprintf("edited since the last sync: it is now %s", e.kind)
	}
	return "edited since the last sync (its sha256 is no longer the one in the lock)"
}

// parentDirs is every folder that holds one of files.
func parentDirs(files map[string]string) map[string]bool {
	out := map[string]bool{}
	for p := range files {
		for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
			out[p[:i]] = true
		}
	}
	return out
}

func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// staged is a skill written complete into the staging folder, ready to
// be swapped into place.
type staged struct {
	path   string // the staging folder
	folder *plannedFolder
	files  []string // paths written (for a file-by-file flush)
}

// randomSuffix names staging folders.
func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stage writes the new files of a skill (content by path) into
// <target>/.skills-sync/<name>.<random>, SKILL.md last, and links in what
// the old folder keeps.
func stage(target, name string, pf *plannedFolder, content map[string][]byte) (*staged, error) {
	dir := filepath.Join(target, stagingDir, name+"."+randomSuffix())
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	st := &staged{path: dir, folder: pf}
	fail := func(err error) (*staged, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	paths := make([]string, 0, len(content))
	for p := range content {
		if p != SkillFile {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	paths = append(paths, SkillFile)
	for _, p := range paths {
		b := content[p]
		dest := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return fail(err)
		}
		mode := fs.FileMode(0o644)
		if len(b) > 2 && b[0] == '#' && b[1] == '!' {
			mode = 0o755 // a script: runnable as the skill says
		}
		if err := os.WriteFile(dest, b, mode); err != nil {
			return fail(err)
		}
		st.files = append(st.files, dest)
	}
	for _, p := range pf.keep {
		if err := carry(filepath.Join(pf.dir, filepath.FromSlash(p)), filepath.Join(dir, filepath.FromSlash(p)), pf.entries[p]); err != nil {
			return fail(fmt.Errorf("carry over %s, which skills sync did not write: %w", filepath.Join(pf.dir, filepath.FromSlash(p)), err))
		}
	}
	return st, nil
}

// carry puts the old folder's entry at src into the new folder at dest:
// a hard link to the same file (a copy where links are refused), the same
// link target, an empty folder.
func carry(src, dest string, e diskEntry) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	switch e.kind {
	case kindDir:
		if err := os.Mkdir(dest, e.mode.Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case kindLink:
		to, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(to, dest)
	}
	if err := os.Link(src, dest); err == nil || e.kind != kindFile {
		return err
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// commit swaps the staged folder into place. The old folder, now in the
// staging folder, is removed after anything that appeared in it since it
// was scanned has been moved into the new one.
func (st *staged) commit() error {
	pf := st.folder
	if !pf.exists {
		if err := os.Rename(st.path, pf.dir); err != nil {
			_ = os.RemoveAll(st.path)
			return err
		}
		return nil
	}
	if err := exchange(st.path, pf.dir); err != nil {
		_ = os.RemoveAll(st.path)
		return err
	}
	old := st.path // holds the old folder now
	rescueNewcomers(old, pf.dir, pf.entries)
	return os.RemoveAll(old)
}

// rescueNewcomers moves into the new folder what was created in the old
// one after it was scanned (a file saved in the moment of the swap).
func rescueNewcomers(old, dir string, seen map[string]diskEntry) {
	_ = filepath.WalkDir(old, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == old {
			return nil
		}
		rel, _ := filepath.Rel(old, p)
		if _, ok := seen[filepath.ToSlash(rel)]; ok {
			return nil
		}
		dest := filepath.Join(dir, rel)
		if _, err := os.Lstat(dest); err == nil {
			return nil // the new folder has this path: the old entry goes
		}
		_ = os.MkdirAll(filepath.Dir(dest), 0o755)
		if os.Rename(p, dest) == nil && d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
}

// abandon removes a staged folder that will not be committed.
func (st *staged) abandon() { _ = os.RemoveAll(st.path) }

// removeSkill removes the files the sync wrote into dir (ours, hex digests
// as the lock has them): the whole folder in one rename when nothing else
// is in it, else file by file, SKILL.md first (the folder stops being a
// skill at once) and the folders they leave empty. Files edited since the
// sync are conflicts unless force.
func removeSkill(target, dir string, ours map[string]string, force bool) ([]Conflict, error) {
	entries, exists, err := scanFolder(dir, nil, func(rel string) bool { return ours[rel] != "" })
	if err != nil || !exists {
		return nil, err
	}
	var conflicts []Conflict
	others := false
	for p, e := range entries {
		had, isOurs := ours[p]
		switch {
		case isOurs && (e.kind != kindFile || e.sha256 != had):
			conflicts = append(conflicts, Conflict{p, describeEdit(e)})
		case !isOurs && !(e.kind == kindDir && parentDirs(ours)[p]):
			others = true
		}
	}
	sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].File < conflicts[j].File })
	if len(conflicts) > 0 && !force {
		return conflicts, nil
	}
	if !others {
		gone := filepath.Join(target, stagingDir, filepath.Base(dir)+".removed-"+randomSuffix())
		if err := os.Rename(dir, gone); err != nil {
			return nil, err
		}
		return nil, os.RemoveAll(gone)
	}
	paths := make([]string, 0, len(ours))
	for p := range ours {
		if p != SkillFile {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range append([]string{SkillFile}, paths...) {
		if e, ok := entries[p]; ok && e.kind != kindDir {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	dirs := make([]string, 0)
	for d := range parentDirs(ours) {
		dirs = append(dirs, d)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // deepest first
	for _, d := range dirs {
		_ = os.Remove(filepath.Join(dir, filepath.FromSlash(d))) // only if empty
	}
	return nil, nil
}

// exchangeByRenames swaps a and b with a third name: b is moved aside,
// a moved to b, the old b moved to a. A crash in between leaves the old
// folder at the aside name, which the next run puts back (recoverStaging).
func exchangeByRenames(a, b string) error {
	aside := filepath.Join(filepath.Dir(a), filepath.Base(b)+".aside-"+randomSuffix())
	if err := os.Rename(b, aside); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		_ = os.Rename(aside, b)
		return err
	}
	return os.Rename(aside, a)
}
