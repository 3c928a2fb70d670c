package treecheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err != nil {
		t.Fatalf("no go.work at %s: %v", dir, err)
	}
	return dir
}

// skipDir is a folder that holds no source of the repository: build
// output, installed dependencies, hidden folders, and unless testdata
// test data.
func skipDir(name string, testdata bool) bool {
	switch name {
	case "node_modules", "bin", "dist", "__pycache__", "venv":
		return true
	case "testdata":
		return !testdata
	}
	return strings.HasPrefix(name, ".") && name != "."
}

// walk calls f with the path (relative to the repository's root, with /)
// of every file of the repository, test data left out, whose name ends
// in one of exts.
func walk(t *testing.T, f func(rel, abs string), exts ...string) {
	t.Helper()
	walkTree(t, false, f, exts...)
}

// walkTree is walk, with the test data when testdata is true.
func walkTree(t *testing.T, testdata bool, f func(rel, abs string), exts ...string) {
	t.Helper()
	base := root(t)
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != base && skipDir(d.Name(), testdata) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(d.Name(), ext) {
				rel, _ := filepath.Rel(base, path)
				f(filepath.ToSlash(rel), path)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
