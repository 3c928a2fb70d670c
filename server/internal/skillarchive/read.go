package skillarchive

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
)

// Format is an archive format.
type Format string

// Formats Read tells apart.
const (
	FormatZip   Format = "zip"
	FormatTarGz Format = "tar.gz"
	FormatTar   Format = "tar"
)

// Sniff names the format of an archive from its first 512 bytes, or "".
func Sniff(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return FormatZip
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return FormatTarGz
	case len(head) >= 263 && bytes.Equal(head[257:262], []byte("ustar")):
		return FormatTar
	}
	return ""
}

// Read reads a zip, tar.gz or tar archive, told apart by its first bytes.
func Read(r io.ReaderAt, size int64, opts Options) (Format, []File, error) {
	head := make([]byte, 512)
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", nil, &EntryError{Where: where(opts), Rule: fmt.Sprintf("cannot read: %v", err)}
	}
	format := Sniff(head[:n])
	var files []File
	switch format {
	case FormatZip:
		files, err = ReadZip(r, size, opts)
	case FormatTarGz:
		files, err = ReadTarGz(io.NewSectionReader(r, 0, size), opts)
	case FormatTar:
		files, err = ReadTar(io.NewSectionReader(r, 0, size), opts)
	default:
		return "", nil, &EntryError{Where: where(opts), Rule: "not a .zip, .tar.gz or .tar archive (its first bytes are none of theirs)"}
	}
	return format, files, err
}

func where(opts Options) string {
	if opts.Where == "" {
		return "archive"
	}
	return opts.Where
}

// ReadZip reads a zip archive of size bytes.
func ReadZip(r io.ReaderAt, size int64, opts Options) ([]File, error) {
	c := NewCollector(opts)
	// archive/zip holds every central directory record in memory: count
	// them first, from the end record.
	if n, ok := zipEntryCount(r, size); ok && n > uint64(c.Limits().MaxEntries) {
		return nil, &EntryError{Where: c.Where(), Rule: fmt.Sprintf("the archive lists %d entries, the limit is %d", n, c.Limits().MaxEntries)}
	}
	zr, err := zip.NewReader(r, size)
	// ErrInsecurePath comes with a usable reader: the names are checked
	// below, each with the rule it breaks.
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, &EntryError{Where: c.Where(), Rule: fmt.Sprintf("not a readable zip archive: %v", err)}
	}
	if len(zr.File) > c.Limits().MaxEntries {
		return nil, &EntryError{Where: c.Where(), Rule: fmt.Sprintf("the archive has %d entries, the limit is %d", len(zr.File), c.Limits().MaxEntries)}
	}
	if err := checkOverlap(c, zr.File); err != nil {
		return nil, err
	}
	var inflated int64
	for _, f := range zr.File {
		if err := readZipEntry(c, f, &inflated, size); err != nil {
			return nil, err
		}
	}
	return c.Files()
}

func readZipEntry(c *Collector, f *zip.File, inflated *int64, archiveSize int64) error {
	mode := f.Mode()
	switch {
	case mode.IsDir():
		return c.Dir(f.Name)
	case f.Flags&0x1 != 0:
		return c.Special(f.Name, "an encrypted entry")
	case mode&fs.ModeSymlink != 0:
		if f.UncompressedSize64 > 4096 {
			return c.Special(f.Name, fmt.Sprintf("a symbolic link whose target is %d bytes long", f.UncompressedSize64))
		}
		rc, err := f.Open()
		if err != nil {
			return c.Special(f.Name, fmt.Sprintf("a symbolic link whose target cannot be read (%v)", err))
		}
		target, err := io.ReadAll(io.LimitReader(rc, 4097))
		rc.Close()
		if err != nil {
			return c.Special(f.Name, fmt.Sprintf("a symbolic link whose target cannot be read (%v)", err))
		}
		return c.Symlink(f.Name, string(target))
	case !mode.IsRegular():
		return c.Special(f.Name, "a "+specialKind(mode))
	}
	lim := c.Limits()
	if f.UncompressedSize64 > uint64(lim.MaxFileBytes) {
		// Checked here too, before Open: no byte of it is inflated.
		return c.File(f.Name, int64(min(f.UncompressedSize64, 1<<62)), false, eofReader{})
	}
	var rc io.ReadCloser
	var openErr error
	if f.Method == zip.Store || f.Method == zip.Deflate {
		rc, openErr = f.Open()
	} else {
		openErr = fmt.Errorf("compression method %d is not supported (only stored and deflated entries are)", f.Method)
	}
	body := &countingReader{c: c, name: f.Name, total: inflated, compressed: int64(f.CompressedSize64),
		declared: int64(f.UncompressedSize64), archive: archiveSize}
	if openErr != nil {
		body.err = openErr
	} else {
		defer rc.Close()
		body.r = rc
	}
	return c.File(f.Name, int64(f.UncompressedSize64), mode&0o111 != 0, body)
}

