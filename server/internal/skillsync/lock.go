package skillsync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LockVersion is the format version of the lock this code writes.
const LockVersion = 1

// DefaultLockFile is the lock's name in the current folder.
const DefaultLockFile = "skills.lock"

// YankPolicy says what a sync does with a synced version the registry has
// yanked or no longer has: replace it with the version the registry
// serves, or remove the skill's folder.
type YankPolicy string

const (
	YankReplace YankPolicy = "replace"
	YankRemove  YankPolicy = "remove"
)

// ParseYankPolicy reads a yank policy ("" is the default, replace).
func ParseYankPolicy(s string) (YankPolicy, error) {
	switch YankPolicy(s) {
	case "":
		return YankReplace, nil
	case YankReplace, YankRemove:
		return YankPolicy(s), nil
	}
	return "", fmt.Errorf("yank policy %q: expected replace (sync the version the registry serves instead) or remove (remove the skill's folder)", s)
}

// Lock is the lock file: what each sync wrote, per skill (keyed by its
// folder name), and what each source was asked for. encoding/json writes
// map keys sorted, so the file is the same for the same state.
type Lock struct {
	LockVersion int                     `json:"lock_version"`
	YankPolicy  YankPolicy              `json:"yank_policy"`
	Sources     map[string]*LockSource  `json:"sources"`
	Skills      map[string]*LockedSkill `json:"skills"`
}

// LockSource is what one registry was asked for.
type LockSource struct {
	// Selectors are the run's selectors, sorted (a query as query:<words>;
	// none: every skill).
	Selectors []string `json:"selectors"`
	// QueryLimit is how many skills each query picked at most.
	QueryLimit int `json:"query_limit,omitempty"`
}

// LockedSkill is one synced skill.
type LockedSkill struct {
	Source string `json:"source"` // the registry URL
	ID     string `json:"id"`
	// Version is the registry version written, when the registry says.
	Version int `json:"version,omitempty"`
	// Selector is the selector that picked the skill (none: the run
	// selected every skill); Label the @label it was read at.
	Selector string `json:"selector,omitempty"`
	Label    string `json:"label,omitempty"`
	// SHA256 is the registry's digest of the version, when it reports one.
	SHA256 string `json:"sha256,omitempty"`
	// Signature is the registry's verdict ("signed" or "unsigned") and
	// SignedBy / Key the signer and key fingerprint, when it reports them.
	Signature string `json:"signature,omitempty"`
	SignedBy  string `json:"signed_by,omitempty"`
	Key       string `json:"key,omitempty"`
	// Yanked is the reason the version was yanked, when it was written
	// while yanked (--frozen writes what the lock says).
	Yanked string `json:"yanked,omitempty"`
	// Files maps every file written to "sha256:<hex>" of its bytes.
	Files map[string]string `json:"files"`
	// Targets are the folders the skill was written into (as the lock
	// names paths: relative to the lock's folder, ~/ for the home folder,
	// else absolute), sorted; the skill is <target>/<name>.
	Targets []string `json:"targets"`
}

// NewLock is an empty lock.
func NewLock() *Lock {
	return &Lock{LockVersion: LockVersion, YankPolicy: YankReplace, Sources: map[string]*LockSource{}, Skills: map[string]*LockedSkill{}}
}

// ReadLock reads the lock at path; a missing file is an empty lock
// (exists false). Anything that is not a lock this code wrote is an error
// naming the file, the place and what was expected.
func ReadLock(path string) (lock *Lock, exists bool, err error) {
	lock, raw, err := readLock(path)
	return lock, raw != nil, err
}

// readLock is ReadLock with the file's bytes (nil when there is none).
func readLock(path string) (*Lock, []byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewLock(), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the lock %s: %w", path, err)
	}
	if b == nil {
		b = []byte{}
	}
	lock, err := ParseLock(b)
	if err != nil {
		return nil, b, fmt.Errorf("lock %s: %w (fix it, or remove it and run skills sync to write a new one)", path, err)
	}
	return lock, b, nil
}

// ParseLock decodes and checks a lock.
func ParseLock(b []byte) (*Lock, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, jsonError(b, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: more after the lock's closing brace", position(b, dec.InputOffset()))
	}
	if l.LockVersion != LockVersion {
		return nil, fmt.Errorf("lock_version is %d; this skills reads lock_version %d", l.LockVersion, LockVersion)
	}
	policy, err := ParseYankPolicy(string(l.YankPolicy))
	if err != nil {
		return nil, fmt.Errorf("yank_policy: %w", err)
	}
	l.YankPolicy = policy
	if l.Sources == nil {
		l.Sources = map[string]*LockSource{}
	}
	if l.Skills == nil {
		l.Skills = map[string]*LockedSkill{}
	}
	for src, s := range l.Sources {
		if _, err := ParseSourceURL(src); err != nil {
			return nil, fmt.Errorf("sources: %w", err)
		}
		if s == nil {
			return nil, fmt.Errorf("sources[%q] is null; expected {selectors: [...]}", src)
		}
		for _, raw := range s.Selectors {
			if _, err := ParseSelector(raw); err != nil {
				return nil, fmt.Errorf("sources[%q].selectors: %w", src, err)
			}
		}
	}
	for name, s := range l.Skills {
		if err := s.check(name, &l); err != nil {
			return nil, fmt.Errorf("skills[%q]: %w", name, err)
		}
	}
	return &l, nil
}

