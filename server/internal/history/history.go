package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iii-skills/skills/server/internal/kv"
)

// Defaults of Config.
const (
	DefaultRetain   = 50
	DefaultMaxBytes = 256 << 20
	// LatestLabel points at the newest version; only the registry moves it.
	LatestLabel = "latest"
	// MaxLabelBytes bounds a label name.
	MaxLabelBytes = 64
	// MaxLabels bounds the labels of one id (every labelled version is
	// kept, so labels must not grow without end).
	MaxLabels = 32
)

// Config sets where and how much history is kept.
type Config struct {
	// Scope is the registry's state scope ("skills", "prompts"); history
	// uses Scope+".history" and Scope+".versions".
	Scope string
	// Noun names an id in messages ("skill", "prompt").
	Noun string
	// Retain is how many versions an id keeps besides labelled ones
	// (0: DefaultRetain).
	Retain int
	// MaxBytes bounds the content of all kept versions together
	// (0: DefaultMaxBytes).
	MaxBytes int64
	// Protected labels move only with AdminToken.
	Protected []string
	// AdminToken unlocks protected labels; empty: they cannot be moved.
	AdminToken string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// ListContent puts each version's content in listings (Version.Content):
	// for prompts, whose content is a small definition a reader needs to
	// check a version's signature on its own side (docs/trust.md).
	ListContent bool
	// OnChange, when set, is told the id whose versions or labels changed
	// (a new version, a label move, a version dropped), after the change is
	// durable. It runs with the id's lock held: it must not block or call
	// back into History.
	OnChange func(id string)
}

// sharedKeyBits is the width of the sequence inside an instance's key
// range when the store is shared: the top 24 bits pick the range.
const sharedKeyBits = 40

// Version is one immutable version's metadata, as skills::versions lists
// it. SignedBy is null for a version without a trusted signature; Key and
// Signature are there for a signed one (Key alone: signed by a key
// allowed_signers does not trust), so a reader can check the signature
// against the content without trusting the registry's verdict.
type Version struct {
	Version      int      `json:"version"`
	RegisteredAt string   `json:"registered_at"`
	Bytes        int      `json:"bytes"`
	SHA256       string   `json:"sha256"`
	Message      string   `json:"message,omitempty"`
	Author       string   `json:"author,omitempty"`
	SignedBy     *string  `json:"signed_by"`
	Key          string   `json:"key,omitempty"`
	Signature    string   `json:"signature,omitempty"`
	Yanked       string   `json:"yanked,omitempty"` // the reason, filled in listings only
	Labels       []string `json:"labels,omitempty"` // filled in listings only
	// Definition is the version's content (what its sha256 digests and
	// its signature covers), in listings of a History with ListContent
	// only: a prompt's canonical JSON.
	Definition string `json:"definition,omitempty"`
}

// Meta is what a registration says about its new version: message and
// author, and the signature over its content with the registry's verdict
// (SignedBy the trusted principal, "" when the key is not trusted; Key the
// key's SHA256:… fingerprint, "" when unsigned).
type Meta struct {
	Message, Author          string
	Signature, SignedBy, Key string
}

// Error is a refusal of history: NotFound for an unknown id, version,
// label or digest; Corrupt for a stored version whose content does not
// match its recorded sha256; else input that is not acceptable (a bad
// label name, a protected label without the admin token).
type Error struct {
	NotFound bool
	Corrupt  bool
	Msg      string
}

func (e *Error) Error() string { return e.Msg }

// kept is one kept version in a summary: enough to find its content, to
// pick what retention drops, to resolve a digest and to say who signed it.
type kept struct {
	n      int32
	bytes  int32
	at     int64 // unix nanoseconds
	key    uint64
	digest [sha256.Size]byte // zero: unknown (a head of the format before)
	signer *signer           // nil: unsigned
}

// signer is a version's signature verdict.
type signer struct{ by, key string }

func (k kept) digestHex() string {
	if k.digest == ([sha256.Size]byte{}) {
		return ""
	}
	return hex.EncodeToString(k.digest[:])
}

// summary is the in-memory view of a head.
type summary struct {
	latest     int
	seq        int
	digest     [sha256.Size]byte // of the newest version
	labels     map[string]int
	kept       []kept // oldest first
	yanked     map[int]string
	deprecated string
}

// History keeps the versions of one registry scope. It is safe for
// concurrent use; operations on one id are serialized. Each store call is
// bounded by the store's own timeout (kv.III), so no method takes a
// context.
type History struct {
	st       kv.Store
	cfg      Config
	heads    string
	contents string
	seed     maphash.Seed
	locks    [64]sync.Mutex

	loadMu sync.Mutex
	loaded atomic.Bool
	// nextKey is the key of the next content row: one past the highest
	// key any head holds (a row written before a crash without its head
	// is overwritten, it was never acknowledged).
	nextKey atomic.Uint64
	// keyBase is the start of this instance's key range (0 unless the
	// store is shared).
	keyBase uint64

	mu    sync.RWMutex // guards sums and total
	sums  map[string]*summary
	total int64

	cache contentCache // decoded contents of recently read versions
}

