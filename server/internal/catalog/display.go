package catalog

import (
	"os"
	"path/filepath"
	"strings"
)

// DisplaySource is how surfaces other than the server log name the
// source of an entry (Origin.Source, or a catalog source name such as
// "folder:<root>"): a folder or bundle root, which the server holds as
// an absolute path, is shown as its path relative to the server's working
// directory when it lies inside it ("examples/skills"), else as its last
// element ("skills"); other names are shown as they are. The operator's
// absolute paths stay in the server log, which names each folder's root
// at start; clients (skills::list, diagnostics, the web page, MCP) never
// learn the layout of the server's disk.
func DisplaySource(source string) string {
	prefix, root := "", source
	if i := strings.IndexByte(source, ':'); i > 0 && !filepath.IsAbs(source) {
		prefix, root = source[:i+1], source[i+1:]
	}
	if !filepath.IsAbs(root) {
		return source
	}
	return prefix + DisplayRoot(root)
}

// DisplayRoot is DisplaySource of an absolute folder root.
func DisplayRoot(root string) string {
	root = filepath.Clean(root)
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, root); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	if base := filepath.Base(root); base != string(filepath.Separator) && base != "." {
		return base
	}
	return "(root)"
}

// DisplayFile names a file of a folder (root absolute, rel relative to
// it) as DisplayRoot does the folder.
func DisplayFile(root, rel string) string {
	return DisplayRoot(root) + "/" + filepath.ToSlash(rel)
}
