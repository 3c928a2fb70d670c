package skillarchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/iii-skills/skills/server/internal/testutil"
)

const tenGiB = 10 << 30

// tarGzBomb streams a valid .tar.gz holding SKILL.md and one entry, name,
// of size zero bytes, compressed as it is read: nothing past what the
// reader takes is ever produced. consumed counts the compressed bytes
// read.
func tarGzBomb(name string, size int64) (r io.ReadCloser, consumed *int64) {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestCompression)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "SKILL.md", Mode: 0o644, Size: int64(len(skillMD))})
		if err == nil {
			_, err = io.WriteString(tw, skillMD)
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size})
		}
		zeros := make([]byte, 1<<20)
		for left := size; err == nil && left > 0; left -= int64(len(zeros)) {
			_, err = tw.Write(zeros[:min(left, int64(len(zeros)))])
		}
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	n := new(int64)
	return &countedPipe{pr, n}, n
}

type countedPipe struct {
	*io.PipeReader
	n *int64
}

func (c *countedPipe) Read(p []byte) (int, error) {
	n, err := c.PipeReader.Read(p)
	*c.n += int64(n)
	return n, err
}

func zipBomb(t *testing.T, name string, size, declared int64) []byte {
	t.Helper()
	return testutil.ZipBomb(t, skillMD, name, size, declared)
}

// The bomb generators make archives the real tools accept whole (checked
// on a 64 MiB one): the refusals below are of real bombs.
func TestBombGeneratorsAreValidArchives(t *testing.T) {
	needTools(t, "unzip", "tar")
	dir := t.TempDir()
	z := zipBomb(t, "zeros", 64<<20, 64<<20)
	r, _ := tarGzBomb("zeros", 64<<20)
	g, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.zip"), z, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.tar.gz"), g, 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "unzip", "-tq", "b.zip")
	sh(t, dir, "tar", "-tzf", "b.tar.gz")
	if len(z) > 100<<10 || len(g) > 200<<10 {
		t.Fatalf("64 MiB of zeros compress to %d (zip) and %d (tar.gz) bytes: not a bomb", len(z), len(g))
	}
}

// 10 GiB bombs: refused having inflated at most a few MiB, whether the
// archive declares the size (refused before inflating), hides the entry
// from the files kept (the tar stream must still be inflated through it:
// the ratio stops it), lies about it (zip), or only the byte cap applies.
func TestTenGiBBombsAreRefused(t *testing.T) {
	t.Run("tar.gz declared", func(t *testing.T) {
		r, consumed := tarGzBomb("zeros", tenGiB)
		defer r.Close()
		_, err := ReadTarGz(r, Options{Where: "bomb.tar.gz", Skip: hidden})
		wantRefused(t, err, "zeros", "file of 10737418240 bytes, the limit is 16777216 per file")
		if *consumed > 64<<10 {
			t.Fatalf("read %d compressed bytes before refusing", *consumed)
		}
	})
	t.Run("tar.gz skipped entry", func(t *testing.T) {
		r, consumed := tarGzBomb(".zeros", tenGiB)
		defer r.Close()
		_, err := ReadTarGz(r, Options{Where: "bomb.tar.gz", Skip: hidden})
		wantRefused(t, err, ".zeros", "decompression bomb", "inflates to more than 200 times")
		if *consumed > 64<<10 {
			t.Fatalf("read %d compressed bytes before refusing", *consumed)
		}
	})
	t.Run("tar.gz byte cap", func(t *testing.T) {
		r, consumed := tarGzBomb(".zeros", tenGiB)
		defer r.Close()
		_, err := ReadTarGz(r, Options{Where: "bomb.tar.gz", Skip: hidden, Limits: Limits{MaxRatio: 1 << 40, MaxInflated: 32 << 20}})
		wantRefused(t, err, ".zeros", "more than 33554432 bytes inflated from the archive")
		if *consumed > 1<<20 {
			t.Fatalf("read %d compressed bytes before refusing", *consumed)
		}
	})
	t.Run("zip declared", func(t *testing.T) {
		z := zipBomb(t, "zeros", tenGiB, tenGiB)
		_, _, err := Read(bytes.NewReader(z), int64(len(z)), Options{Where: "bomb.zip"})
		wantRefused(t, err, "zeros", "file of 10737418240 bytes, the limit is 16777216 per file")
	})
	t.Run("zip lying", func(t *testing.T) {
		z := zipBomb(t, "zeros", tenGiB, 1000)
		_, _, err := Read(bytes.NewReader(z), int64(len(z)), Options{Where: "bomb.zip"})
		wantRefused(t, err, "zeros", "inflates past the 1000 bytes its header declares: a forged size")
	})
	t.Run("zip ratio", func(t *testing.T) {
		z := zipBomb(t, "zeros", 8<<20, 8<<20)
		_, _, err := Read(bytes.NewReader(z), int64(len(z)), Options{Where: "bomb.zip"})
		wantRefused(t, err, "zeros", "decompression bomb")
	})
}
