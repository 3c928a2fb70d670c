package skillarchive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ReadDir reads the folder dir under the same rules as an archive: its
// links resolved inside it into copies (a link leaving it is refused),
// special files refused, the same caps. Every read goes through an
// os.Root of dir; a file is opened without blocking (a FIFO swapped in
// cannot hang the read) and must still be a regular file once open.
// Options.Noun defaults to "folder".
func ReadDir(dir string, opts Options) ([]File, error) {
	if opts.Noun == "" {
		opts.Noun = "folder"
	}
	if opts.Where == "" {
		opts.Where = dir
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, &EntryError{Where: opts.Where, Rule: fmt.Sprintf("cannot open the folder: %v", err)}
	}
	defer root.Close()
	c := NewCollector(opts)
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &EntryError{Where: opts.Where, Entry: p, Rule: fmt.Sprintf("cannot read: %v", err)}
		}
		if p == "." {
			return nil
		}
		switch mode := d.Type(); {
		case d.IsDir():
			if err := c.Dir(p + "/"); err != nil {
				return err
			}
			if opts.Skip != nil && opts.Skip(p) {
				return fs.SkipDir // never read
			}
			return nil
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				return &EntryError{Where: opts.Where, Entry: p, Rule: fmt.Sprintf("cannot read the link: %v", err)}
			}
			return c.Symlink(p, target)
		case mode.IsRegular():
			return readDirFile(c, root, p)
		default:
			return c.Special(p, "a "+specialKind(mode))
		}
	})
	if err != nil {
		var ee *EntryError
		if errors.As(err, &ee) {
			return nil, ee
		}
		return nil, err
	}
	return c.Files()
}

func readDirFile(c *Collector, root *os.Root, p string) error {
	if c.opts.Skip != nil && c.opts.Skip(p) {
		return c.File(p, 0, false, eofReader{}) // counted, never opened
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &EntryError{Where: c.Where(), Entry: p, Rule: fmt.Sprintf("cannot open: %v", err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &EntryError{Where: c.Where(), Entry: p, Rule: fmt.Sprintf("cannot read: %v", err)}
	}
	if !fi.Mode().IsRegular() {
		return c.Special(p, "a "+specialKind(fi.Mode()))
	}
	return c.File(p, fi.Size(), fi.Mode()&0o111 != 0, f)
}
