package testutil

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io"
	"testing"
)

// ZipBomb is a valid zip holding skillMD as SKILL.md and one deflated
// entry, name, of size zero bytes, whose header declares declared bytes
// (a forged size when it differs). The data is one deflate block of a
// MiB of zeros repeated (the block starts with a literal, so every copy
// decodes on its own): about 1 KiB per MiB, 10 MiB for 10 GiB, built in
// well under a second.
func ZipBomb(tb testing.TB, skillMD, name string, size, declared int64) []byte {
	tb.Helper()
	var blk bytes.Buffer
	fw, _ := flate.NewWriter(&blk, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	_, _ = fw.Write(zeros)
	_ = fw.Flush()
	var data bytes.Buffer
	crc := uint32(0)
	for left := size; left > 0; left -= 1 << 20 {
		data.Write(blk.Bytes())
		crc = crc32.Update(crc, crc32.IEEETable, zeros)
	}
	data.Write([]byte{0x03, 0x00}) // final empty block (fixed Huffman)
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	w, _ := zw.Create("SKILL.md")
	_, _ = io.WriteString(w, skillMD)
	raw, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(data.Len()), UncompressedSize64: uint64(declared)})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := raw.Write(data.Bytes()); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}
