package skillarchive

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

const skillMD = "---\nname: pdf\ndescription: Read PDF files.\n---\n# PDF\n\nUse scripts/x.py.\n"

func pdfFiles() []File {
	return []File{
		{Path: "scripts/x.py", Data: []byte("print('x')\n"), Executable: true},
		{Path: "SKILL.md", Data: []byte(skillMD)},
		{Path: "references/a-b.md", Data: []byte("# A-B\n")},
		{Path: "references/guide.md", Data: []byte("# Guide\n")},
		{Path: "assets/logo.png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}},
	}
}

func writeBoth(t *testing.T, s *Skill, layout Layout) (zipBytes, tgzBytes []byte) {
	t.Helper()
	var z, g bytes.Buffer
	if err := s.WriteZip(&z, layout); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteTarGz(&g, layout); err != nil {
		t.Fatal(err)
	}
	return z.Bytes(), g.Bytes()
}

// The same skill, its files given in any order, gives the same bytes.
func TestWriteIsDeterministic(t *testing.T) {
	a, err := NewSkill("pdf", pdfFiles())
	if err != nil {
		t.Fatal(err)
	}
	rev := pdfFiles()
	slices.Reverse(rev)
	b, err := NewSkill("pdf", rev)
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []Layout{Wrapped, Flat} {
		za, ga := writeBoth(t, a, layout)
		zb, gb := writeBoth(t, b, layout)
		zc, gc := writeBoth(t, a, layout) // again
		if sha256.Sum256(za) != sha256.Sum256(zb) || !bytes.Equal(za, zc) {
			t.Fatalf("layout %d: zip bytes differ between writes", layout)
		}
		if sha256.Sum256(ga) != sha256.Sum256(gb) || !bytes.Equal(ga, gc) {
			t.Fatalf("layout %d: tar.gz bytes differ between writes", layout)
		}
	}
	// A changed byte changes the digest.
	files := pdfFiles()
	files[2].Data = []byte("# A-B!\n")
	c, _ := NewSkill("pdf", files)
	zc, gc := writeBoth(t, c, Wrapped)
	za, ga := writeBoth(t, a, Wrapped)
	if bytes.Equal(za, zc) || bytes.Equal(ga, gc) {
		t.Fatal("different content, same archive")
	}
}

// Debian's unzip and tar list and unpack what WriteZip and WriteTarGz
// wrote: one top folder named after the skill with SKILL.md at its root
// (Wrapped), the folder's contents at the root (Flat), fixed times and
// modes, the executable bit kept.
func TestWrittenArchivesUnpackWithRealTools(t *testing.T) {
	needTools(t, "unzip", "tar")
	s, err := NewSkill("pdf", pdfFiles())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		layout Layout
		prefix string
	}{{Wrapped, "pdf/"}, {Flat, ""}} {
		z, g := writeBoth(t, s, tc.layout)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.zip"), z, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "s.tar.gz"), g, 0o644); err != nil {
			t.Fatal(err)
		}
		var want []string
		if tc.prefix != "" {
			want = append(want, tc.prefix)
		}
		want = append(want, tc.prefix+"SKILL.md", tc.prefix+"assets/", tc.prefix+"assets/logo.png",
			tc.prefix+"references/", tc.prefix+"references/a-b.md", tc.prefix+"references/guide.md",
			tc.prefix+"scripts/", tc.prefix+"scripts/x.py")
		if got := strings.Fields(sh(t, dir, "unzip", "-Z1", "s.zip")); !slices.Equal(got, want) {
			t.Fatalf("unzip -Z1:\n%v\nwant\n%v", got, want)
		}
		if got := strings.Fields(sh(t, dir, "tar", "-tzf", "s.tar.gz")); !slices.Equal(got, want) {
			t.Fatalf("tar -tzf:\n%v\nwant\n%v", got, want)
		}
		verbose := sh(t, dir, "tar", "--utc", "-tvzf", "s.tar.gz")
		for _, line := range strings.Split(strings.TrimSpace(verbose), "\n") {
			if !strings.Contains(line, "1980-01-01 00:00") {
				t.Fatalf("tar entry without the fixed time: %s", line)
			}
			exec := strings.HasSuffix(line, "scripts/x.py")
			dir := strings.HasSuffix(line, "/")
			switch {
			case dir && !strings.HasPrefix(line, "drwxr-xr-x"),
				exec && !strings.HasPrefix(line, "-rwxr-xr-x"),
				!dir && !exec && !strings.HasPrefix(line, "-rw-r--r--"):
				t.Fatalf("tar entry mode: %s", line)
			}
		}
		for _, unpack := range [][]string{{"unzip", "-q", "s.zip", "-d", "z"}, {"sh", "-c", "mkdir g && tar -xzf s.tar.gz -C g"}} {
			sh(t, dir, unpack[0], unpack[1:]...)
			out := filepath.Join(dir, unpack[len(unpack)-1])
			if unpack[0] == "sh" {
				out = filepath.Join(dir, "g")
			}
			for _, f := range pdfFiles() {
				p := filepath.Join(out, filepath.FromSlash(tc.prefix+f.Path))
				got, err := os.ReadFile(p)
				if err != nil || !bytes.Equal(got, f.Data) {
					t.Fatalf("%s: %s unpacked as %q (%v), want %q", unpack[0], p, got, err, f.Data)
				}
				fi, _ := os.Stat(p)
				if f.Executable != (fi.Mode()&0o100 != 0) {
					t.Fatalf("%s: %s mode %v", unpack[0], p, fi.Mode())
				}
			}
		}
	}
}

