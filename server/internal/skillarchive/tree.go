package skillarchive

import (
	"fmt"
	"os"
	"path"
)

// WriteTree writes files (as Read returns them) under dir, which must
// exist and be empty: every path is checked again, every write goes
// through an os.Root of dir (so no path or link can lead outside it), and
// no file is overwritten.
func WriteTree(dir string, files []File) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	made := map[string]bool{}
	for _, f := range files {
		clean, err := CleanName(f.Path)
		if err != nil || clean != f.Path || clean == "" {
			return fmt.Errorf("write %s: not a clean relative path", quote(f.Path))
		}
		for _, d := range parents(clean) {
			if made[d] {
				continue
			}
			if err := root.Mkdir(d, dirMode); err != nil && !os.IsExist(err) {
				return fmt.Errorf("write %s: %w", path.Join(dir, d), err)
			}
			made[d] = true
		}
		mode := os.FileMode(fileMode)
		if f.Executable {
			mode = execMode
		}
		fh, err := root.OpenFile(clean, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("write %s: %w", path.Join(dir, clean), err)
		}
		_, werr := fh.Write(f.Data)
		cerr := fh.Close()
		if werr != nil || cerr != nil {
			return fmt.Errorf("write %s: %w", path.Join(dir, clean), firstErr(werr, cerr))
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
