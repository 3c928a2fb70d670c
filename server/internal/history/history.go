package history

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/store"
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

// Backend is the durable key/value store history lives in: the engine's
// state::* functions or the engine's store itself. Set and Delete return
// once the write is durable; Set owns value (valid JSON, never changed
// afterwards); Get reports a missing key with ok false.
type Backend interface {
	Get(scope, key string) (value json.RawMessage, ok bool, err error)
	Set(scope, key string, value json.RawMessage) error
	Delete(scope, key string) error
	List(scope string) ([]json.RawMessage, error)
}

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
	// OnChange, when set, is told the id whose versions or labels changed
	// (a new version, a label move, a version dropped), after the change is
	// durable. It runs with the id's lock held: it must not block or call
	// back into History.
	OnChange func(id string)

	// SharedBackend says other registry instances write to the same
	// backend (engines sharing state on Redis). Content rows are then
	// keyed in a range drawn at random for this instance, so two
	// instances never allocate the same key.
	SharedBackend bool
}

// sharedKeyBits is the width of the sequence inside an instance's key
// range when the backend is shared: the top 24 bits pick the range.
const sharedKeyBits = 40

// Version is one immutable version's metadata.
type Version struct {
	Version      int      `json:"version"`
	RegisteredAt string   `json:"registered_at"`
	Bytes        int      `json:"bytes"`
	SHA256       string   `json:"sha256"`
	Message      string   `json:"message,omitempty"`
	Author       string   `json:"author,omitempty"`
	Labels       []string `json:"labels,omitempty"` // filled in listings only
}

// Meta is what a registration says about its new version.
type Meta struct {
	Message, Author string
}

// head is the stored record of one id (S.history / id). It stays small
// (about 40 bytes per kept version): a new version rewrites it.
type head struct {
	ID     string         `json:"id"`
	Latest int            `json:"latest"`
	SHA256 string         `json:"sha256"` // of the newest version
	Labels map[string]int `json:"labels,omitempty"`
	// Versions are the kept versions, oldest first.
	Versions []headVersion `json:"versions"`
}

// headVersion is a kept version in a head: what retention and look-ups
// need. The rest of its metadata is in its content row.
type headVersion struct {
	N     int    `json:"n"`
	Key   uint64 `json:"key"`   // its content row's key (see contentKey)
	Bytes int    `json:"bytes"` // of its content
	At    int64  `json:"at"`    // registered, unix nanoseconds
}

// contentRow is a version's stored record (S.versions / contentKey): its
// metadata and content.
type contentRow struct {
	ID string `json:"id"`
	Version
	Content string `json:"content"`
}

// kept is one kept version in a summary: enough to find its content and
// to pick what retention drops.
type kept struct {
	n     int32
	bytes int32
	at    int64 // unix nanoseconds
	key   uint64
}

// summary is the in-memory view of a head.
type summary struct {
	latest int
	digest [sha256.Size]byte
	labels map[string]int
	kept   []kept // oldest first
}

// History keeps the versions of one registry scope. It is safe for
// concurrent use; operations on one id are serialized.
type History struct {
	b        Backend
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
	// keyBase is the start of this instance's key range (0 unless
	// Config.SharedBackend).
	keyBase uint64

	mu    sync.RWMutex // guards sums and total
	sums  map[string]*summary
	total int64

	cache contentCache // decoded contents of recently read versions
}

// New returns the history of cfg.Scope in b; it loads lazily.
func New(b Backend, cfg Config) *History {
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
	h := &History{b: b, cfg: cfg, heads: HeadsScope(cfg.Scope), contents: VersionsScope(cfg.Scope),
		seed: maphash.MakeSeed(), sums: map[string]*summary{}}
	if cfg.SharedBackend {
		// Never 0: that range holds the keys of unshared registries.
		h.keyBase = (1 + rand.Uint64N(1<<24-1)) << sharedKeyBits
	}
	return h
}

// Refresh re-reads the head of id: another registry instance sharing the
// backend changed it (a new version, a label move, a removal).
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
// a reconcile found that other instances changed the backend).
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