// What is written reads back the same through Read, whichever format.
func TestWriteReadRoundTrip(t *testing.T) {
	s, err := NewSkill("pdf", pdfFiles())
	if err != nil {
		t.Fatal(err)
	}
	z, g := writeBoth(t, s, Wrapped)
	want := pdfFiles()
	slices.SortFunc(want, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for name, data := range map[string][]byte{"zip": z, "tar.gz": g} {
		format, files, err := Read(bytes.NewReader(data), int64(len(data)), Options{Where: name})
		if err != nil || string(format) != name {
			t.Fatalf("%s: %s %v", name, format, err)
		}
		if len(files) != len(want) {
			t.Fatalf("%s: %v", name, paths(files))
		}
		for i, f := range files {
			if f.Path != "pdf/"+want[i].Path || !bytes.Equal(f.Data, want[i].Data) || f.Executable != want[i].Executable {
				t.Fatalf("%s: file %d is %s (exec %v), want pdf/%s (exec %v)", name, i, f.Path, f.Executable, want[i].Path, want[i].Executable)
			}
		}
	}
}

// SkillFromFS streams an fs.FS: the same bytes as NewSkill with the same
// files; a file that changes size between listing and writing fails the
// write; a symlink is refused.
func TestSkillFromFS(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, f := range pdfFiles() {
		mode := os.FileMode(0o644)
		if f.Executable {
			mode = 0o755
		}
		fsys[f.Path] = &fstest.MapFile{Data: f.Data, Mode: mode}
	}
	a, err := SkillFromFS("pdf", fsys)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSkill("pdf", pdfFiles())
	za, ga := writeBoth(t, a, Wrapped)
	zb, gb := writeBoth(t, b, Wrapped)
	if !bytes.Equal(za, zb) || !bytes.Equal(ga, gb) {
		t.Fatal("SkillFromFS and NewSkill write different bytes for the same files")
	}
	fsys["references/guide.md"].Data = []byte("# Guide, longer now\n")
	if err := a.WriteZip(&bytes.Buffer{}, Wrapped); err == nil || !strings.Contains(err.Error(), "changed while the archive was written") {
		t.Fatalf("changed file: %v", err)
	}
	fsys["link"] = &fstest.MapFile{Data: []byte("SKILL.md"), Mode: os.ModeSymlink}
	if _, err := SkillFromFS("pdf", fsys); err == nil || !strings.Contains(err.Error(), `"link" is not a regular file`) {
		t.Fatalf("symlink: %v", err)
	}
}

func TestNewSkillRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []File
		want  string
	}{
		{"pdf", []File{{Path: "README.md"}}, "has no SKILL.md at its root"},
		{"pdf", []File{{Path: "SKILL.md"}, {Path: "../x"}}, `".." component`},
		{"pdf", []File{{Path: "SKILL.md"}, {Path: "/etc/x"}}, "absolute path"},
		{"pdf", []File{{Path: "SKILL.md"}, {Path: "a//b"}}, "empty component"},
		{"pdf", []File{{Path: "SKILL.md"}, {Path: "./a"}}, "expected a clean relative path"},
		{"pdf", []File{{Path: "SKILL.md"}, {Path: "a"}, {Path: "a"}}, `"a" is given twice`},
		{"pdf", []File{{Path: "SKILL.md"}, {Path: "a"}, {Path: "a/b"}}, `"a" is both a file and the folder of "a/b"`},
		{"a/b", []File{{Path: "SKILL.md"}}, "cannot name a folder"},
		{"..", []File{{Path: "SKILL.md"}}, "cannot name a folder"},
		{"", []File{{Path: "SKILL.md"}}, "cannot name a folder"},
	} {
		if _, err := NewSkill(tc.name, tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSkill(%q, %v): %v, want %q", tc.name, paths(tc.files), err, tc.want)
		}
	}
}

