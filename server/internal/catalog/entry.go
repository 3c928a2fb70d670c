package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"path"
	"strings"
	"time"
	"unsafe"

	"github.com/iii-skills/skills/server/internal/registry"
)

// Kind says what a skill is for.
type Kind string

const (
	// KindInstruction is a skill an agent reads (markdown, supporting files).
	KindInstruction Kind = "instruction"
	// KindAction is a skill that also carries code a runtime executes
	// (a Skills Protocol bundle with code/).
	KindAction Kind = "action"
)

// OriginKind says where an entry came from.
type OriginKind string

const (
	// OriginPublished is a skill a worker registered (skills::register).
	OriginPublished OriginKind = "published"
	// OriginFolder is a markdown file or an Agent Skills SKILL.md folder.
	OriginFolder OriginKind = "folder"
	// OriginBundle is a Skills Protocol bundle (skill.toml + SKILL.md).
	OriginBundle OriginKind = "bundle"
	// OriginBuiltin is a skill compiled into the server.
	OriginBuiltin OriginKind = "builtin"
)

// Origin names where an entry came from.
type Origin struct {
	Kind OriginKind
	// Source is the folder root (absolute) for folder and bundle entries,
	// or the source's name otherwise.
	Source string
	// Path is the entry's main file relative to Source, '/'-separated
	// ("pdf/SKILL.md", "resend/email.md"); empty for published skills.
	Path string
	// Downloaded marks a folder entry that directory::skills::download
	// wrote (a namespace folder with a download record), not the
	// operator: it gets no operator trust (secret grants of origin
	// folder, precedence over a registered skill on /rpc).
	Downloaded bool
}

// Digest is a SHA-256 sum. Its String form is "sha256:<lowercase hex>",
// the form the MCP Skills extension and the Skills Protocol use.
type Digest [sha256.Size]byte

// DigestOf hashes b.
func DigestOf(b []byte) Digest { return sha256.Sum256(b) }

// DigestOfString hashes s without copying it.
func DigestOfString(s string) Digest {
	// sha256 only reads its input: viewing the string's bytes is safe.
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// String renders "sha256:<hex>".
func (d Digest) String() string { return DigestPrefix + hex.EncodeToString(d[:]) }

// IsZero reports whether d was never set.
func (d Digest) IsZero() bool { return d == Digest{} }

// DigestPrefix starts every rendered Digest.
const DigestPrefix = "sha256:"

// ParseDigest reads "sha256:<64 hex digits>".
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok {
		return d, fmt.Errorf("digest %q: expected the form sha256:<64 hex digits>", s)
	}
	if len(h) != hex.EncodedLen(len(d)) {
		return d, fmt.Errorf("digest %q: expected 64 hex digits after sha256:, got %d", s, len(h))
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("digest %q: %w", s, err)
	}
	return d, nil
}

// Loader reads content on demand (from a file, a blob store…). It is
// called on the read path, so it must not hash or parse.
type Loader func() ([]byte, error)

// StringLoader reads text content on demand, as a string (which String
// then returns without a copy).
type StringLoader func() (string, error)

// Content is text or bytes held in memory or loaded on demand. The zero
// value is empty in-memory content. Content is immutable and safe to share.
type Content struct {
	data       string
	size       int64
	load       Loader       // nil (and loadString nil): data is the content
	loadString StringLoader // set by LazyString
}

// Inline holds s in memory.
func Inline(s string) Content { return Content{data: s, size: int64(len(s))} }

// InlineBytes holds a copy of b in memory.
func InlineBytes(b []byte) Content { return Inline(string(b)) }

// Lazy loads size bytes with load on every read; nothing is kept.
func Lazy(size int64, load Loader) Content { return Content{size: size, load: load} }

// LazyString is Lazy for text its loader keeps as a string.
func LazyString(size int64, load StringLoader) Content {
	return Content{size: size, loadString: load}
}

// InMemory reports whether reads are served from memory.
func (c Content) InMemory() bool { return c.load == nil && c.loadString == nil }

// Size is the content's length in bytes (as known when the source loaded it).
func (c Content) Size() int64 { return c.size }

