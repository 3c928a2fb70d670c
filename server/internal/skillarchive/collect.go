package skillarchive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// File is one file of a skill or an archive: its path relative to the
// root ('/'-separated), its bytes, and whether it is executable.
type File struct {
	Path       string
	Data       []byte
	Executable bool
}

// Limits bound what reading an archive may cost. A zero field takes its
// default (DefaultLimits).
type Limits struct {
	// MaxEntries caps every entry met: files, folders, links and the
	// entries Options.Skip leaves out.
	MaxEntries int
	// MaxFiles caps the files kept, copies of links included.
	MaxFiles int
	// MaxFileBytes caps one file; MaxTotalBytes the files kept together.
	MaxFileBytes  int64
	MaxTotalBytes int64
	// MaxInflated caps the bytes decompressed in all: what is kept, what
	// is skipped and, in a tar.gz, the tar headers and padding.
	MaxInflated int64
	// MaxRatio caps inflated bytes per compressed byte once more than
	// ratioFloor bytes were inflated (deflate reaches about 1032:1; text
	// rarely passes 20:1).
	MaxRatio int64
}

// ratioFloor: below it, no ratio is checked (a small file of one repeated
// line compresses hundreds of times legitimately).
const ratioFloor = 1 << 20

// maxLinkDepth bounds chains of links, as Linux's ELOOP does.
const maxLinkDepth = 40