// A lazy skill opens each file once per write, right before its entry,
// and writes the same bytes as the skill given in memory; the opener's
// verdict on the executable bit is kept. An opener that yields fewer or
// more bytes than announced fails the write, naming the file.
func TestLazySkill(t *testing.T) {
	opened := map[string]int{}
	lazy := func(files []File) []LazyFile {
		out := make([]LazyFile, len(files))
		for i, f := range files {
			out[i] = LazyFile{Path: f.Path, Size: int64(len(f.Data)), Open: func() (io.ReadCloser, bool, error) {
				opened[f.Path]++
				return io.NopCloser(bytes.NewReader(f.Data)), f.Executable, nil
			}}
		}
		return out
	}
	eager, err := NewSkill("pdf", pdfFiles())
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLazySkill("pdf", lazy(pdfFiles()))
	if err != nil {
		t.Fatal(err)
	}
	if len(opened) != 0 {
		t.Fatalf("NewLazySkill read files: %v", opened)
	}
	for _, layout := range []Layout{Wrapped, Flat} {
		ze, ge := writeBoth(t, eager, layout)
		zl, gl := writeBoth(t, l, layout)
		if !bytes.Equal(ze, zl) || !bytes.Equal(ge, gl) {
			t.Fatalf("layout %d: a lazy skill writes other bytes than the same skill in memory", layout)
		}
	}
	if opened["scripts/x.py"] != 4 || opened["SKILL.md"] != 4 {
		t.Fatalf("each file is opened once per write (4 writes): %v", opened)
	}

	short := lazy(pdfFiles())
	short[0].Size++ // announces one byte more than it yields
	s, err := NewLazySkill("pdf", short)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.WriteZip(&buf, Flat); err == nil || !strings.Contains(err.Error(), "scripts/x.py") {
		t.Fatalf("a file shorter than announced: %v", err)
	}
	if _, err := NewLazySkill("pdf", []LazyFile{{Path: "SKILL.md", Size: 1}}); err == nil {
		t.Fatal("a lazy file without an opener was accepted")
	}
	if _, err := NewLazySkill("pdf", []LazyFile{{Path: "../SKILL.md", Size: 1, Open: short[0].Open}}); err == nil {
		t.Fatal("a lazy file outside the skill was accepted")
	}
}
