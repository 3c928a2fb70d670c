package skillarchive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// Layout is where a skill's files sit in its archive.
type Layout int

const (
	// Wrapped puts every file under one top folder named after the skill
	// (what the Anthropic and OpenAI skills APIs accept for upload).
	Wrapped Layout = iota
	// Flat puts the skill folder's contents at the archive's root (the
	// Agent Skills discovery RFC's archives).
	Flat
)

// SkillFile is the file every skill has at its root.
const SkillFile = "SKILL.md"

// Epoch is the time on every written entry: 1980-01-01T00:00:00Z, the
// earliest a zip's MS-DOS time can hold.
var Epoch = time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC)

// Modes of written entries.
const (
	fileMode = 0o644
	execMode = 0o755
	dirMode  = 0o755
)

// entry is one file to write; open streams its bytes and says whether
// they make the file executable (besides executable).
type entry struct {
	path       string
	size       int64
	executable bool
	open       func() (io.ReadCloser, bool, error)
}

// Skill is a skill checked for writing: a name and its files, sorted.
type Skill struct {
	name    string
	entries []entry
}

// Name is the skill's name (its archive's top folder in the Wrapped
// layout).
func (s *Skill) Name() string { return s.name }

// NewSkill checks a skill given as files (SKILL.md among them, at the
// root) and keeps them for writing. The files are not copied.
func NewSkill(name string, files []File) (*Skill, error) {
	entries := make([]entry, len(files))
	for i, f := range files {
		data := f.Data
		entries[i] = entry{path: f.Path, size: int64(len(data)), executable: f.Executable,
			open: func() (io.ReadCloser, bool, error) { return io.NopCloser(bytes.NewReader(data)), false, nil }}
	}
	return newSkill(name, entries)
}

// LazyFile is a file whose bytes are read only while an archive is
// written: Open is called once per write, right before the file's entry
// (so a reader that fetches files from elsewhere holds one at a time),
// and must yield exactly Size bytes; executable sets the file's mode to
// 0755 (a caller that decides by the bytes, a "#!" line say, can).
type LazyFile struct {
	Path string
	Size int64
	Open func() (data io.ReadCloser, executable bool, err error)
}

// NewLazySkill checks a skill given as lazy files (SKILL.md among them,
// at the root) and keeps them for writing; nothing is read yet.
func NewLazySkill(name string, files []LazyFile) (*Skill, error) {
	entries := make([]entry, len(files))
	for i, f := range files {
		if f.Size < 0 || f.Open == nil {
			return nil, fmt.Errorf("skill %s: file %s: expected a size >= 0 and an opener", quote(name), quote(f.Path))
		}
		entries[i] = entry{path: f.Path, size: f.Size, open: f.Open}
	}
	return newSkill(name, entries)
}

// SkillFromFS checks the skill whose folder is fsys (SKILL.md at its
// root). Its files are listed and their sizes taken now; their bytes are
// read while the archive is written, and a file whose size changed in
// between fails the write. Anything but regular files and folders (a
// symlink, a device) is refused.
func SkillFromFS(name string, fsys fs.FS) (*Skill, error) {
	var entries []entry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("skill %s: %s is not a regular file (%v): only files and folders are written", quote(name), quote(p), d.Type())
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		entries = append(entries, entry{path: p, size: fi.Size(), executable: fi.Mode()&0o111 != 0,
			open: func() (io.ReadCloser, bool, error) { f, err := fsys.Open(p); return f, false, err }})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return newSkill(name, entries)
}

func newSkill(name string, entries []entry) (*Skill, error) {
	if clean, err := CleanName(name); err != nil || clean != name || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("skill name %s cannot name a folder: expected one path component (an Agent Skills name such as pdf-processing)", quote(name))
	}
	seen := map[string]bool{}
	hasSkillFile := false
	for i, e := range entries {
		clean, err := CleanName(e.path)
		if err != nil {
			return nil, fmt.Errorf("skill %s: file %s: %v", name, quote(e.path), err)
		}
		if clean != e.path || clean == "" {
			return nil, fmt.Errorf("skill %s: file %s: expected a clean relative path (%s)", name, quote(e.path), quote(clean))
		}
		if seen[clean] {
			return nil, fmt.Errorf("skill %s: file %s is given twice", name, quote(clean))
		}
		seen[clean] = true
		hasSkillFile = hasSkillFile || clean == SkillFile
		entries[i].path = clean
	}
	for p := range seen {
		for _, dir := range parents(p) {
			if seen[dir] {
				return nil, fmt.Errorf("skill %s: %s is both a file and the folder of %s", name, quote(dir), quote(p))
			}
		}
	}
	if !hasSkillFile {
		return nil, fmt.Errorf("skill %s has no %s at its root", name, SkillFile)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	return &Skill{name: name, entries: entries}, nil
}

// archivePath is where a file sits in the archive.
func (s *Skill) archivePath(p string, layout Layout) string {
	if layout == Flat {
		return p
	}
	return s.name + "/" + p
}

// dirsBefore lists the folders to announce before path p (those not yet
// announced in done), outermost first.
func dirsBefore(p string, done map[string]bool) []string {
	var out []string
	for _, d := range parents(p) {
		if !done[d] {
			done[d] = true
			out = append(out, d)
		}
	}
	return out
}

// WriteZip streams the skill as a zip archive (deflated entries).
func (s *Skill) WriteZip(w io.Writer, layout Layout) error {
	zw := zip.NewWriter(w)
	done := map[string]bool{}
	for _, e := range s.entries {
		ap := s.archivePath(e.path, layout)
		for _, d := range dirsBefore(ap, done) {
			h := &zip.FileHeader{Name: d + "/", Method: zip.Store, Modified: Epoch}
			h.SetMode(fs.ModeDir | dirMode)
			if _, err := zw.CreateHeader(h); err != nil {
				return err
			}
		}
		rc, exec, err := openEntry(e)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: ap, Method: zip.Deflate, Modified: Epoch}
		h.SetMode(modeOf(e, exec))
		fw, err := zw.CreateHeader(h)
		if err == nil {
			err = copyEntry(fw, e, rc)
		}
		rc.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// WriteTarGz streams the skill as a gzip-compressed tar archive.
func (s *Skill) WriteTarGz(w io.Writer, layout Layout) error {
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	done := map[string]bool{}
	for _, e := range s.entries {
		ap := s.archivePath(e.path, layout)
		for _, d := range dirsBefore(ap, done) {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: dirMode, ModTime: Epoch}); err != nil {
				return err
			}
		}
		rc, exec, err := openEntry(e)
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: ap, Mode: int64(modeOf(e, exec)), Size: e.size, ModTime: Epoch}
		err = tw.WriteHeader(h)
		if err == nil {
			err = copyEntry(tw, e, rc)
		}
		rc.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func modeOf(e entry, exec bool) fs.FileMode {
	if e.executable || exec {
		return execMode
	}
	return fileMode
}

// openEntry opens e for writing: its bytes and whether they make it
// executable.
func openEntry(e entry) (io.ReadCloser, bool, error) {
	rc, exec, err := e.open()
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", e.path, err)
	}
	return rc, exec, nil
}

// copyEntry writes e's bytes from rc, which must be exactly e.size of them.
func copyEntry(w io.Writer, e entry, rc io.Reader) error {
	n, err := io.Copy(w, io.LimitReader(rc, e.size+1))
	switch {
	case err != nil:
		return fmt.Errorf("read %s: %w", e.path, err)
	case n != e.size:
		return fmt.Errorf("read %s: it changed while the archive was written (%d bytes, expected %d)", e.path, n, e.size)
	}
	return nil
}
