package skillsprotocol

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
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

// blobMeta is a blob's entry in the index scope (<BlobScope>-index, same
// key): enough to expire blobs and keep the store under its cap without
// reading any content.
type blobMeta struct {
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"created_at"`
	// Owner is the client that created it (budget.ClientFrom of its
	// request: the /rpc client's address): only its own new blobs may
	// push it out before it expires. Empty for blobs stored before owners
	// were recorded and for callers inside the process.
	Owner string `json:"owner,omitempty"`
}

// blobIndex mirrors the index scope; it is loaded on first use. mu also
// serializes blob writes, so the cap holds under concurrent runs.
type blobIndex struct {
	mu      sync.Mutex
	loaded  bool
	entries map[string]blobMeta // key: the hex part of the id
	total   int64
	owned   map[string]int64 // bytes per owner

	// The sweeper removes expired blobs between writes (a prune otherwise
	// runs only when the next blob is written). It starts once the index
	// is loaded and ends with Runtime.Close.
	sweepOnce sync.Once
	sweepStop context.CancelFunc
	sweepDone chan struct{}
}

// The default sweep interval is a quarter of the TTL, within these bounds.
const (
	minBlobSweep = 10 * time.Millisecond
	maxBlobSweep = 10 * time.Minute
)

func (r *Runtime) blobIndexScope() string { return r.opts.BlobScope + "-index" }

// loadBlobIndexLocked reads the index scope once and starts the sweeper.
// The index entry is written before a blob's content, so every stored
// blob has one.
func (r *Runtime) loadBlobIndexLocked(ctx context.Context) error {
	if r.blobs.loaded {
		return nil
	}
	raws, err := r.opts.State.List(ctx, r.blobIndexScope())
	if err != nil {
		return fmt.Errorf("read the blob index: %w", err)
	}
	r.blobs.entries = make(map[string]blobMeta, len(raws))
	r.blobs.total, r.blobs.owned = 0, map[string]int64{}
	for _, raw := range raws {
		var m struct {
			blobMeta
			Key string `json:"key"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Key == "" {
			r.log.Warn("skills protocol: unreadable blob index entry skipped", "entry", string(raw))
			continue
		}
		r.blobs.entries[m.Key] = m.blobMeta
		r.blobs.total += m.Size
		r.blobs.owned[m.Owner] += m.Size
	}
	r.blobs.loaded = true
	r.blobs.sweepOnce.Do(r.startBlobSweeper)
	return nil
}

// startBlobSweeper removes expired blobs every BlobSweepInterval.
func (r *Runtime) startBlobSweeper() {
	ctx, cancel := context.WithCancel(context.Background())
	r.blobs.sweepStop, r.blobs.sweepDone = cancel, make(chan struct{})
	every := r.opts.BlobSweepInterval
	go func() {
		defer close(r.blobs.sweepDone)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.blobs.mu.Lock()
			var err error
			if r.anyBlobExpiredLocked() {
				err = r.pruneBlobsLocked(ctx, 0, "")
			}
			r.blobs.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				r.log.Warn("skills protocol: removing expired blobs failed; trying again later", "err", err)
			}
		}
	}()
}

// stopBlobSweeper ends the sweeper (if it started) and waits for it.
func (r *Runtime) stopBlobSweeper() {
	r.blobs.sweepOnce.Do(func() {}) // no sweeper may start after this
	if r.blobs.sweepStop != nil {
		r.blobs.sweepStop()
		<-r.blobs.sweepDone
	}
}

// anyBlobExpiredLocked tells whether a prune would remove something for
// age alone; the sweeper checks it first so a quiet store is not sorted.
func (r *Runtime) anyBlobExpiredLocked() bool {
	now := time.Now()
	for _, m := range r.blobs.entries {
		if now.Sub(m.CreatedAt) >= r.opts.BlobTTL {
			return true
		}
	}
	return false
}