// New returns the history of cfg.Scope in st; it loads lazily. When st is
// shared with other registry instances, content rows are keyed in a range
// drawn at random for this instance, so two instances never allocate the
// same key, and a new version reads its head from the store (another
// instance may have changed it) instead of rebuilding it from memory.
func New(st kv.Store, cfg Config) *History {
	if cfg.Retain <= 0 {
		cfg.Retain = DefaultRetain
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Noun == "" {
		cfg.Noun = "id"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &History{st: st, cfg: cfg, heads: HeadsScope(cfg.Scope), contents: VersionsScope(cfg.Scope),
		seed: maphash.MakeSeed(), sums: map[string]*summary{}}
	if st.Shared() {
		// Never 0: that range holds the keys of unshared registries.
		h.keyBase = (1 + rand.Uint64N(1<<24-1)) << sharedKeyBits
	}
	return h
}

// ctx bounds nothing: the store bounds each of its calls itself.
func ctx() context.Context { return context.Background() }

// Refresh re-reads the head of id: another registry instance sharing the
// store changed it (a new version, a label move, a removal).
func (h *History) Refresh(id string) error {
	if !h.loaded.Load() {
		return nil // the next load reads it
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil {
		return err
	}
	if hd == nil || hd.ID != id || len(hd.Versions) == 0 {
		h.mu.Lock()
		if old := h.sums[id]; old != nil {
			h.total -= old.bytes()
			delete(h.sums, id)
		}
		h.mu.Unlock()
		return nil
	}
	h.setSummary(id, summaryOf(hd))
	return nil
}

// Reload forgets every summary: the next use reads all heads again (after
// a reconcile found that other instances changed the store).
func (h *History) Reload() {
	h.loadMu.Lock()
	h.loaded.Store(false)
	h.loadMu.Unlock()
}

// Scopes names the two state scopes history uses.
func (h *History) Scopes() (heads, contents string) { return h.heads, h.contents }

func (h *History) lock(id string) func() {
	m := &h.locks[maphash.String(h.seed, id)%uint64(len(h.locks))]
	m.Lock()
	return m.Unlock
}

// Locked runs fn with id's lock held: fn sees no registration (Record's
// commit runs under it) or label move of id half done.
func (h *History) Locked(id string, fn func()) {
	unlock := h.lock(id)
	defer unlock()
	fn()
}

// Digest is the sha256 of content, as stored and compared.
//
// It hashes content's bytes in place: []byte(content) copied every body
// once more per registration, unchanged ones included (sha256 only reads).
func Digest(content string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(content), len(content)))
}

// load reads every head once (the summaries).
func (h *History) load() error {
	if h.loaded.Load() {
		return nil
	}
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if h.loaded.Load() {
		return nil
	}
	raws, err := h.st.List(ctx(), h.heads)
	if err != nil {
		return fmt.Errorf("load %s history: %w", h.cfg.Noun, err)
	}
	sums := make(map[string]*summary, len(raws))
	var total int64
	next := h.keyBase + 1
	for _, raw := range raws {
		hd, ok := decodeHead(raw)
		if !ok {
			continue // not ours: ignored, never rewritten by accident
		}
		s := summaryOf(hd)
		sums[hd.ID] = s
		total += s.bytes()
		for _, v := range hd.Versions {
			if v.Key>>sharedKeyBits == h.keyBase>>sharedKeyBits {
				next = max(next, v.Key+1)
			}
		}
	}
	// Never backwards: a reload must not hand out a key a registration
	// in flight holds.
	for cur := h.nextKey.Load(); next > cur && !h.nextKey.CompareAndSwap(cur, next); cur = h.nextKey.Load() {
	}
	h.mu.Lock()
	h.sums, h.total = sums, total
	h.mu.Unlock()
	h.loaded.Store(true)
	return nil
}

func summaryOf(hd *head) *summary {
	s := &summary{latest: hd.latest(), seq: hd.Seq, kept: make([]kept, 0, len(hd.Versions)), deprecated: hd.Deprecated}
	for _, v := range hd.Versions {
		k := kept{n: int32(v.N), bytes: int32(v.Bytes), at: v.At, key: v.Key}
		if d, err := hex.DecodeString(v.SHA256); err == nil && len(d) == sha256.Size {
			copy(k.digest[:], d)
		}
		if v.KeyFP != "" {
			k.signer = &signer{by: v.SignedBy, key: v.KeyFP}
		}
		s.kept = append(s.kept, k)
	}
	if n := len(s.kept); n > 0 {
		s.digest = s.kept[n-1].digest
	}
	if len(hd.Labels) > 0 {
		s.labels = make(map[string]int, len(hd.Labels))
		for k, v := range hd.Labels {
			s.labels[k] = v
		}
	}
	if len(hd.Yanked) > 0 {
		s.yanked = make(map[int]string, len(hd.Yanked))
		for k, v := range hd.Yanked {
			s.yanked[k] = v
		}
	}
	return s
}

// head rebuilds the stored head of id from its summary.
func (s *summary) head(id string) *head {
	hd := &head{ID: id, Seq: s.seq, Deprecated: s.deprecated, Versions: make([]headVersion, len(s.kept), len(s.kept)+1)}
	for i, k := range s.kept {
		hd.Versions[i] = headVersion{N: int(k.n), Key: k.key, Bytes: int(k.bytes), At: k.at, SHA256: k.digestHex()}
		if k.signer != nil {
			hd.Versions[i].SignedBy, hd.Versions[i].KeyFP = k.signer.by, k.signer.key
		}
	}
	if len(s.labels) > 0 {
		hd.Labels = make(map[string]int, len(s.labels))
		for k, v := range s.labels {
			hd.Labels[k] = v
		}
	}
	if len(s.yanked) > 0 {
		hd.Yanked = make(map[int]string, len(s.yanked))
		for k, v := range s.yanked {
			hd.Yanked[k] = v
		}
	}
	return hd
}

func (s *summary) bytes() int64 {
	var n int64
	for _, k := range s.kept {
		n += int64(k.bytes)
	}
	return n
}

func (h *History) setSummary(id string, s *summary) {
	h.mu.Lock()
	if old := h.sums[id]; old != nil {
		h.total -= old.bytes()
	}
	h.sums[id] = s
	h.total += s.bytes()
	h.mu.Unlock()
	if h.cfg.OnChange != nil {
		h.cfg.OnChange(id)
	}
}

// summaryOfID is id's summary (nil: no history), loading once.
func (h *History) summaryOfID(id string) *summary {
	if h.load() != nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.sums[id]
}

// IDs lists the ids that have history.
func (h *History) IDs() ([]string, error) {
	if err := h.load(); err != nil {
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.sums))
	for id := range h.sums {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// Latest is the newest version number of id (0: none).
func (h *History) Latest(id string) int {
	if s := h.summaryOfID(id); s != nil {
		return s.latest
	}
	return 0
}

// Numbers lists the kept version numbers of id, newest first, from
// memory (no store read); nil when id has no history.
func (h *History) Numbers(id string) []int {
	s := h.summaryOfID(id)
	if s == nil {
		return nil
	}
	out := make([]int, 0, len(s.kept))
	for i := len(s.kept) - 1; i >= 0; i-- {
		out = append(out, int(s.kept[i].n))
	}
	return out
}

// Listing is the answer of a versions function. Deprecated is the
// message of a deprecated id.
type Listing struct {
	ID         string         `json:"id"`
	Latest     int            `json:"latest"`
	Labels     map[string]int `json:"labels"`
	Deprecated string         `json:"deprecated,omitempty"`
	Versions   []Version      `json:"versions"` // newest first
}

// Versions lists the kept versions of id, newest first, with their labels,
// signatures and yanks. A version whose stored content does not match its
// recorded sha256 fails the listing with a Corrupt error naming it.
func (h *History) Versions(id string) (Listing, error) {
	hd, err := h.getHead(id)
	if err != nil {
		return Listing{}, err
	}
	if hd == nil || len(hd.Versions) == 0 {
		return Listing{}, h.errNoHistory(id)
	}
	labels := map[string]int{LatestLabel: hd.latest()}
	for k, v := range hd.Labels {
		labels[k] = v
	}
	byVersion := map[int][]string{}
	for k, v := range labels {
		byVersion[v] = append(byVersion[v], k)
	}
	out := Listing{ID: id, Latest: hd.latest(), Labels: labels, Deprecated: hd.Deprecated, Versions: make([]Version, 0, len(hd.Versions))}
	for i := len(hd.Versions) - 1; i >= 0; i-- {
		hv := hd.Versions[i]
		row, err := h.row(id, hv.N, hv.Key, hv.SHA256)
		if err != nil {
			return Listing{}, err
		}
		v := row.Version
		v.Labels = byVersion[v.Version]
		v.Yanked = hd.Yanked[v.Version]
		if h.cfg.ListContent {
			v.Definition = row.Content
		}
		sort.Strings(v.Labels)
		out.Versions = append(out.Versions, v)
	}
	return out, nil
}

// Select returns the content a selector (a version number, a label or
// sha256:<hex>) names, and which version that is.
func (h *History) Select(id, selector string) (string, Pick, error) {
	p, err := h.Resolve(id, selector)
	if err != nil {
		return "", p, err
	}
	c, err := h.Content(id, p.Version)
	return c, p, err
}
