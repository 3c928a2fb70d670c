package skillarchive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

var hidden = func(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.HasPrefix(c, ".") {
			return true
		}
	}
	return false
}

// A skill folder packed by Debian's zip and tar (./ prefixes, folder
// entries, an executable, a link inside the folder, a hard link, hidden
// files skipped) reads back as its files; links become copies.
func TestReadArchivesMadeByRealTools(t *testing.T) {
	needTools(t, "zip", "tar")
	base := t.TempDir()
	src := filepath.Join(base, "pdf")
	put(t, src, map[string]string{
		"SKILL.md":           skillMD,
		"scripts/x.py":       "print('x')\n",
		"references/a.md":    "# A\n",
		".git/config":        "[core]\n",
		"references/.draft":  "draft",
		"assets/logo.png":    "\x89PNG\x00\x01",
		"assets/sub/deep.md": "deep\n",
	})
	if err := os.Chmod(filepath.Join(src, "scripts/x.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../references/a.md", filepath.Join(src, "assets/a-link.md")); err != nil {
		t.Fatal(err)
	}
	sh(t, base, "zip", "-q", "-r", "-y", "pdf.zip", "pdf")
	sh(t, base, "tar", "-czf", "pdf.tar.gz", "pdf")
	sh(t, src, "tar", "-czf", "../flat.tgz", ".")                                                  // ./SKILL.md …
	sh(t, base, "tar", "--hard-dereference", "-cf", "plain.tar", "pdf")                            // uncompressed
	if err := os.Link(filepath.Join(src, "SKILL.md"), filepath.Join(src, "HARD.md")); err != nil { // a hard link
		t.Fatal(err)
	}
	sh(t, base, "tar", "-czf", "hard.tar.gz", "pdf")
	want := []string{"SKILL.md", "assets/a-link.md", "assets/logo.png", "assets/sub/deep.md", "references/a.md", "scripts/x.py"}
	for _, tc := range []struct {
		file   string
		format Format
		prefix string
		extra  []string
	}{
		{"pdf.zip", FormatZip, "pdf/", nil},
		{"pdf.tar.gz", FormatTarGz, "pdf/", nil},
		{"flat.tgz", FormatTarGz, "", nil},
		{"plain.tar", FormatTar, "pdf/", nil},
		{"hard.tar.gz", FormatTarGz, "pdf/", []string{"HARD.md"}},
	} {
		format, files, err := readArchive(t, filepath.Join(base, tc.file), Options{Skip: hidden})
		if err != nil || format != tc.format {
			t.Fatalf("%s: %s %v", tc.file, format, err)
		}
		var wantPaths []string
		for _, p := range append(slices.Clone(want), tc.extra...) {
			wantPaths = append(wantPaths, tc.prefix+p)
		}
		slices.Sort(wantPaths)
		if !slices.Equal(paths(files), wantPaths) {
			t.Fatalf("%s: %v\nwant %v", tc.file, paths(files), wantPaths)
		}
		link, _ := byPath(files, tc.prefix+"assets/a-link.md")
		if string(link.Data) != "# A\n" {
			t.Fatalf("%s: the link inside the folder reads %q, want a copy of references/a.md", tc.file, link.Data)
		}
		x, _ := byPath(files, tc.prefix+"scripts/x.py")
		if !x.Executable {
			t.Fatalf("%s: scripts/x.py lost its executable bit", tc.file)
		}
		if tc.extra != nil {
			h, _ := byPath(files, tc.prefix+"HARD.md")
			if string(h.Data) != skillMD {
				t.Fatalf("%s: hard link reads %q", tc.file, h.Data)
			}
		}
	}
}

// Hostile archives made by the real tools: each refused with the entry
// and the rule named.
func TestHostileArchivesMadeByRealTools(t *testing.T) {
	needTools(t, "zip", "tar")
	base := t.TempDir()
	work := filepath.Join(base, "work", "in")
	put(t, work, map[string]string{"SKILL.md": skillMD})
	put(t, base, map[string]string{"work/outside.txt": "outside\n"})
	// zip slip: Info-ZIP stores "../outside.txt" as given.
	sh(t, work, "zip", "-q", "../../slip.zip", "SKILL.md", "../outside.txt")
	// tar -P keeps "../" and absolute names.
	sh(t, work, "tar", "-cPzf", "../../slip.tar.gz", "SKILL.md", "../outside.txt")
	sh(t, work, "tar", "-cPzf", "../../abs.tar.gz", "SKILL.md", filepath.Join(base, "work/outside.txt"))
	// Symlinks leaving the root, by zip -y and tar.
	if err := os.Symlink("/etc/passwd", filepath.Join(work, "passwd")); err != nil {
		t.Fatal(err)
	}
	sh(t, work, "zip", "-q", "-y", "../../abs-link.zip", "SKILL.md", "passwd")
	sh(t, work, "tar", "-czf", "../../abs-link.tar.gz", "SKILL.md", "passwd")
	if err := os.Remove(filepath.Join(work, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside.txt", filepath.Join(work, "up")); err != nil {
		t.Fatal(err)
	}
	sh(t, work, "tar", "-czf", "../../up-link.tar.gz", "SKILL.md", "up")
	sh(t, work, "zip", "-q", "-y", "../../up-link.zip", "SKILL.md", "up")
	if err := os.Remove(filepath.Join(work, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(work, "self")); err != nil {
		t.Fatal(err)
	}
	sh(t, work, "tar", "-czf", "../../dir-link.tar.gz", "SKILL.md", "self")
	if err := os.Remove(filepath.Join(work, "self")); err != nil {
		t.Fatal(err)
	}
	// A device file, by tar.
	sh(t, "/", "tar", "-czf", filepath.Join(base, "dev.tar.gz"), "dev/null")
	// A decompression bomb by the real tools: 40 MiB of zeros in a hidden
	// file (skipped, so only the inflated-bytes rules can stop it) and in a
	// plain one (its declared size is refused before inflating).
	zeros := filepath.Join(base, "work", "zeros")
	if err := os.Truncate(mustCreate(t, zeros), 40<<20); err != nil {
		t.Fatal(err)
	}
	bomb := filepath.Join(base, "bomb")
	put(t, bomb, map[string]string{"SKILL.md": skillMD})
	if err := os.Rename(zeros, filepath.Join(bomb, ".zeros")); err != nil {
		t.Fatal(err)
	}
	sh(t, bomb, "tar", "-czf", "../hidden-bomb.tar.gz", ".zeros", "SKILL.md")
	if err := os.Rename(filepath.Join(bomb, ".zeros"), filepath.Join(bomb, "zeros")); err != nil {
		t.Fatal(err)
	}
	sh(t, bomb, "zip", "-q", "../bomb.zip", "SKILL.md", "zeros")

	for _, tc := range []struct {
		file, entry string
		parts       []string
	}{
		{"slip.zip", "../outside.txt", []string{"slip.zip: entry \"../outside.txt\"", `".." component`, "zip slip"}},
		{"slip.tar.gz", "../outside.txt", []string{`".." component`}},
		{"abs.tar.gz", filepath.Join(base, "work/outside.txt"), []string{"absolute path"}},
		{"abs-link.zip", "passwd", []string{`symbolic link to the absolute path "/etc/passwd" leaves the archive's root`}},
		{"abs-link.tar.gz", "passwd", []string{`"/etc/passwd"`, "leaves the archive's root"}},
		{"up-link.tar.gz", "up", []string{`symbolic link to "../../outside.txt" leaves the archive's root`}},
		{"up-link.zip", "up", []string{"leaves the archive's root"}},
		{"dir-link.tar.gz", "self", []string{"links to folders are not followed"}},
		{"dev.tar.gz", "dev/null", []string{"a character device"}},
		{"hidden-bomb.tar.gz", ".zeros", []string{"decompression bomb"}},
		{"bomb.zip", "zeros", []string{"file of 41943040 bytes, the limit is 16777216 per file"}},
	} {
		_, _, err := readArchive(t, filepath.Join(base, tc.file), Options{Skip: hidden})
		wantRefused(t, err, tc.entry, tc.parts...)
	}
}

func mustCreate(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// tarOf builds a tar (gzip-compressed when gz) from headers and bodies.
func tarOf(t *testing.T, gz bool, entries ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for i := 0; i < len(entries); i++ {
		h := entries[i].(*tar.Header)
		body := ""
		if i+1 < len(entries) {
			if s, ok := entries[i+1].(string); ok {
				body = s
				i++
			}
		}
		if h.Typeflag == tar.TypeReg || h.Typeflag == 0 {
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func reg(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeReg, Name: name} }

// Crafted archives no tool writes willingly: each refused with its rule.
func TestCraftedHostileArchives(t *testing.T) {
	sym := func(name, target string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target}
	}
	hard := func(name, target string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		entry   string
		parts   []string
		lim     Limits
	}{
		{"symlink then a file through it", tarOf(t, true, sym("d", "/tmp"), reg("d/evil"), "x"), "d/evil",
			[]string{`"d" is both a file and the folder of this entry`}, Limits{}},
		{"duplicate", tarOf(t, true, reg("a"), "1", reg("a"), "2"), "a", []string{"a second entry with the same name"}, Limits{}},
		{"letter case", tarOf(t, true, reg("SKILL.md"), "1", reg("skill.md"), "2"), "skill.md",
			[]string{`differs only in letter case from "SKILL.md"`}, Limits{}},
		{"file then folder", tarOf(t, true, reg("a"), "1", reg("a/b"), "2"), "a/b", []string{`"a" is both a file and the folder`}, Limits{}},
		{"folder then file", tarOf(t, true, &tar.Header{Typeflag: tar.TypeDir, Name: "a/"}, reg("a"), "1"), "a",
			[]string{`"a" is both a folder and a file`}, Limits{}},
		{"not UTF-8", tarOf(t, true, reg("a\xff.md"), "1"), "a\xff.md", []string{"not valid UTF-8"}, Limits{}},
		{"control", tarOf(t, true, reg("a\nb"), "1"), "a\nb", []string{"control character U+000A"}, Limits{}},
		{"backslash", tarOf(t, true, reg(`..\..\evil`), "1"), `..\..\evil`, []string{"backslash"}, Limits{}},
		{"drive", tarOf(t, true, reg("C:/evil"), "1"), "C:/evil", []string{"drive letter"}, Limits{}},
		{"hard link out", tarOf(t, true, hard("h", "../../etc/passwd")), "h", []string{`hard link to "../../etc/passwd"`, `".." component`}, Limits{}},
		{"hard link absolute", tarOf(t, true, hard("h", "/etc/passwd")), "h", []string{"absolute path"}, Limits{}},
		{"dangling", tarOf(t, true, sym("l", "nothing")), "l", []string{`names no file kept`}, Limits{}},
		{"to a skipped file", tarOf(t, true, reg(".secret"), "s", sym("l", ".secret")), "l", []string{`names no file kept`}, Limits{}},
		{"loop", tarOf(t, true, sym("a", "b"), sym("b", "a")), "a", []string{"chain of more than 40 links"}, Limits{}},
		{"fifo", tarOf(t, true, &tar.Header{Typeflag: tar.TypeFifo, Name: "p"}), "p", []string{"named pipe"}, Limits{}},
		{"block device", tarOf(t, true, &tar.Header{Typeflag: tar.TypeBlock, Name: "b"}), "b", []string{"block device"}, Limits{}},
		{"too many files", tarOf(t, true, reg("a"), "1", reg("b"), "2", reg("c"), "3"), "c",
			[]string{"more than 2 files"}, Limits{MaxFiles: 2}},
		{"too many entries", tarOf(t, true, reg(".a"), "1", reg(".b"), "2", reg(".c"), "3"), ".c",
			[]string{"more than 2 entries"}, Limits{MaxEntries: 2}},
		{"file too large", tarOf(t, true, reg("a"), "12345"), "a", []string{"file of 5 bytes, the limit is 4 per file"}, Limits{MaxFileBytes: 4}},
		{"total too large", tarOf(t, true, reg("a"), "1234", reg("b"), "1234"), "b",
			[]string{"the files reach 8 bytes with this one, the limit is 6 in total"}, Limits{MaxFileBytes: 4, MaxTotalBytes: 6}},
		{"copies count", tarOf(t, true, reg("a"), "1234", sym("b", "a")), "b",
			[]string{`the files reach 8 bytes with this link's copy of "a", the limit is 6 in total`}, Limits{MaxTotalBytes: 6}},
		{"long name", tarOf(t, true, reg(strings.Repeat("a", 256)), "1"), strings.Repeat("a", 256), []string{"component of 256 bytes"}, Limits{}},
		{"not an archive", []byte("hello, world"), "", []string{"not a .zip, .tar.gz or .tar archive"}, Limits{}},
		{"broken gzip", append([]byte{0x1f, 0x8b}, "garbage"...), "", []string{"not a readable gzip stream"}, Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Read(bytes.NewReader(tc.archive), int64(len(tc.archive)), Options{Where: "x.tgz", Skip: hidden, Limits: tc.lim})
			wantRefused(t, err, tc.entry, tc.parts...)
		})
	}
}

// Zip entries: encrypted, a device by its mode bits, and two names for
// one compressed stream (the overlapping-entries zip bomb).
func TestCraftedHostileZips(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "dev", Method: zip.Store}
	h.SetMode(os.ModeDevice | os.ModeCharDevice | 0o644)
	w, _ := zw.CreateHeader(h)
	_, _ = w.Write([]byte("x"))
	_ = zw.Close()
	_, _, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{Where: "d.zip"})
	wantRefused(t, err, "dev", "a character device")

	buf.Reset()
	zw = zip.NewWriter(&buf)
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "secret", Method: zip.Store, Flags: 0x1})
	_, _ = w.Write([]byte("x"))
	_ = zw.Close()
	_, _, err = Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{Where: "e.zip"})
	wantRefused(t, err, "secret", "an encrypted entry")

	buf.Reset()
	zw = zip.NewWriter(&buf)
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "a\x00b", Method: zip.Store})
	_, _ = w.Write([]byte("x"))
	_ = zw.Close()
	_, _, err = Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{Where: "n.zip"})
	wantRefused(t, err, "a\x00b", "NUL byte")

	// More entries than the cap, counted before archive/zip reads them.
	buf.Reset()
	zw = zip.NewWriter(&buf)
	for i := range 20 {
		_, _ = zw.Create(strings.Repeat("x", i+1))
	}
	_ = zw.Close()
	_, _, err = Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{Where: "many.zip", Limits: Limits{MaxEntries: 10}})
	wantRefused(t, err, "", "the archive lists 20 entries, the limit is 10")
	// Past 65 535 entries the count is in the zip64 record.
	buf.Reset()
	zw = zip.NewWriter(&buf)
	for i := range 70000 {
		_, _ = zw.CreateHeader(&zip.FileHeader{Name: strconv.Itoa(i), Method: zip.Store})
	}
	_ = zw.Close()
	_, _, err = Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{Where: "many.zip"})
	wantRefused(t, err, "", "the archive lists 70000 entries, the limit is 16384")

	overlap := overlappingZip(t)
	_, _, err = Read(bytes.NewReader(overlap), int64(len(overlap)), Options{Where: "o.zip"})
	wantRefused(t, err, "b.txt", `its data overlaps the data of "a.txt"`, "zip bomb")
}