// String returns the content as a string (bytes for binary content).
func (c Content) String() (string, error) {
	if c.InMemory() {
		return c.data, nil
	}
	if c.loadString != nil {
		return c.loadString()
	}
	b, err := c.load()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Bytes returns the content. In-memory content is copied.
func (c Content) Bytes() ([]byte, error) {
	if c.InMemory() {
		return []byte(c.data), nil
	}
	if c.loadString != nil {
		s, err := c.loadString()
		return []byte(s), err
	}
	return c.load()
}

// File is one file of a skill: SKILL.md, a script, a reference, an asset.
type File struct {
	// Path is relative to the skill root, '/'-separated, no "." or "..".
	Path string
	// Size in bytes and Digest of the content, computed once by the source
	// when it loaded or saw a change to the file, never on the read path.
	Size   int64
	Digest Digest
	// MIME is the media type (see MIMEType).
	MIME string
	// Modified is the file's mtime (zero when unknown).
	Modified time.Time
	// Content reads the bytes (in memory or lazily).
	Content Content
}

// Entry is one version of one skill as a source sees it. A source builds
// it and hands it to the catalog with Source.Put; from then on it is
// shared with readers and must not be changed.
type Entry struct {
	// ID is the iii skill id (registry.ValidateID): '/'-separated segments.
	ID string
	// Version is a semantic version ("1.2.0") or "" for unversioned.
	Version string
	Kind    Kind

	// Title is the body's first H1; Description its first paragraph,
	// untruncated. SetSummary fills both from a body.
	Title          string
	Description    string
	HasTitle       bool
	HasDescription bool

	// Frontmatter is the parsed YAML block of the main file (empty when
	// there is none).
	Frontmatter Frontmatter

	// Body is the markdown with the frontmatter stripped: in memory for
	// published skills, lazy for folder skills.
	Body Content
	// BodyDigest is the sha256 of the body bytes (zero when the source did
	// not compute it).
	BodyDigest Digest

	// Files are the skill's files sorted by Path. Folder skills include
	// SKILL.md itself; a published skill has none.
	Files []File
	// Main is the Files path of the skill's main markdown file ("SKILL.md"
	// for Agent Skills folders and bundles, the file's base name for a
	// single-file iii-directory skill); empty for published skills.
	Main string

	Origin   Origin
	Modified time.Time

	// Extra is per-source data the catalog does not read (for bundles, the
	// parsed skill.toml manifest).
	Extra any

	source *Source // the Source that put it, set by Put
}

// SetSummary fills Title and Description from body (the frontmatter
// stripped): the first H1 and the whole first paragraph.
func (e *Entry) SetSummary(body string) {
	e.Title, e.HasTitle = registry.ExtractTitle(body)
	e.Description, e.HasDescription = registry.ExtractParagraph(body)
}

// SourceName is the name of the catalog source that put e ("" before Put).
func (e *Entry) SourceName() string {
	if e.source == nil {
		return ""
	}
	return e.source.name
}

// DisplayTitle is the title, or the id when the body has no H1.
func (e *Entry) DisplayTitle() string {
	if e.HasTitle {
		return e.Title
	}
	return e.ID
}

// IndexEntry is e as the iii://skills index sees it: the description cut
// at registry.MaxDescriptionChars.
func (e *Entry) IndexEntry() registry.IndexEntry {
	s := registry.Summary{Title: e.Title, HasTitle: e.HasTitle, HasDescription: e.HasDescription}
	if e.HasDescription {
		s.Description = registry.TruncateChars(e.Description, registry.MaxDescriptionChars)
	}
	return registry.IndexEntry{ID: e.ID, Summary: s}
}

// File returns the file at rel (a Files path), or false.
func (e *Entry) File(rel string) (File, bool) {
	lo, hi := 0, len(e.Files)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e.Files[m].Path < rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(e.Files) && e.Files[lo].Path == rel {
		return e.Files[lo], true
	}
	return File{}, false
}

// MainFile returns the file named by Main, or false.
func (e *Entry) MainFile() (File, bool) {
	if e.Main == "" {
		return File{}, false
	}
	return e.File(e.Main)
}

// TotalSize is the sum of the sizes of e's files.
func (e *Entry) TotalSize() int64 {
	var n int64
	for _, f := range e.Files {
		n += f.Size
	}
	return n
}

// mimeByExt covers what skill folders hold, so the answer does not depend
// on the host's /etc/mime.types.
var mimeByExt = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".txt":      "text/plain",
	".json":     "application/json",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".toml":     "application/toml",
	".py":       "text/x-python",
	".sh":       "text/x-shellscript",
	".js":       "text/javascript",
	".mjs":      "text/javascript",
	".ts":       "text/x-typescript",
	".go":       "text/x-go",
	".rb":       "text/x-ruby",
	".html":     "text/html",
	".css":      "text/css",
	".csv":      "text/csv",
	".xml":      "application/xml",
	".svg":      "image/svg+xml",
	".png":      "image/png",
	".jpg":      "image/jpeg",
	".jpeg":     "image/jpeg",
	".gif":      "image/gif",
	".webp":     "image/webp",
	".pdf":      "application/pdf",
	".zip":      "application/zip",
	".wasm":     "application/wasm",
}

// MIMEType is the media type for a file path by its extension (case
// insensitive): a fixed table for what skills usually hold, then Go's
// mime package, then "application/octet-stream".
func MIMEType(p string) string {
	ext := strings.ToLower(path.Ext(p))
	if t, ok := mimeByExt[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// IsText reports whether a media type is text a client can show as is.
func IsText(mimeType string) bool {
	if strings.HasPrefix(mimeType, "text/") {
		return true
	}
	switch mimeType {
	case "application/json", "application/yaml", "application/toml", "application/xml", "image/svg+xml":
		return true
	}
	return false
}

// NewFile describes a file the source has just read: it hashes data once
// and takes the MIME type from the path. With load nil the content is
// kept in memory; otherwise reads go through load and data is not kept.
func NewFile(rel string, data []byte, modified time.Time, load Loader) File {
	f := File{Path: rel, Size: int64(len(data)), Digest: DigestOf(data), MIME: MIMEType(rel), Modified: modified}
	if load == nil {
		f.Content = InlineBytes(data)
	} else {
		f.Content = Lazy(int64(len(data)), load)
	}
	return f
}
