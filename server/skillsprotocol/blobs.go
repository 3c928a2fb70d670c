package skillsprotocol

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/catalog"
)

// BlobPrefix starts every blob handle: blob:<16 hex digits>.
const BlobPrefix = "blob:"

// DefaultReadBytes is read_blob's max_bytes default.
const DefaultReadBytes = 2000

var blobIDRe = regexp.MustCompile(`^blob:[0-9a-f]{16}$`)

// blobRecord is a blob as stored in the state scope (key = the hex part).
type blobRecord struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Size      int    `json:"size"`
	SHA256    string `json:"sha256"`
	CreatedAt string `json:"created_at"`
	Content   string `json:"content"`
}

func newBlobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return BlobPrefix + hex.EncodeToString(b[:])
}

// putBlob stores content durably and returns its handle.
func (r *Runtime) putBlob(ctx context.Context, content, kind string) (blobRecord, *Error) {
	if int64(len(content)) > r.opts.MaxBlobBytes {
		return blobRecord{}, invalidParams("content is %d bytes; a blob holds at most %d", len(content), r.opts.MaxBlobBytes)
	}
	rec := blobRecord{ID: newBlobID(), Kind: kind, Size: len(content), SHA256: catalog.DigestOfString(content).String(),
		CreatedAt: time.Now().UTC().Format(time.RFC3339Nano), Content: content}
	if err := r.opts.State.Set(ctx, r.opts.BlobScope, strings.TrimPrefix(rec.ID, BlobPrefix), rec); err != nil {
		return blobRecord{}, internalError("store blob: %v", err)
	}
	return rec, nil
}

func (r *Runtime) getBlob(ctx context.Context, id string) (blobRecord, *Error) {
	if !blobIDRe.MatchString(id) {
		return blobRecord{}, invalidParams("blob_id %q is not a blob handle (expected blob:<16 hex digits>, as create_blob returns)", id)
	}
	raw, err := r.opts.State.Get(ctx, r.opts.BlobScope, strings.TrimPrefix(id, BlobPrefix))
	if err != nil {
		return blobRecord{}, internalError("read blob %s: %v", id, err)
	}
	if raw == nil {
		return blobRecord{}, invalidParams("unknown blob %q", id)
	}
	var rec blobRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return blobRecord{}, internalError("blob %s is damaged in the store: %v", id, err)
	}
	return rec, nil
}

type createBlobParams struct {
	Content *string `json:"content"`
	Kind    string  `json:"kind"`
}

func (r *Runtime) createBlob(ctx context.Context, p createBlobParams) (any, *Error) {
	if p.Content == nil {
		return nil, invalidParams("content is required (the text to store)")
	}
	if !strings.Contains(p.Kind, "/") || strings.ContainsAny(p.Kind, " \r\n") {
		return nil, invalidParams("kind %q must be a MIME type such as text/plain or application/json", p.Kind)
	}
	rec, perr := r.putBlob(ctx, *p.Content, p.Kind)
	if perr != nil {
		return nil, perr
	}
	return map[string]any{"blob_id": rec.ID, "kind": rec.Kind, "size": rec.Size}, nil
}

type readBlobParams struct {
	BlobID   string  `json:"blob_id"`
	Mode     *string `json:"mode"`
	MaxBytes *int    `json:"max_bytes"`
}

func (r *Runtime) readBlob(ctx context.Context, p readBlobParams) (any, *Error) {
	mode := "sample_head"
	if p.Mode != nil {
		mode = *p.Mode
	}
	if mode != "sample_head" && mode != "sample_tail" && mode != "full" {
		return nil, invalidParams(`mode %q must be "sample_head", "sample_tail" or "full"`, mode)
	}
	max := DefaultReadBytes
	if p.MaxBytes != nil {
		max = *p.MaxBytes
		if max < 1 {
			return nil, invalidParams("max_bytes %d must be at least 1", max)
		}
	}
	if p.BlobID == "" {
		return nil, invalidParams("blob_id is required (a handle such as blob:0123456789abcdef)")
	}
	rec, perr := r.getBlob(ctx, p.BlobID)
	if perr != nil {
		return nil, perr
	}
	content := rec.Content
	switch mode {
	case "sample_head":
		content = headUTF8(content, max)
	case "sample_tail":
		content = tailUTF8(content, max)
	}
	return map[string]any{"blob_id": rec.ID, "kind": rec.Kind, "size": rec.Size, "mode": mode,
		"content": content, "truncated": len(content) < rec.Size}, nil
}

// headUTF8 is at most n bytes of s from the start, cut on a rune boundary.
func headUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tailUTF8 is at most n bytes of s from the end, cut on a rune boundary.
func tailUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
