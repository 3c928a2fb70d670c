package skillarchive

import (
	"archive/tar"
	"bytes"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRead: no input panics Read, and whatever it accepts keeps every
// rule: clean relative names, no duplicates, within the limits, and it
// writes under the folder given and nowhere else.
func FuzzRead(f *testing.F) {
	s, _ := NewSkill("pdf", pdfFiles())
	var z, g bytes.Buffer
	_ = s.WriteZip(&z, Wrapped)
	_ = s.WriteTarGz(&g, Flat)
	f.Add(z.Bytes())
	f.Add(g.Bytes())
	f.Add(overlappingZipBytes())
	var sym bytes.Buffer
	tw := tar.NewWriter(&sym)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "a", Size: 1, Mode: 0o644})
	_, _ = tw.Write([]byte("a"))
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "b/c", Linkname: "../a"})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: "d", Linkname: "b/c"})
	_ = tw.Close()
	f.Add(sym.Bytes())
	lim := Limits{MaxEntries: 64, MaxFiles: 32, MaxFileBytes: 1 << 16, MaxTotalBytes: 1 << 18, MaxInflated: 1 << 20, MaxRatio: 50}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, files, err := Read(bytes.NewReader(data), int64(len(data)), Options{Where: "fuzz", Limits: lim, Skip: hidden})
		if err != nil {
			if _, ok := err.(*EntryError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		seen := map[string]bool{}
		var total int64
		for _, fl := range files {
			if clean, err := CleanName(fl.Path); err != nil || clean != fl.Path || fl.Path == "" {
				t.Fatalf("accepted name %q (%v)", fl.Path, err)
			}
			if seen[strings.ToLower(fl.Path)] || hidden(fl.Path) {
				t.Fatalf("accepted %q twice, or a skipped name", fl.Path)
			}
			seen[strings.ToLower(fl.Path)] = true
			if int64(len(fl.Data)) > lim.MaxFileBytes {
				t.Fatalf("file %q of %d bytes", fl.Path, len(fl.Data))
			}
			total += int64(len(fl.Data))
		}
		if total > lim.MaxTotalBytes || len(files) > lim.MaxFiles {
			t.Fatalf("%d files, %d bytes", len(files), total)
		}
		dir := t.TempDir()
		if err := WriteTree(filepath.Join(dir), files); err != nil {
			t.Fatalf("WriteTree of accepted files: %v", err)
		}
	})
}

// FuzzCleanName: an accepted name is relative, clean, valid UTF-8 and
// never leaves the root.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"a/b", "./a", "../a", "/a", "a//b", "a/./b", "C:/x", "a\\b", "a/", ".", "./", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, err := CleanName(raw)
		if err != nil || name == "" {
			return
		}
		if !utf8.ValidString(name) || path.Clean(name) != name || path.IsAbs(name) || name == ".." ||
			strings.HasPrefix(name, "../") || strings.ContainsAny(name, "\x00\\") || !filepath.IsLocal(name) {
			t.Fatalf("CleanName(%q) = %q", raw, name)
		}
	})
}

func overlappingZipBytes() []byte {
	t := &testing.T{}
	return overlappingZip(t)
}