// contentKey renders a content row's key: a sequence in fixed-width hex,
// so rows are appended at the end of the store's tree, which costs a
// B+tree far less than inserts scattered over it.
func contentKey(k uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[k&15]
		k >>= 4
	}
	return string(b[:])
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
	raws, err := h.b.List(h.heads)
	if err != nil {
		return fmt.Errorf("load %s history: %w", h.cfg.Noun, err)
	}
	sums := make(map[string]*summary, len(raws))
	var total int64
	next := h.keyBase + 1
	for _, raw := range raws {
		var hd head
		if json.Unmarshal(raw, &hd) != nil || hd.ID == "" || len(hd.Versions) == 0 {
			continue // not ours: ignored, never rewritten by accident
		}
		s := summaryOf(&hd)
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
	s := &summary{latest: hd.Latest, kept: make([]kept, 0, len(hd.Versions))}
	for _, v := range hd.Versions {
		s.kept = append(s.kept, kept{n: int32(v.N), bytes: int32(v.Bytes), at: v.At, key: v.Key})
	}
	if d, err := hex.DecodeString(hd.SHA256); err == nil && len(d) == sha256.Size {
		copy(s.digest[:], d)
	}
	if len(hd.Labels) > 0 {
		s.labels = make(map[string]int, len(hd.Labels))
		for k, v := range hd.Labels {
			s.labels[k] = v
		}
	}
	return s
}