// DefaultLimits are generous for skills (the server caps one skill at 512
// files and 16 MiB; an archive may hold several skills) and small for an
// attacker.
func DefaultLimits() Limits {
	return Limits{
		MaxEntries:    16384,
		MaxFiles:      4096,
		MaxFileBytes:  16 << 20,
		MaxTotalBytes: 64 << 20,
		MaxInflated:   128 << 20,
		MaxRatio:      200,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxInflated <= 0 {
		l.MaxInflated = d.MaxInflated
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = d.MaxRatio
	}
	return l
}

// Options configure reading.
type Options struct {
	// Where names the archive in errors (its file name or URL); default
	// "archive".
	Where string
	// Noun is what the entries come from, in errors ("the archive's
	// root", "the repository has more than …"); default "archive".
	Noun   string
	Limits Limits
	// Skip, when set, leaves out the entries whose cleaned path it
	// reports (hidden files, say): they are counted as entries, their
	// names checked, their contents never kept.
	Skip func(path string) bool
}

// link is a symbolic or hard link met, resolved once every entry is in.
type link struct {
	raw    string // as the archive names it
	path   string
	target string // as the archive has it
	hard   bool
}

// Collector gathers the entries of an archive (or of a git tree, or a
// folder) under the reading rules, then resolves its links. Readers of
// every format feed one; Files returns the outcome.
type Collector struct {
	opts    Options
	noun    string
	lim     Limits
	files   map[string]*File
	taken   map[string]bool // paths of files and links
	dirs    map[string]bool
	folded  map[string]string // lower-cased path → path, files only
	links   []link
	entries int
	kept    int
	total   int64
}

// NewCollector starts a collection under opts.
func NewCollector(opts Options) *Collector {
	if opts.Where == "" {
		opts.Where = "archive"
	}
	if opts.Noun == "" {
		opts.Noun = "archive"
	}
	return &Collector{opts: opts, noun: opts.Noun, lim: opts.Limits.withDefaults(),
		files: map[string]*File{}, taken: map[string]bool{}, dirs: map[string]bool{}, folded: map[string]string{}}
}

// Where is the archive's name in errors.
func (c *Collector) Where() string { return c.opts.Where }

// Limits are the collection's limits, defaults filled in.
func (c *Collector) Limits() Limits { return c.lim }

func (c *Collector) refuse(raw, rule string, args ...any) error {
	if len(args) > 0 {
		rule = fmt.Sprintf(rule, args...)
	}
	return &EntryError{Where: c.opts.Where, Entry: raw, Rule: rule}
}

// admit counts an entry and checks its name; skip reports an entry to
// leave out (the root itself, or one Options.Skip names).
func (c *Collector) admit(raw string) (name string, skip bool, err error) {
	c.entries++
	if c.entries > c.lim.MaxEntries {
		return "", false, c.refuse(raw, "the %s has more than %d entries", c.noun, c.lim.MaxEntries)
	}
	name, err = CleanName(raw)
	if err != nil {
		return "", false, c.refuse(raw, "%v", err)
	}
	if name == "" {
		return "", true, nil
	}
	return name, c.opts.Skip != nil && c.opts.Skip(name), nil
}

// place checks that a file (or link) may take name: no duplicate, no
// clash with a folder, no other file differing only in letter case.
func (c *Collector) place(raw, name string) error {
	if c.taken[name] {
		return c.refuse(raw, "a second entry with the same name")
	}
	if c.dirs[name] {
		return c.refuse(raw, "%s is both a folder and a file", quote(name))
	}
	for _, p := range parents(name) {
		if c.taken[p] {
			return c.refuse(raw, "%s is both a file and the folder of this entry", quote(p))
		}
	}
	low := strings.ToLower(name)
	if other, ok := c.folded[low]; ok {
		return c.refuse(raw, "differs only in letter case from %s: the two overwrite each other on macOS and Windows", quote(other))
	}
	c.folded[low] = name
	c.taken[name] = true
	c.kept++
	if c.kept > c.lim.MaxFiles {
		return c.refuse(raw, "the %s has more than %d files", c.noun, c.lim.MaxFiles)
	}
	for _, p := range parents(name) {
		c.dirs[p] = true
	}
	return nil
}

// Dir records a folder entry.
func (c *Collector) Dir(raw string) error {
	name, skip, err := c.admit(raw)
	if err != nil || skip {
		return err
	}
	if c.taken[name] {
		return c.refuse(raw, "%s is both a file and a folder", quote(name))
	}
	c.dirs[name] = true
	for _, p := range parents(name) {
		c.dirs[p] = true
	}
	return nil
}

// File reads a regular file from r. declared is the size the archive
// states (-1 when it states none): a declared size over a cap is refused
// before anything is read; the bytes actually read are capped all the
// same.
func (c *Collector) File(raw string, declared int64, executable bool, r io.Reader) error {
	name, skip, err := c.admit(raw)
	if err != nil || skip {
		return err
	}
	if err := c.place(raw, name); err != nil {
		return err
	}
	limit := min(c.lim.MaxFileBytes, c.lim.MaxTotalBytes-c.total)
	if declared > c.lim.MaxFileBytes {
		return c.refuse(raw, "file of %d bytes, the limit is %d per file", declared, c.lim.MaxFileBytes)
	}
	if declared > limit {
		return c.refuse(raw, "the files reach %d bytes with this one, the limit is %d in total", c.total+declared, c.lim.MaxTotalBytes)
	}
	var buf bytes.Buffer
	if declared > 0 {
		buf.Grow(int(declared))
	}
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	if err != nil {
		var ee *EntryError
		if errors.As(err, &ee) {
			return err
		}
		return c.refuse(raw, "cannot read its data: %v", err)
	}
	if n > limit {
		if limit == c.lim.MaxFileBytes {
			return c.refuse(raw, "file of more than %d bytes, the limit is %d per file", limit, c.lim.MaxFileBytes)
		}
		return c.refuse(raw, "the files reach more than %d bytes with this one, the limit is %d in total", c.lim.MaxTotalBytes, c.lim.MaxTotalBytes)
	}
	if declared >= 0 && n != declared {
		return c.refuse(raw, "the %s declares %d bytes, its data holds %d", c.noun, declared, n)
	}
	c.total += n
	c.files[name] = &File{Path: name, Data: buf.Bytes(), Executable: executable}
	return nil
}

// Symlink records a symbolic link, resolved by Files.
func (c *Collector) Symlink(raw, target string) error { return c.addLink(raw, target, false) }

// Hardlink records a hard link (tar): target names another entry from the
// archive's root.
func (c *Collector) Hardlink(raw, target string) error { return c.addLink(raw, target, true) }

func (c *Collector) addLink(raw, target string, hard bool) error {
	name, skip, err := c.admit(raw)
	if err != nil || skip {
		return err
	}
	if err := c.place(raw, name); err != nil {
		return err
	}
	c.links = append(c.links, link{raw: raw, path: name, target: target, hard: hard})
	return nil
}

// Special refuses an entry that is no file, folder or link (a device, a
// FIFO, …), unless Options.Skip leaves it out; what names it.
func (c *Collector) Special(raw, what string) error {
	_, skip, err := c.admit(raw)
	if err != nil || skip {
		return err
	}
	return c.refuse(raw, "%s: only files, folders and links inside the %s are accepted", what, c.noun)
}

// Refuse refuses an entry with rule as it is, unless Options.Skip leaves
// it out (its name is checked all the same).
func (c *Collector) Refuse(raw, rule string) error {
	_, skip, err := c.admit(raw)
	if err != nil || skip {
		return err
	}
	return c.refuse(raw, "%s", rule)
}

// Files resolves the links and returns every file kept, sorted by path.
func (c *Collector) Files() ([]File, error) {
	byPath := map[string]link{}
	for _, l := range c.links {
		byPath[l.path] = l
	}
	for _, l := range c.links {
		f, err := c.resolve(l, byPath)
		if err != nil {
			return nil, err
		}
		if c.total+int64(len(f.Data)) > c.lim.MaxTotalBytes {
			return nil, c.refuse(l.raw, "the files reach %d bytes with this link's copy of %s, the limit is %d in total", c.total+int64(len(f.Data)), quote(f.Path), c.lim.MaxTotalBytes)
		}
		c.total += int64(len(f.Data))
		c.files[l.path] = &File{Path: l.path, Data: f.Data, Executable: f.Executable}
	}
	c.links = nil
	out := make([]File, 0, len(c.files))
	for _, f := range c.files {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// resolve follows l inside the archive to a regular file.
func (c *Collector) resolve(l link, links map[string]link) (*File, error) {
	cur := l
	for range maxLinkDepth {
		var to string
		if cur.hard {
			name, err := CleanName(cur.target)
			if err != nil {
				return nil, c.refuse(l.raw, "hard link to %s: %v", quote(cur.target), err)
			}
			to = name
		} else {
			switch {
			case cur.target == "":
				return nil, c.refuse(l.raw, "symbolic link with an empty target")
			case strings.HasPrefix(cur.target, "/"):
				return nil, c.refuse(l.raw, "symbolic link to the absolute path %s leaves the %s's root", quote(cur.target), c.noun)
			case strings.ContainsAny(cur.target, "\x00\\"):
				return nil, c.refuse(l.raw, "symbolic link target %s holds a NUL or a backslash", quote(cur.target))
			}
			to = path.Join(path.Dir(cur.path), cur.target)
			if to == ".." || strings.HasPrefix(to, "../") {
				return nil, c.refuse(l.raw, "symbolic link to %s leaves the %s's root", quote(cur.target), c.noun)
			}
		}
		if f, ok := c.files[to]; ok {
			return f, nil
		}
		if next, ok := links[to]; ok {
			cur = next
			continue
		}
		kind := "symbolic"
		if cur.hard {
			kind = "hard"
		}
		if c.dirs[to] || to == "." {
			return nil, c.refuse(l.raw, "%s link to the folder %s: links to folders are not followed", kind, quote(cur.target))
		}
		return nil, c.refuse(l.raw, "%s link to %s, which names no file kept from the %s", kind, quote(cur.target), c.noun)
	}
	return nil, c.refuse(l.raw, "chain of more than %d links", maxLinkDepth)
}