// overlappingZip is a zip whose central directory lists one local entry
// twice, under a.txt and b.txt.
func overlappingZip(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "a.txt", Method: zip.Deflate})
	_, _ = w.Write(bytes.Repeat([]byte("a"), 1000))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	eocd := bytes.LastIndex(b, []byte("PK\x05\x06"))
	cd := bytes.Index(b, []byte("PK\x01\x02"))
	rec := slices.Clone(b[cd:eocd])
	second := slices.Clone(rec)
	copy(second[46:], "b") // a.txt → b.txt, same local header offset
	out := slices.Clone(b[:cd])
	out = append(out, rec...)
	out = append(out, second...)
	end := slices.Clone(b[eocd:])
	le16 := func(p []byte, v int) { p[0], p[1] = byte(v), byte(v>>8) }
	le32 := func(p []byte, v int) { p[0], p[1], p[2], p[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
	le16(end[8:], 2)
	le16(end[10:], 2)
	le32(end[12:], 2*len(rec))
	le32(end[16:], cd)
	return append(out, end...)
}

// ReadDir applies the archive rules to a folder on disk.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"SKILL.md": skillMD, "a/b.md": "b\n", ".git/HEAD": "ref\n"})
	if err := os.Symlink("a/b.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	files, err := ReadDir(dir, Options{Skip: hidden})
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(files); !slices.Equal(got, []string{"SKILL.md", "a/b.md", "link.md"}) {
		t.Fatalf("%v", got)
	}
	if l, _ := byPath(files, "link.md"); string(l.Data) != "b\n" {
		t.Fatalf("link.md: %q", l.Data)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	_, err = ReadDir(dir, Options{Where: "pdf", Skip: hidden})
	wantRefused(t, err, "passwd", `symbolic link to the absolute path "/etc/passwd" leaves the folder's root`)
	if err := os.Remove(filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadDir(dir, Options{Where: "pdf", Skip: hidden})
	wantRefused(t, err, "fifo", "a named pipe (FIFO)")
}