// head rebuilds the stored head of id from its summary.
func (s *summary) head(id string) *head {
	hd := &head{ID: id, Latest: s.latest, SHA256: hex.EncodeToString(s.digest[:]),
		Versions: make([]headVersion, len(s.kept), len(s.kept)+1)}
	for i, k := range s.kept {
		hd.Versions[i] = headVersion{N: int(k.n), Key: k.key, Bytes: int(k.bytes), At: k.at}
	}
	if len(s.labels) > 0 {
		hd.Labels = make(map[string]int, len(s.labels))
		for k, v := range s.labels {
			hd.Labels[k] = v
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

func (h *History) getHead(id string) (*head, error) {
	raw, ok, err := h.b.Get(h.heads, id)
	if err != nil {
		return nil, fmt.Errorf("read the history of %s %s: %w", h.cfg.Noun, id, err)
	}
	if !ok {
		return nil, nil
	}
	var hd head
	if err := json.Unmarshal(raw, &hd); err != nil {
		return nil, fmt.Errorf("the history of %s %s does not decode: %w", h.cfg.Noun, id, err)
	}
	return &hd, nil
}

func (h *History) putHead(hd *head) error {
	raw := encodeHead(hd)
	return h.b.Set(h.heads, hd.ID, raw)
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

// Record makes content the id's next version unless it is the newest one
// already, and runs commit (the caller's write of the served row) at the
// same time, so both share one durable commit. It returns the version that
// content now is and whether it was created. commit runs in every case;
// an error from it or from history is returned.
func (h *History) Record(id, content string, meta Meta, commit func() error) (Version, bool, error) {
	var joint func([]Write) error
	if commit != nil {
		joint = func([]Write) error { return commit() }
	}
	return h.record(id, content, meta, joint, false)
}

// Write is a history record for RecordWith's commit to store.
type Write = store.Write

// RecordWith is Record for a caller that stores its served row and
// history's records in one transaction: commit gets the records of a new
// version (none when content is the newest already) and must make them
// durable together with its own write, or fail. History then writes
// nothing itself (apart from dropping versions retention let go), so a
// new version costs one commit, and a crash leaves all or nothing.
func (h *History) RecordWith(id, content string, meta Meta, commit func(extra []Write) error) (Version, bool, error) {
	return h.record(id, content, meta, commit, true)
}

func (h *History) record(id, content string, meta Meta, commit func([]Write) error, joint bool) (Version, bool, error) {
	if err := h.load(); err != nil {
		return Version{}, false, err
	}
	unlock := h.lock(id)
	v, created, err := h.recordLocked(id, content, meta, commit, joint)
	unlock()
	if err == nil && created {
		h.evict(id)
	}
	return v, created, err
}

func (h *History) recordLocked(id, content string, meta Meta, commit func([]Write) error, joint bool) (Version, bool, error) {
	digest := Digest(content)
	h.mu.RLock()
	s := h.sums[id]
	h.mu.RUnlock()
	if s != nil && s.digest == digest {
		if commit != nil {
			if err := commit(nil); err != nil {
				return Version{}, false, err
			}
		}
		return Version{Version: s.latest, SHA256: hex.EncodeToString(digest[:])}, false, nil
	}
	var hd *head
	switch {
	case joint && s != nil:
		// A joint caller keeps history in its own store, where every
		// head was loaded into a summary, and heads change only under
		// the id's lock (held): the summary is the head, without a read
		// and a decode of up to Retain versions.
		hd = s.head(id)
	case !joint:
		var err error
		if hd, err = h.getHead(id); err != nil {
			return Version{}, false, err
		}
	}
	// (A joint caller's id without a summary has no head.)
	if hd == nil {
		hd = &head{ID: id}
	}
	now := h.cfg.Now()
	v := Version{Version: hd.Latest + 1, RegisteredAt: timestamp(now), Bytes: len(content),
		SHA256: hex.EncodeToString(digest[:]), Message: meta.Message, Author: meta.Author}
	key := h.nextKey.Add(1) - 1
	hd.Versions = append(hd.Versions, headVersion{N: v.Version, Key: key, Bytes: len(content), At: now.UnixNano()})
	hd.Latest, hd.SHA256 = v.Version, v.SHA256
	dropped := h.retain(hd)
	gone := dropped
	row := encodeContentRow(id, v, content)
	headRaw := encodeHead(hd)
	if joint {
		// One transaction holds the caller's row, the content, the head
		// and the removal of the versions retention let go.
		writes := make([]Write, 0, 2+len(dropped))
		writes = append(writes, Write{Scope: h.contents, Key: contentKey(key), Value: row}, Write{Scope: h.heads, Key: id, Value: headRaw})
		for _, k := range dropped {
			writes = append(writes, Write{Scope: h.contents, Key: contentKey(k), Delete: true})
		}
		if err := commit(writes); err != nil {
			return Version{}, false, err
		}
		dropped = nil
	} else {
		// The three writes go out together and usually meet in one group
		// commit (not always: see RecordWith).
		var wg sync.WaitGroup
		var errRow, errHead, errCommit error
		wg.Add(2)
		go func() { defer wg.Done(); errRow = h.b.Set(h.contents, contentKey(key), row) }()
		go func() { defer wg.Done(); errHead = h.b.Set(h.heads, id, headRaw) }()
		if commit != nil {
			errCommit = commit(nil)
		}
		wg.Wait()
		if err := errors.Join(errRow, errHead); err != nil {
			return Version{}, false, fmt.Errorf("record version %d of %s %s: %w", v.Version, h.cfg.Noun, id, err)
		}
		if errCommit != nil {
			return Version{}, false, errCommit
		}
	}
	for _, k := range dropped {
		_ = h.b.Delete(h.contents, contentKey(k)) // a leftover row is harmless
	}
	for _, k := range gone {
		h.cache.forget(k)
	}
	h.setSummary(id, summaryOf(hd))
	return v, true, nil
}

// retain drops the versions older than the last Retain that no label
// holds, and returns their content keys.
func (h *History) retain(hd *head) []uint64 {
	cut := len(hd.Versions) - h.cfg.Retain // versions before cut may go
	if cut <= 0 {
		return nil
	}
	var dropped []uint64
	out := hd.Versions[:0]
	for i, v := range hd.Versions {
		if i < cut && v.N != hd.Latest && !labelled(hd.Labels, v.N) {
			dropped = append(dropped, v.Key)
			continue
		}
		out = append(out, v)
	}
	hd.Versions = out
	return dropped
}

func labelled(labels map[string]int, n int) bool {
	for _, v := range labels {
		if v == n {
			return true
		}
	}
	return false
}

// evict drops the oldest unlabelled, not-newest versions of any id while
// the history holds more than MaxBytes.
func (h *History) evict(skip string) {
	for {
		h.mu.RLock()
		over := h.total > h.cfg.MaxBytes
		var victim string
		var vn int32
		var vat int64
		if over {
			for id, s := range h.sums {
				for _, k := range s.kept {
					if int(k.n) == s.latest || labelled(s.labels, int(k.n)) {
						continue
					}
					if victim == "" || k.at < vat {
						victim, vn, vat = id, k.n, k.at
					}
					break // kept is oldest first
				}
			}
		}
		h.mu.RUnlock()
		if victim == "" {
			return
		}
		if !h.drop(victim, int(vn)) {
			return
		}
	}
}

// drop removes version n of id from its history; false when nothing changed.
func (h *History) drop(id string, n int) bool {
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil || hd == nil {
		return false
	}
	i := slices.IndexFunc(hd.Versions, func(v headVersion) bool { return v.N == n })
	if i < 0 || n == hd.Latest || labelled(hd.Labels, n) {
		return false
	}
	key := hd.Versions[i].Key
	hd.Versions = slices.Delete(hd.Versions, i, i+1)
	if h.putHead(hd) != nil {
		return false
	}
	_ = h.b.Delete(h.contents, contentKey(key))
	h.cache.forget(key)
	h.setSummary(id, summaryOf(hd))
	return true
}

// Listing is the answer of a versions function.
type Listing struct {
	ID       string         `json:"id"`
	Latest   int            `json:"latest"`
	Labels   map[string]int `json:"labels"`
	Versions []Version      `json:"versions"` // newest first
}

// Versions lists the kept versions of id, newest first, with their labels.
func (h *History) Versions(id string) (Listing, error) {
	hd, err := h.getHead(id)
	if err != nil {
		return Listing{}, err
	}
	if hd == nil || len(hd.Versions) == 0 {
		return Listing{}, h.errNoHistory(id)
	}
	labels := map[string]int{LatestLabel: hd.Latest}
	for k, v := range hd.Labels {
		labels[k] = v
	}
	byVersion := map[int][]string{}
	for k, v := range labels {
		byVersion[v] = append(byVersion[v], k)
	}
	out := Listing{ID: id, Latest: hd.Latest, Labels: labels, Versions: make([]Version, 0, len(hd.Versions))}
	for i := len(hd.Versions) - 1; i >= 0; i-- {
		row, err := h.row(id, hd.Versions[i].N, hd.Versions[i].Key)
		if err != nil {
			return Listing{}, err
		}
		v := row.Version
		v.Labels = byVersion[v.Version]
		sort.Strings(v.Labels)
		out.Versions = append(out.Versions, v)
	}
	return out, nil
}

func (h *History) errNoHistory(id string) error {
	return &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no versions", h.cfg.Noun, id)}
}

// Error is a refusal of history: NotFound for an unknown id, version or
// label, else input that is not acceptable (a bad label name, a protected
// label without the admin token).
type Error struct {
	NotFound bool
	Msg      string
}

func (e *Error) Error() string { return e.Msg }

// Resolve turns a selector (a version number or a label) into a kept
// version number of id.
func (h *History) Resolve(id, selector string) (int, error) {
	if err := h.load(); err != nil {
		return 0, err
	}
	h.mu.RLock()
	s := h.sums[id]
	var n int
	var found bool
	if s != nil {
		n, found = resolveIn(s, selector)
	}
	h.mu.RUnlock()
	if s == nil {
		return 0, h.errNoHistory(id)
	}
	if !found {
		if _, err := strconv.Atoi(selector); err == nil {
			return 0, h.errNoVersion(id, selector, s)
		}
		return 0, &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no label %q (labels: %s)", h.cfg.Noun, id, selector, labelNames(s))}
	}
	return n, nil
}

func resolveIn(s *summary, selector string) (int, bool) {
	if n, err := strconv.Atoi(selector); err == nil {
		for _, k := range s.kept {
			if int(k.n) == n {
				return n, true
			}
		}
		return 0, false
	}
	if selector == LatestLabel {
		return s.latest, true
	}
	n, ok := s.labels[selector]
	return n, ok
}

func labelNames(s *summary) string {
	names := []string{LatestLabel}
	for k := range s.labels {
		names = append(names, k)
	}
	sort.Strings(names[1:])
	return strings.Join(names, ", ")
}

func (h *History) errNoVersion(id, selector string, s *summary) error {
	return &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version %s (kept: %s)", h.cfg.Noun, id, selector, keptRange(s))}
}

// keptRange renders the kept version numbers compactly: "1-4, 7".
func keptRange(s *summary) string {
	var parts []string
	for i := 0; i < len(s.kept); {
		j := i
		for j+1 < len(s.kept) && s.kept[j+1].n == s.kept[j].n+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(int(s.kept[i].n)))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s.kept[i].n, s.kept[j].n))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// Served returns the version a read without selector serves when label
// is the serve label: the label's version, or 0 when id has no such label
// (serve the newest) or it is the newest anyway.
func (h *History) Served(id, label string) int {
	if label == "" || label == LatestLabel || h.load() != nil {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return 0
	}
	if n, ok := s.labels[label]; ok && n != s.latest {
		return n
	}
	return 0
}

// LabelVersion is the version label points at for id (even the newest)
// and when that version was registered; 0 when id has no such label.
func (h *History) LabelVersion(id, label string) (int, time.Time) {
	if label == "" || h.load() != nil {
		return 0, time.Time{}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return 0, time.Time{}
	}
	n, ok := s.labels[label]
	if label == LatestLabel {
		n, ok = s.latest, true
	}
	if !ok {
		return 0, time.Time{}
	}
	for _, k := range s.kept {
		if int(k.n) == n {
			return n, time.Unix(0, k.at).UTC()
		}
	}
	return n, time.Time{}
}

// Numbers lists the kept version numbers of id, newest first, from
// memory (no store read); nil when id has no history.
func (h *History) Numbers(id string) []int {
	if h.load() != nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return nil
	}
	out := make([]int, 0, len(s.kept))
	for i := len(s.kept) - 1; i >= 0; i-- {
		out = append(out, int(s.kept[i].n))
	}
	return out
}

// Locked runs fn with id's lock held: fn sees no registration (Record's
// commit runs under it) or label move of id half done.
func (h *History) Locked(id string, fn func()) {
	unlock := h.lock(id)
	defer unlock()
	fn()
}

// Content returns the content of version n of id.
func (h *History) Content(id string, n int) (string, error) {
	if err := h.load(); err != nil {
		return "", err
	}
	h.mu.RLock()
	var key uint64
	found := false
	if s := h.sums[id]; s != nil {
		for _, k := range s.kept {
			if int(k.n) == n {
				key, found = k.key, true
				break
			}
		}
	}
	h.mu.RUnlock()
	if !found {
		return "", &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version %d", h.cfg.Noun, id, n)}
	}
	if c, ok := h.cache.get(key, id, n); ok {
		return c, nil
	}
	raw, ok, err := h.b.Get(h.contents, contentKey(key))
	if err != nil {
		return "", fmt.Errorf("read version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	if c, fast := contentOf(raw, id, n); ok && fast {
		h.cache.put(key, id, n, c)
		return c, nil
	}
	row, err := h.row(id, n, key)
	if err != nil {
		return "", err
	}
	h.cache.put(key, id, n, row.Content)
	return row.Content, nil
}

// contentOf takes the content out of a content row of version n of id
// without encoding/json's reflection (which cost a selector read more than
// the rest of it); ok is false for anything it does not recognize, and the
// caller decodes the row the slow way.
func contentOf(raw []byte, id string, n int) (content string, ok bool) {
	var idOK, nOK, cOK bool
	scanned := wire.ScanObject(raw, func(key, value []byte) bool {
		switch string(key) {
		case "id":
			s, plain := wire.PlainString(value)
			idOK = plain && s == id
		case "version":
			v, err := strconv.Atoi(string(value))
			nOK = err == nil && v == n
		case "content":
			content, cOK = unquote(value)
		}
		return true
	})
	return content, scanned && idOK && nOK && cOK
}

// row reads the content row of version n of id at key.
func (h *History) row(id string, n int, key uint64) (contentRow, error) {
	raw, ok, err := h.b.Get(h.contents, contentKey(key))
	if err != nil {
		return contentRow{}, fmt.Errorf("read version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	var row contentRow
	if !ok || json.Unmarshal(raw, &row) != nil || row.ID != id || row.Version.Version != n {
		return contentRow{}, fmt.Errorf("version %d of %s %s: its stored content is missing or does not decode", n, h.cfg.Noun, id)
	}
	return row, nil
}

// encodeContentRow writes a content row's JSON directly: encoding/json
// would scan and escape the content once more (and for HTML, which nobody
// reads it as) on every new version.
// encodeHead renders hd as json.Marshal does (labels in key order),
// without reflection: every new version rewrites its id's head.
func encodeHead(hd *head) json.RawMessage {
	b := make([]byte, 0, 96+len(hd.ID)+48*len(hd.Versions)+24*len(hd.Labels))
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, hd.ID)
	b = append(b, `,"latest":`...)
	b = strconv.AppendInt(b, int64(hd.Latest), 10)
	b = append(b, `,"sha256":`...)
	b = wire.AppendJSONString(b, hd.SHA256)
	if len(hd.Labels) > 0 {
		names := make([]string, 0, len(hd.Labels))
		for k := range hd.Labels {
			names = append(names, k)
		}
		sort.Strings(names)
		b = append(b, `,"labels":{`...)
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(hd.Labels[k]), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"versions":`...)
	if hd.Versions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, v := range hd.Versions {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"n":`...)
			b = strconv.AppendInt(b, int64(v.N), 10)
			b = append(b, `,"key":`...)
			b = strconv.AppendUint(b, v.Key, 10)
			b = append(b, `,"bytes":`...)
			b = strconv.AppendInt(b, int64(v.Bytes), 10)
			b = append(b, `,"at":`...)
			b = strconv.AppendInt(b, v.At, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func encodeContentRow(id string, v Version, content string) json.RawMessage {
	b := make([]byte, 0, len(content)+len(content)/16+len(v.Message)+len(v.Author)+len(id)+192)
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, id)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(v.Version), 10)
	b = append(b, `,"registered_at":`...)
	b = wire.AppendJSONString(b, v.RegisteredAt)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(v.Bytes), 10)
	b = append(b, `,"sha256":"`...)
	b = append(b, v.SHA256...)
	b = append(b, '"')
	if v.Message != "" {
		b = append(b, `,"message":`...)
		b = wire.AppendJSONString(b, v.Message)
	}
	if v.Author != "" {
		b = append(b, `,"author":`...)
		b = wire.AppendJSONString(b, v.Author)
	}
	b = append(b, `,"content":`...)
	b = wire.AppendJSONString(b, content)
	return append(b, '}')
}

// Select returns the content a selector names.
func (h *History) Select(id, selector string) (string, int, error) {
	n, err := h.Resolve(id, selector)
	if err != nil {
		return "", 0, err
	}
	c, err := h.Content(id, n)
	return c, n, err
}

// LabelMove is the result of Label.
type LabelMove struct {
	ID       string `json:"id"`
	Label    string `json:"label"`
	Version  int    `json:"version"`
	Previous int    `json:"previous,omitempty"` // 0: the label is new
}

// CheckLabel says whether name can be a label.
func CheckLabel(name string) error {
	if name == "" || len(name) > MaxLabelBytes {
		return &Error{Msg: fmt.Sprintf("invalid label %q: expected 1 to %d characters", name, MaxLabelBytes)}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_' || c == '.')
		if !ok {
			return &Error{Msg: fmt.Sprintf("invalid label %q: expected lowercase letters, digits, '-', '_' and '.', starting with a letter or digit", name)}
		}
	}
	if _, err := strconv.Atoi(name); err == nil {
		return &Error{Msg: fmt.Sprintf("invalid label %q: a label cannot be a number (numbers select versions)", name)}
	}
	if name == LatestLabel {
		return &Error{Msg: fmt.Sprintf("label %q is moved by the registry only: register new content or use rollback", LatestLabel)}
	}
	return nil
}

// Label points label at version n of id. A protected label needs token.
func (h *History) Label(id, label string, n int, token string) (LabelMove, error) {
	if err := CheckLabel(label); err != nil {
		return LabelMove{}, err
	}
	if slices.Contains(h.cfg.Protected, label) {
		if h.cfg.AdminToken == "" {
			return LabelMove{}, &Error{Msg: fmt.Sprintf("label %q is protected and no admin token is configured (--admin-token): it cannot be moved", label)}
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(h.cfg.AdminToken)) != 1 {
			return LabelMove{}, &Error{Msg: fmt.Sprintf("label %q is protected: pass the registry's admin token as admin_token", label)}
		}
	}
	if err := h.load(); err != nil {
		return LabelMove{}, err
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil {
		return LabelMove{}, err
	}
	if hd == nil || len(hd.Versions) == 0 {
		return LabelMove{}, h.errNoHistory(id)
	}
	if !slices.ContainsFunc(hd.Versions, func(v headVersion) bool { return v.N == n }) {
		return LabelMove{}, h.errNoVersion(id, strconv.Itoa(n), summaryOf(hd))
	}
	move := LabelMove{ID: id, Label: label, Version: n, Previous: hd.Labels[label]}
	if move.Previous == n {
		return move, nil
	}
	if hd.Labels == nil {
		hd.Labels = map[string]int{}
	}
	if _, moving := hd.Labels[label]; !moving && len(hd.Labels) >= MaxLabels {
		return LabelMove{}, &Error{Msg: fmt.Sprintf("%s %s already has %d labels, the most an id can have: move one of them instead", h.cfg.Noun, id, MaxLabels)}
	}
	hd.Labels[label] = n
	if err := h.putHead(hd); err != nil {
		return LabelMove{}, fmt.Errorf("move label %s of %s %s: %w", label, h.cfg.Noun, id, err)
	}
	h.setSummary(id, summaryOf(hd))
	return move, nil
}

// Repair settles what a crash between a new version's writes can leave:
// a head whose newest version has no content row forgets that version, and
// current content (the served row; ok false when there is none) that is
// not the newest version is recorded as a new one with message. current
// is called with id's lock held, so it sees no registration half done.
func (h *History) Repair(id, message string, current func() (content string, ok bool)) error {
	if err := h.load(); err != nil {
		return err
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil {
		return err
	}
	if hd != nil && len(hd.Versions) > 0 {
		newest := hd.Versions[len(hd.Versions)-1]
		if _, ok, err := h.b.Get(h.contents, contentKey(newest.Key)); err != nil {
			return err
		} else if !ok {
			hd.Versions = hd.Versions[:len(hd.Versions)-1]
			for k, v := range hd.Labels {
				if v == newest.N {
					delete(hd.Labels, k)
				}
			}
			hd.Latest, hd.SHA256 = 0, ""
			if n := len(hd.Versions); n > 0 {
				prev := hd.Versions[n-1]
				hd.Latest = prev.N
				if row, err := h.row(id, prev.N, prev.Key); err == nil {
					hd.SHA256 = row.SHA256
				}
			}
			if err := h.putHead(hd); err != nil {
				return err
			}
			h.setSummary(id, summaryOf(hd))
		}
	}
	content, ok := current()
	if !ok {
		return nil
	}
	_, _, err = h.recordLocked(id, content, Meta{Message: message}, nil, false)
	return err
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
	if h.load() != nil {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := h.sums[id]; s != nil {
		return s.latest
	}
	return 0
}

// timestamp renders t like the registry's registered_at (RFC 3339, UTC,
// "+00:00").
func timestamp(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format("2006-01-02T15:04:05.000000000") + "+00:00"
	}
	// By hand: time.Format costs a few per cent of a register.
	hour, minute, sec := t.Clock()
	var buf [40]byte
	b := appendDigits(buf[:0], year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond(), 9)
	return string(append(b, "+00:00"...))
}

// appendDigits appends v (0 ≤ v) in decimal, zero-padded to width.
func appendDigits(b []byte, v, width int) []byte {
	var d [20]byte
	i := len(d)
	for v > 0 || len(d)-i < width {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[i:]...)
}

// unquote decodes a JSON string literal: runs without escapes are copied
// whole (strconv.Unquote goes rune by rune, several times slower on a
// markdown body). ok is false for a malformed literal.
func unquote(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	v = v[1 : len(v)-1]
	out := make([]byte, 0, len(v))
	for {
		i := bytes.IndexByte(v, '\\')
		if i < 0 {
			return string(append(out, v...)), true
		}
		out = append(out, v[:i]...)
		if i+1 >= len(v) {
			return "", false
		}
		c := v[i+1]
		v = v[i+2:]
		switch c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, ok := hex4(v)
			if !ok {
				return "", false
			}
			v = v[4:]
			if utf16.IsSurrogate(r) {
				lo, ok := rune(0), false
				if len(v) >= 6 && v[0] == '\\' && v[1] == 'u' {
					lo, ok = hex4(v[2:])
				}
				if r2 := utf16.DecodeRune(r, lo); ok && r2 != utf8.RuneError {
					r, v = r2, v[6:]
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
}

func hex4(v []byte) (rune, bool) {
	if len(v) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range v[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
