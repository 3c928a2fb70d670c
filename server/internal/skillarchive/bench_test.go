package skillarchive

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchSkill is a skill of the common shape: a SKILL.md, 40 text files of
// 8 KiB and one 256 KiB binary asset (about 580 KiB).
func benchSkill(b *testing.B) ([]File, int64) {
	b.Helper()
	files := []File{{Path: "SKILL.md", Data: []byte(skillMD + strings.Repeat("Follow the steps.\n", 400))}}
	for i := range 40 {
		files = append(files, File{Path: fmt.Sprintf("references/r%02d.md", i), Data: []byte(strings.Repeat(fmt.Sprintf("line %d of a reference\n", i), 350))})
	}
	blob := make([]byte, 256<<10)
	_, _ = rand.Read(blob)
	files = append(files, File{Path: "assets/blob.bin", Data: blob})
	var n int64
	for _, f := range files {
		n += int64(len(f.Data))
	}
	return files, n
}

func BenchmarkWrite(b *testing.B) {
	files, n := benchSkill(b)
	s, err := NewSkill("pdf", files)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		write func(io.Writer, Layout) error
	}{{"zip", s.WriteZip}, {"tar.gz", s.WriteTarGz}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(n)
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if err := tc.write(&out, Wrapped); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.Len()), "archive-bytes")
		})
	}
}

func BenchmarkRead(b *testing.B) {
	files, n := benchSkill(b)
	s, _ := NewSkill("pdf", files)
	var z, g bytes.Buffer
	_ = s.WriteZip(&z, Wrapped)
	_ = s.WriteTarGz(&g, Wrapped)
	for name, data := range map[string][]byte{"zip": z.Bytes(), "tar.gz": g.Bytes()} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				if _, _, err := Read(bytes.NewReader(data), int64(len(data)), Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
