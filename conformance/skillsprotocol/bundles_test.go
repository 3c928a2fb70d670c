package skillsprotocol

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The embedded fixtures match testdata/bundles file for file, and the
// escaping symlink is written as a link, never as the target's content.
func TestWriteBundles(t *testing.T) {
	dir := t.TempDir()
	if err := WriteBundles(dir); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	_ = filepath.WalkDir("testdata/bundles", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel("testdata/bundles", p)
			want[rel] = true
		}
		return err
	})
	got := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got[rel] = true
		}
		return err
	})
	for f := range want {
		if !got[f] {
			t.Errorf("%s missing from the written bundles", f)
		}
	}
	for f := range got {
		if !want[f] {
			t.Errorf("%s written but not in testdata/bundles", f)
		}
	}
	link := filepath.Join(dir, "conf.symlink", "resources", "shadow")
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is not a symlink (%v, %v)", link, fi, err)
	}
}