// check validates one entry of a lock read from disk.
func (s *LockedSkill) check(name string, l *Lock) error {
	if s == nil {
		return fmt.Errorf("null; expected {source, id, selector, files, targets}")
	}
	if err := checkName(name); err != nil {
		return err
	}
	if l.Sources[s.Source] == nil {
		return fmt.Errorf("source %q is not one of the lock's sources", clip(s.Source, 120))
	}
	if err := checkListed(Listed{ID: s.ID, Name: name, Files: s.fileList()}); err != nil {
		if len(s.Files) == 0 {
			return fmt.Errorf("files is empty; expected every file written, with its sha256")
		}
		return err
	}
	for path, d := range s.Files {
		if sum, ok := strings.CutPrefix(d, "sha256:"); !ok || !isHexDigest(sum) {
			return fmt.Errorf("files[%q] is %q; expected sha256: and 64 lowercase hex digits", path, clip(d, 80))
		}
	}
	if s.Selector != "" {
		if _, err := ParseSelector(s.Selector); err != nil {
			return fmt.Errorf("selector: %w", err)
		}
	}
	if s.Version < 0 {
		return fmt.Errorf("version is %d; expected a version number from 1", s.Version)
	}
	if s.SHA256 != "" && !isHexDigest(s.SHA256) {
		return fmt.Errorf("sha256 %q: expected 64 lowercase hex digits", clip(s.SHA256, 80))
	}
	if s.Signature != "" && s.Signature != "signed" && s.Signature != "unsigned" {
		return fmt.Errorf("signature %q: expected signed or unsigned", clip(s.Signature, 40))
	}
	if len(s.Targets) == 0 {
		return fmt.Errorf("targets is empty; expected the folders the skill was written into")
	}
	for _, t := range s.Targets {
		if t == "" {
			return fmt.Errorf("an empty target")
		}
	}
	return nil
}

// fileList is the entry's files as a Listed's (digests without the
// "sha256:" prefix; a malformed one is left to fail the hex check).
func (s *LockedSkill) fileList() []File {
	out := make([]File, 0, len(s.Files))
	for p, d := range s.Files {
		out = append(out, File{Path: p, SHA256: strings.TrimPrefix(d, "sha256:")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// digest is the hex sha256 the lock records for file ("" when none).
func (s *LockedSkill) digest(file string) string {
	return strings.TrimPrefix(s.Files[file], "sha256:")
}

// jsonError turns a decoding error into one naming the line and column.
func jsonError(b []byte, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s: not valid JSON: %v", position(b, syn.Offset-1), syn) // Offset is past the byte
	case errors.As(err, &typ):
		return fmt.Errorf("%s: %s is %s; expected %s", position(b, typ.Offset), typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("the file is empty; expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: not valid JSON: the file ends inside a value", position(b, int64(len(b))))
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// The decoder does not say where: the key's first place in the file.
		at := dec.InputOffset()
		if i := bytes.Index(b, []byte(field)); i >= 0 {
			at = int64(i)
		}
		return fmt.Errorf("%s: unknown key %s (keys of a lock: lock_version, yank_policy, sources, skills; of a skill: source, id, version, selector, label, sha256, signature, signed_by, key, yanked, files, targets)", position(b, at), field)
	}
	return err
}

// position is "line L, column C" of the byte at index off of b.
func position(b []byte, off int64) string {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Encode is the lock as written: indented JSON, keys sorted, a final
// newline.
func (l *Lock) Encode() []byte {
	for _, s := range l.Skills {
		sort.Strings(s.Targets)
	}
	for _, s := range l.Sources {
		sort.Strings(s.Selectors)
		if s.Selectors == nil {
			s.Selectors = []string{}
		}
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		panic(err) // only strings, ints and maps of them
	}
	return append(b, '\n')
}

// WriteLock writes l to path in one rename: a reader sees the old lock or
// the new one, never a part.
func WriteLock(path string, l *Lock) error {
	if err := writeFileAtomic(path, l.Encode(), 0o644); err != nil {
		return fmt.Errorf("write the lock %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic writes b to a temporary file beside path, syncs it and
// renames it over path, then syncs the folder.
func writeFileAtomic(path string, b []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename: nothing there
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// flushEach is how many staged files are fsync'd one by one; more are
// flushed with one syncfs where there is one.
const flushEach = 64

// fsyncAll makes files and the folders that hold them durable.
func fsyncAll(files []string) error {
	dirs := map[string]bool{}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
		for d := filepath.Dir(p); !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			if filepath.Base(filepath.Dir(d)) == stagingDir {
				break // the staged skill's own folder: its parent is the staging folder
			}
		}
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes a folder's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lockPaths turns target folders into the lock's form and back: relative
// to the lock's folder when under it, ~/… under the home folder, else
// absolute.
type lockPaths struct {
	base string // the lock's folder, absolute
	home string // "" when unknown
}

func (p lockPaths) encode(abs string) string {
	if rel, err := filepath.Rel(p.base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	if p.home != "" {
		if rel, err := filepath.Rel(p.home, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return abs
}

func (p lockPaths) decode(s string) (string, error) {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		if p.home == "" {
			return "", fmt.Errorf("target %s is in the home folder, which is unknown here", s)
		}
		return filepath.Join(p.home, filepath.FromSlash(rest)), nil
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s), nil
	}
	return filepath.Join(p.base, filepath.FromSlash(s)), nil
}