// pruneBlobsLocked removes expired blobs (anyone's), then, while room
// more bytes of owner's would pass MaxBlobStoreBytes or owner's share
// (MaxBlobStoreBytesPerClient), owner's own oldest: never another
// client's blob that has not expired. It returns a refusal when room
// still does not fit (the store is full of other clients' blobs). Content
// goes before its index entry, so a crash in between leaves an entry that
// a later prune removes, never content that nothing would remove.
func (r *Runtime) pruneBlobsLocked(ctx context.Context, room int64, owner string) *Error {
	now := time.Now()
	keys := make([]string, 0, len(r.blobs.entries))
	for k := range r.blobs.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return r.blobs.entries[a].CreatedAt.Compare(r.blobs.entries[b].CreatedAt)
	})
	fits := func() bool {
		return room == 0 || r.blobs.total+room <= r.opts.MaxBlobStoreBytes && r.blobs.owned[owner]+room <= r.opts.MaxBlobStoreBytesPerClient
	}
	for _, k := range keys {
		m := r.blobs.entries[k]
		expired := now.Sub(m.CreatedAt) >= r.opts.BlobTTL
		if !expired && (fits() || m.Owner != owner) {
			continue // sorted by age, but another client's younger blob may still be owner's to pass
		}
		if err := r.removeBlobLocked(ctx, k, m); err != nil {
			return internalError("store blob: %v", err)
		}
		r.log.Debug("skills protocol: blob removed", "blob_id", BlobPrefix+k, "expired", expired, "bytes", m.Size, "owner", m.Owner)
	}
	if fits() {
		return nil
	}
	// Full of other clients' blobs: refused until the oldest expires.
	var oldest time.Time
	for _, m := range r.blobs.entries {
		if m.Owner != owner && (oldest.IsZero() || m.CreatedAt.Before(oldest)) {
			oldest = m.CreatedAt
		}
	}
	wait := max(time.Until(oldest.Add(r.opts.BlobTTL)), time.Second)
	return &Error{Code: CodeServerBusy, Message: fmt.Sprintf(
		"the blob store is full: other clients' blobs hold %d of its %d bytes and are kept until they expire (blobs live %s; the oldest expires in %s), so a blob of %d bytes does not fit; retry then",
		r.blobs.total-r.blobs.owned[owner], r.opts.MaxBlobStoreBytes, r.opts.BlobTTL, wait.Round(time.Second), room),
		Data: map[string]any{"retry_after_ms": wait.Milliseconds()}}
}

// removeBlobLocked deletes blob k (content, then index entry).
func (r *Runtime) removeBlobLocked(ctx context.Context, k string, m blobMeta) error {
	if _, err := kv.Delete(ctx, r.opts.State, r.opts.BlobScope, k); err != nil {
		return fmt.Errorf("remove blob %s%s: %w", BlobPrefix, k, err)
	}
	if _, err := kv.Delete(ctx, r.opts.State, r.blobIndexScope(), k); err != nil {
		return fmt.Errorf("remove blob %s%s from the index: %w", BlobPrefix, k, err)
	}
	delete(r.blobs.entries, k)
	r.blobs.total -= m.Size
	if r.blobs.owned[m.Owner] -= m.Size; r.blobs.owned[m.Owner] <= 0 {
		delete(r.blobs.owned, m.Owner)
	}
	return nil
}

// putBlob stores content durably and returns its handle. The index entry
// is written first: a crash before the content leaves an entry that
// expires, never content outside the cap.
func (r *Runtime) putBlob(ctx context.Context, content, kind string) (blobRecord, *Error) {
	if int64(len(content)) > r.opts.MaxBlobBytes {
		return blobRecord{}, invalidParams("content is %d bytes; a blob holds at most %d", len(content), r.opts.MaxBlobBytes)
	}
	now := time.Now().UTC()
	rec := blobRecord{ID: newBlobID(), Kind: kind, Size: len(content), SHA256: catalog.DigestOfString(content).String(),
		CreatedAt: now.Format(time.RFC3339Nano), Content: content}
	key := strings.TrimPrefix(rec.ID, BlobPrefix)
	meta := blobMeta{Size: int64(len(content)), CreatedAt: now, Owner: budget.ClientFrom(ctx)}
	r.blobs.mu.Lock()
	defer r.blobs.mu.Unlock()
	if err := r.loadBlobIndexLocked(ctx); err != nil {
		return blobRecord{}, internalError("store blob: %v", err)
	}
	if perr := r.pruneBlobsLocked(ctx, max(meta.Size, 1), meta.Owner); perr != nil {
		return blobRecord{}, perr
	}
	entry := struct {
		blobMeta
		Key string `json:"key"`
	}{meta, key}
	if err := kv.Put(ctx, r.opts.State, r.blobIndexScope(), key, entry); err != nil {
		return blobRecord{}, internalError("store blob: %v", err)
	}
	r.blobs.entries[key] = meta
	r.blobs.total += meta.Size
	r.blobs.owned[meta.Owner] += meta.Size
	if err := kv.Put(ctx, r.opts.State, r.opts.BlobScope, key, rec); err != nil {
		return blobRecord{}, internalError("store blob: %v", err)
	}
	return rec, nil
}