// zipEntryCount reads the number of entries a zip's end of central
// directory record (or its zip64 record) states; ok is false when it
// cannot be found (archive/zip then says why).
func zipEntryCount(r io.ReaderAt, size int64) (n uint64, ok bool) {
	const eocdLen, maxComment = 22, 65535
	tail := min(size, eocdLen+maxComment)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return 0, false
	}
	n = uint64(binary.LittleEndian.Uint16(buf[i+10:]))
	if n != 0xffff {
		return n, true
	}
	// zip64: the locator sits right before the end record.
	loc := int64(i) + (size - tail) - 20
	var l [20]byte
	if loc < 0 {
		return 0, false
	}
	if _, err := r.ReadAt(l[:], loc); err != nil || !bytes.Equal(l[:4], []byte("PK\x06\x07")) {
		return 0, false
	}
	var rec [56]byte
	off := int64(binary.LittleEndian.Uint64(l[8:]))
	if off < 0 || off > size-56 {
		return 0, false
	}
	if _, err := r.ReadAt(rec[:], off); err != nil || !bytes.Equal(rec[:4], []byte("PK\x06\x06")) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(rec[32:]), true
}

// checkOverlap refuses zip entries whose data overlap: one compressed
// stream listed under many names inflates many times (the "better zip
// bomb"), which the total caps would stop only after inflating it once
// per name.
func checkOverlap(c *Collector, files []*zip.File) error {
	type span struct {
		start, end int64
		name       string
	}
	spans := make([]span, 0, len(files))
	for _, f := range files {
		if f.Mode().IsDir() {
			continue
		}
		off, err := f.DataOffset()
		if err != nil {
			return &EntryError{Where: c.Where(), Entry: f.Name, Rule: fmt.Sprintf("its local header cannot be read: %v", err)}
		}
		spans = append(spans, span{off, off + int64(f.CompressedSize64), f.Name})
	}
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return &EntryError{Where: c.Where(), Entry: spans[i].name,
				Rule: fmt.Sprintf("its data overlaps the data of %s (one compressed stream listed under several names: a zip bomb)", quote(spans[i-1].name))}
		}
	}
	return nil
}

func specialKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeCharDevice != 0:
		return "character device"
	case mode&fs.ModeDevice != 0:
		return "block device"
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeIrregular != 0:
		return "file of an unknown type"
	}
	return fmt.Sprintf("special file (mode %v)", mode)
}

// eofReader is an empty body for entries refused before reading.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// countingReader inflates one zip entry, counting into the archive's
// total and refusing past Limits.MaxInflated or Limits.MaxRatio.
type countingReader struct {
	c          *Collector
	name       string
	r          io.Reader
	err        error
	n          int64
	total      *int64
	compressed int64 // of this entry
	declared   int64 // uncompressed size its header states
	archive    int64 // bytes of the whole archive
}

func (cr *countingReader) Read(p []byte) (int, error) {
	if cr.err != nil {
		return 0, cr.err
	}
	n, err := cr.r.Read(p)
	cr.n += int64(n)
	*cr.total += int64(n)
	lim := cr.c.Limits()
	switch {
	case *cr.total > lim.MaxInflated:
		return n, &EntryError{Where: cr.c.Where(), Entry: cr.name,
			Rule: fmt.Sprintf("more than %d bytes inflated from the archive: a decompression bomb, or too much to read", lim.MaxInflated)}
	case cr.n > ratioFloor && cr.n > lim.MaxRatio*max(cr.compressed, 1):
		return n, &EntryError{Where: cr.c.Where(), Entry: cr.name,
			Rule: fmt.Sprintf("inflates to more than %d times its %d compressed bytes: a decompression bomb", lim.MaxRatio, cr.compressed)}
	case *cr.total > ratioFloor && *cr.total > lim.MaxRatio*max(cr.archive, 1):
		return n, &EntryError{Where: cr.c.Where(), Entry: cr.name,
			Rule: fmt.Sprintf("the archive inflates to more than %d times its %d bytes: a decompression bomb", lim.MaxRatio, cr.archive)}
	case errors.Is(err, zip.ErrFormat):
		// archive/zip stops an entry that inflates past its declared size.
		return n, &EntryError{Where: cr.c.Where(), Entry: cr.name,
			Rule: fmt.Sprintf("inflates past the %d bytes its header declares: a forged size (a decompression bomb)", cr.declared)}
	case errors.Is(err, zip.ErrChecksum):
		return n, &EntryError{Where: cr.c.Where(), Entry: cr.name, Rule: "its data does not match its CRC-32: damaged or forged"}
	}
	return n, err
}

