package skillsprotocol

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// The fixture bundles travel inside the package (and so inside the
// skills-conformance binary): a registry under test serves what
// WriteBundles writes. conf.symlink's escaping link cannot be embedded;
// WriteBundles recreates it.
//
//go:embed testdata/bundles
var bundles embed.FS

//go:embed testdata/results.schema.json
var resultsSchema []byte

// symlinks are the fixture links WriteBundles creates: path below the
// bundles folder → link target.
var symlinks = map[string]string{"conf.symlink/resources/shadow": "/etc/shadow"}

// WriteBundles writes the fixture bundles into dir (created if missing),
// for `skills --sp-bundles dir` or any other Skills Protocol server.
func WriteBundles(dir string) error {
	root, err := fs.Sub(bundles, "testdata/bundles")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.CopyFS(dir, root); err != nil {
		return err
	}
	for rel, target := range symlinks {
		link := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}