// indexedBlob returns what the index knows of key: whether it has
// expired and its size (0 when the index does not know it).
func (r *Runtime) indexedBlob(ctx context.Context, key string) (expired bool, size int64) {
	r.blobs.mu.Lock()
	defer r.blobs.mu.Unlock()
	if r.loadBlobIndexLocked(ctx) != nil {
		return false, 0 // the store read below reports the store's trouble
	}
	m, ok := r.blobs.entries[key]
	return ok && time.Since(m.CreatedAt) >= r.opts.BlobTTL, m.Size
}

// blobSize is a blob's size as the index knows it, without reading its
// content: input_blobs are checked against their caps before a run slot
// is taken and before any content is loaded.
func (r *Runtime) blobSize(ctx context.Context, id string) (int64, *Error) {
	if !blobIDRe.MatchString(id) {
		return 0, invalidParams("blob_id %q is not a blob handle (expected blob:<16 hex digits>, as create_blob returns)", id)
	}
	key := strings.TrimPrefix(id, BlobPrefix)
	r.blobs.mu.Lock()
	defer r.blobs.mu.Unlock()
	if err := r.loadBlobIndexLocked(ctx); err != nil {
		return 0, internalError("read blob %s: %v", id, err)
	}
	m, ok := r.blobs.entries[key]
	switch {
	case !ok:
		return 0, invalidParams("unknown blob %q", id)
	case time.Since(m.CreatedAt) >= r.opts.BlobTTL:
		return 0, invalidParams("blob %q has expired: blobs are kept for %s after they are created", id, r.opts.BlobTTL)
	}
	return m.Size, nil
}

func (r *Runtime) getBlob(ctx context.Context, id string) (blobRecord, *Error) {
	if !blobIDRe.MatchString(id) {
		return blobRecord{}, invalidParams("blob_id %q is not a blob handle (expected blob:<16 hex digits>, as create_blob returns)", id)
	}
	key := strings.TrimPrefix(id, BlobPrefix)
	expired, size := r.indexedBlob(ctx, key)
	if expired {
		return blobRecord{}, invalidParams("blob %q has expired: blobs are kept for %s after they are created", id, r.opts.BlobTTL)
	}
	// Blob contents being read from the store at once stay under
	// MaxBlobLoadBytes: many concurrent reads of big blobs wait here
	// instead of each holding its copy (and of backing up the engine
	// connection the runtime shares with everything else).
	weight := min(max(size, 1), r.opts.MaxBlobLoadBytes)
	if err := r.blobLoads.Acquire(ctx, weight); err != nil {
		return blobRecord{}, internalError("read blob %s: the request ended while waiting for other blob reads to finish", id)
	}
	defer r.blobLoads.Release(weight)
	raw, ok, err := r.opts.State.Get(ctx, r.opts.BlobScope, key)
	if err != nil {
		return blobRecord{}, internalError("read blob %s: %v", id, err)
	}
	if !ok {
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
	// The answer's bytes come from the answer budget before the blob is
	// loaded: the whole blob for mode full, at most max_bytes otherwise
	// (the load itself is bounded by MaxBlobLoadBytes).
	if size, perr := r.blobSize(ctx, p.BlobID); perr == nil {
		want := size
		if mode != "full" {
			want = min(size, int64(max))
		}
		if perr := r.reserve(ctx, want); perr != nil {
			return nil, perr
		}
	}
	rec, perr := r.getBlob(ctx, p.BlobID)
	if perr != nil {
		return nil, perr
	}
	content := rec.Content
	switch mode { // a copy: the blob itself need not stay alive while the answer is written
	case "sample_head":
		content = strings.Clone(headUTF8(content, max))
	case "sample_tail":
		content = strings.Clone(tailUTF8(content, max))
	}
	return &bigResult{fields: map[string]any{"blob_id": rec.ID, "kind": rec.Kind, "size": rec.Size, "mode": mode,
		"truncated": len(content) < rec.Size}, text: content}, nil
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