// ReadTarGz reads a gzip-compressed tar archive.
func ReadTarGz(r io.Reader, opts Options) ([]File, error) {
	c := NewCollector(opts)
	in := &byteCounter{r: bufio.NewReader(r)}
	zr, err := gzip.NewReader(in)
	if err != nil {
		return nil, &EntryError{Where: c.Where(), Rule: fmt.Sprintf("not a readable gzip stream: %v", err)}
	}
	return readTar(c, &inflateGuard{c: c, r: zr, in: in})
}

// ReadTar reads an uncompressed tar archive.
func ReadTar(r io.Reader, opts Options) ([]File, error) {
	c := NewCollector(opts)
	in := &byteCounter{r: r}
	return readTar(c, &inflateGuard{c: c, r: in, in: in})
}

// byteCounter counts the compressed bytes consumed.
type byteCounter struct {
	r io.Reader
	n int64
}

func (b *byteCounter) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

// inflateGuard counts the tar stream's bytes (headers, padding and
// skipped entries included) and refuses past Limits.MaxInflated or
// Limits.MaxRatio; entry names the entry being read.
type inflateGuard struct {
	c     *Collector
	r     io.Reader
	in    *byteCounter
	n     int64
	entry string
}

func (g *inflateGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.n += int64(n)
	lim := g.c.Limits()
	switch {
	case g.n > lim.MaxInflated:
		return n, &EntryError{Where: g.c.Where(), Entry: g.entry,
			Rule: fmt.Sprintf("more than %d bytes inflated from the archive: a decompression bomb, or too much to read", lim.MaxInflated)}
	case g.n > ratioFloor && g.n > lim.MaxRatio*max(g.in.n, 1):
		return n, &EntryError{Where: g.c.Where(), Entry: g.entry,
			Rule: fmt.Sprintf("the archive inflates to more than %d times its compressed size (%d bytes from %d): a decompression bomb", lim.MaxRatio, g.n, g.in.n)}
	}
	return n, err
}

func readTar(c *Collector, g *inflateGuard) ([]File, error) {
	tr := tar.NewReader(g)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var ee *EntryError
		switch {
		case errors.As(err, &ee):
			return nil, ee
		case err != nil && !errors.Is(err, tar.ErrInsecurePath):
			return nil, &EntryError{Where: c.Where(), Entry: g.entry, Rule: fmt.Sprintf("the archive is damaged after this entry: %v", err)}
		}
		g.entry = h.Name
		if err := readTarEntry(c, tr, h); err != nil {
			return nil, err
		}
	}
	return c.Files()
}

func readTarEntry(c *Collector, tr *tar.Reader, h *tar.Header) error {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeCont, tar.TypeGNUSparse:
		return c.File(h.Name, h.Size, h.Mode&0o111 != 0, tr)
	case tar.TypeDir:
		return c.Dir(h.Name)
	case tar.TypeSymlink:
		return c.Symlink(h.Name, h.Linkname)
	case tar.TypeLink:
		return c.Hardlink(h.Name, h.Linkname)
	case tar.TypeXGlobalHeader:
		return nil // PAX defaults for the entries after it; no file
	case tar.TypeChar:
		return c.Special(h.Name, "a character device")
	case tar.TypeBlock:
		return c.Special(h.Name, "a block device")
	case tar.TypeFifo:
		return c.Special(h.Name, "a named pipe (FIFO)")
	}
	return c.Special(h.Name, fmt.Sprintf("an entry of tar type %q", h.Typeflag))
}
