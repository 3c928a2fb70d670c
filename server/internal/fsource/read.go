package fsource

// Reading files through the folder's root: caps, non-blocking opens, skip
// reasons, lazy loaders and markdown splitting.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/iii-skills/skills/server/internal/catalog"
)

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
// read errors (absolute path, 256 KiB cap, empty body unless allowEmpty:
// an Agent Skills SKILL.md may be frontmatter alone).
func (f *folder) bodyLoader(rel string, allowEmpty bool) catalog.Loader {
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
		if !allowEmpty && !checkBody(body) {
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
