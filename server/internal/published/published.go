package published

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Source is the catalog source fed with the skills workers register (the
// skills state scope), at catalog.RankPublished.
const Source = "published"

// Mirror mirrors the skills state scope into the catalog's "published"
// source, so the index, listings and single reads never re-list and
// re-parse the whole scope (upstream does on every read; with 10 000
// skills that is the difference between microseconds and hundreds of
// milliseconds). Against an external engine the catalog holds the one
// in-memory copy of each body; on the embedded engine (read set) bodies
// stay in its store and each read fetches its row (a few microseconds),
// so memory holds only what listings need (stored).
//
// State stays the source of truth: every write goes to state first and the
// catalog follows it. Writes that other workers make straight into the
// scope arrive as `state` trigger events (see Worker.bindStateEvents). Until
// the first full load succeeded the mirror is not "ready" and readers fall
// back to state, exactly like upstream.
type Mirror struct {
	src *catalog.Source
	// read, when set, reads a row of the skills scope from the store this
	// process owns; entries then read their bodies through it (stored).
	read func(id string) (json.RawMessage, bool, error)
	// hot keeps the bodies read most recently (with read set).
	hot *hotBodies
	// serve, when set, says what a read of row's id serves when that is
	// not row itself: the serve label's version, the newest one not
	// yanked, or nothing (see EntryFor).
	serve func(row registry.StoredSkill) Served

	mu    sync.Mutex
	ready bool
	// sizes holds the body size of every state row the mirror follows
	// (withdrawn ones included), total their sum: the registry's caps on
	// published skills count them.
	sizes map[string]int
	total int64
	// withdrawn holds the rows whose id serves nothing (every version
	// yanked): they are not in the catalog, and come back when a version
	// is put back in service.
	withdrawn map[string]registry.StoredSkill

	// While a load's state::list is in flight, writes are also journaled and
	// replayed over the loaded rows, so a register that lands between the
	// list and the swap is not lost.
	loading bool
	journal []cacheOp
}

// cacheOp is a journaled write: a put of row, or a removal of id.
type cacheOp struct {
	row    registry.StoredSkill
	id     string
	remove bool
}

// publishedMeta keeps a registered_at that Modified cannot reproduce byte
// for byte (a row another writer stored with its own format). Rows this
// worker wrote keep it in Modified alone, which costs no extra memory.
type publishedMeta struct {
	registeredAt string
}

// registeredTime parses a registered_at that registry.Timestamp renders
// back identically.
func registeredTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	t = t.UTC()
	return t, registry.Timestamp(t) == s
}

// Options say where a Mirror's bodies live.
type Options struct {
	// Read, when set, reads a row of the skills scope from a store in this
	// process that nobody else writes: entries then read their bodies
	// through it on each use (stored), the skills read again kept hot.
	// Nil: bodies are held in the catalog.
	Read func(id string) (json.RawMessage, bool, error)
	// Serve, when set, says what a read of row's id serves when that is
	// not row itself (see Served).
	Serve func(row registry.StoredSkill) Served
}

// Served is what a read of a state row's id serves: the row itself (the
// zero value), another version's Body registered At (Pinned: the serve
// label's, or the newest one not yanked), or nothing (Withdrawn: every
// version is yanked; the id is then left out of the catalog).
type Served struct {
	Body      string
	At        time.Time
	Pinned    bool
	Withdrawn bool
}

// New mirrors into src.
func New(src *catalog.Source, o Options) *Mirror {
	m := &Mirror{src: src, read: o.Read, serve: o.Serve, sizes: map[string]int{}, withdrawn: map[string]registry.StoredSkill{}}
	if o.Read != nil {
		m.hot = newHotBodies(DefaultHotBodyBytes)
	}
	return m
}

// Source is the catalog source the mirror feeds.
func (c *Mirror) Source() *catalog.Source { return c.src }

// Hot reports whether id's body, read for the entry with digest d, is
// kept in memory.
func (c *Mirror) Hot(id string, d catalog.Digest) bool {
	if c.hot == nil {
		return false
	}
	_, ok := c.hot.get(id, d)
	return ok
}

// entryOf turns a state row into a catalog entry (parsing outside locks).
func entryOf(s registry.StoredSkill) *catalog.Entry {
	e := &catalog.Entry{
		ID:         s.ID,
		Kind:       catalog.KindInstruction,
		Body:       catalog.Inline(s.Skill),
		BodyDigest: catalog.DigestOfString(s.Skill),
		Origin:     catalog.Origin{Kind: catalog.OriginPublished, Source: Source},
	}
	if t, ok := registeredTime(s.RegisteredAt); ok {
		e.Modified = t
	} else {
		e.Extra = publishedMeta{registeredAt: s.RegisteredAt}
	}
	e.SetSummary(s.Skill)
	return e
}

// pinnedMeta marks an entry that serves an older version than its state
// row (the serve label's, docs/versions.md): listings, the index, search
// and MCP describe what is served, while the mirror still compares state
// rows with the row kept here.
type pinnedMeta struct {
	row registry.StoredSkill
}

// EntryFor is the catalog entry of state row s: the served version's
// content when another one is served, else s itself; nil when the id
// serves nothing (every version yanked).
func (c *Mirror) EntryFor(s registry.StoredSkill) *catalog.Entry {
	if c.serve != nil {
		if sv := c.serve(s); sv.Withdrawn {
			return nil
		} else if sv.Pinned {
			e := entryOf(registry.StoredSkill{ID: s.ID, RegisteredAt: registry.Timestamp(sv.At), Skill: sv.Body})
			e.Modified, e.Extra = sv.At, pinnedMeta{row: s}
			return e
		}
	}
	return c.stored(entryOf(s), s)
}

// stored makes e (the entry of state row s) read its body from the store
// on each use instead of holding it, when the worker reads its own store.
// Why: the body is already in the store's file; a second copy in the heap
// is most of the registry's memory, and the collector's headroom over it
// half as much again right after a burst of registrations. Title and
// description are copied out so that no substring keeps the body alive.
// A read racing a newer write of the id returns the newer body, as a read
// of a folder skill being edited returns the new file.
func (c *Mirror) stored(e *catalog.Entry, s registry.StoredSkill) *catalog.Entry {
	if c.read == nil {
		return e
	}
	e.Title, e.Description = strings.Clone(e.Title), strings.Clone(e.Description)
	id, digest := s.ID, e.BodyDigest
	// The first read of a new entry is the search index taking it in, right
	// after the write: it gets the body the write brought, which is then
	// let go. Of the reads from the store, the first (the MCP view taking
	// the skill in) is not kept hot: only a skill read again is, or a burst
	// of registrations would fill the hot bodies with skills nobody reads.
	var fresh atomic.Pointer[string]
	fresh.Store(&s.Skill)
	var storeReads atomic.Int32
	e.Body = catalog.LazyString(e.Body.Size(), func() (string, error) {
		if body := fresh.Swap(nil); body != nil {
			return *body, nil
		}
		if body, ok := c.hot.get(id, digest); ok {
			return body, nil
		}
		raw, ok, err := c.read(id)
		if err != nil {
			return "", fmt.Errorf("read skill %s from the store: %w", id, err)
		}
		if !ok {
			return "", fmt.Errorf("skill %s is no longer stored", id)
		}
		row, err := registry.DecodeStoredSkill(raw)
		if err != nil {
			return "", fmt.Errorf("stored skill %s: %w", id, err)
		}
		if storeReads.Add(1) > 1 {
			c.hot.put(id, digest, row.Skill)
		}
		return row.Skill, nil
	})
	return e
}

// ServedAt is the registered_at a listing shows for a published entry:
// that of the content it serves.
func ServedAt(e *catalog.Entry) string {
	if _, ok := e.Extra.(pinnedMeta); ok {
		return registry.Timestamp(e.Modified)
	}
	return rowRegisteredAt(e)
}

// rowRegisteredAt is the registered_at of the state row an unpinned entry
// came from.
func rowRegisteredAt(e *catalog.Entry) string {
	if m, ok := e.Extra.(publishedMeta); ok {
		return m.registeredAt
	}
	return registry.Timestamp(e.Modified)
}

// rowOf is the state row an entry of the published source came from
// (reading its body from the store when it is kept there).
func rowOf(e *catalog.Entry) registry.StoredSkill {
	if p, ok := e.Extra.(pinnedMeta); ok {
		return p.row
	}
	body, _ := e.Body.String()
	return registry.StoredSkill{ID: e.ID, RegisteredAt: rowRegisteredAt(e), Skill: body}
}

// Mark identifies the state row an entry came from without its body:
// registered_at and the body's digest.
type Mark struct {
	registeredAt string
	digest       catalog.Digest
}

func markOf(e *catalog.Entry) Mark {
	if p, ok := e.Extra.(pinnedMeta); ok {
		return Mark{p.row.RegisteredAt, catalog.DigestOfString(p.row.Skill)}
	}
	return Mark{rowRegisteredAt(e), e.BodyDigest}
}

func markOfRow(s registry.StoredSkill) Mark {
	return Mark{s.RegisteredAt, catalog.DigestOfString(s.Skill)}
}

// BeginLoad starts journaling writes ahead of a load.
func (c *Mirror) BeginLoad() {
	c.mu.Lock()
	c.loading = true
	c.journal = c.journal[:0]
	c.mu.Unlock()
}

// AbortLoad ends a load whose state::list failed.
func (c *Mirror) AbortLoad() {
	c.mu.Lock()
	c.loading = false
	c.journal = nil
	c.mu.Unlock()
}

// Load replaces the whole content with rows from a state::list, then
// replays the writes journaled since beginLoad.
func (c *Mirror) Load(raw []json.RawMessage) {
	rows := make(map[string]registry.StoredSkill, len(raw))
	for _, r := range raw {
		s, err := registry.DecodeStoredSkill(r)
		if err != nil || registry.ValidateID(s.ID) != nil {
			continue // upstream drops rows that do not decode
		}
		rows[s.ID] = s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range c.journal {
		if op.remove {
			delete(rows, op.id)
		} else {
			rows[op.row.ID] = op.row
		}
	}
	// Rows that did not change keep their entry, so a reload causes no
	// change events for them.
	entries := make([]*catalog.Entry, 0, len(rows))
	c.sizes, c.total, c.withdrawn = make(map[string]int, len(rows)), 0, map[string]registry.StoredSkill{}
	for _, s := range rows {
		c.sizes[s.ID] = len(s.Skill)
		c.total += int64(len(s.Skill))
		if cur, ok := c.src.Get(s.ID, ""); ok && c.current(cur, s) {
			entries = append(entries, cur)
			continue
		}
		if e := c.EntryFor(s); e != nil {
			entries = append(entries, e)
		} else {
			c.withdrawn[s.ID] = s
		}
	}
	_ = c.src.Replace(entries) // ids were validated above
	c.ready = true
	c.loading = false
	c.journal = nil
}

// Invalidate makes readers fall back to state until the next Load.
func (c *Mirror) Invalidate() {
	c.mu.Lock()
	c.ready = false
	c.mu.Unlock()
}

// Ready reports whether a Load filled the mirror (and no Invalidate
// followed): until then readers fall back to state, like upstream.
func (c *Mirror) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// Put mirrors state row s (the id was validated by the caller).
func (c *Mirror) Put(s registry.StoredSkill) {
	e := c.EntryFor(s) // parse outside the lock
	c.mu.Lock()
	c.setSize(s.ID, len(s.Skill))
	if e == nil {
		c.withdrawn[s.ID] = s
		c.src.Remove(s.ID)
	} else {
		delete(c.withdrawn, s.ID)
		_ = c.src.Put(e)
	}
	if c.loading {
		c.journal = append(c.journal, cacheOp{row: s})
	}
	c.mu.Unlock()
}

// PutIfChanged puts s unless the mirror already holds that exact row,
// serving the same content (the state events of the worker's own writes
// arrive after it stored them), and reports whether it did.
func (c *Mirror) PutIfChanged(s registry.StoredSkill) bool {
	if cur, ok := c.src.Get(s.ID, ""); ok && c.current(cur, s) {
		return false
	}
	c.mu.Lock()
	w, was := c.withdrawn[s.ID]
	c.mu.Unlock()
	if was && markOfRow(w) == markOfRow(s) && c.serve != nil && c.serve(s).Withdrawn {
		return false
	}
	if registry.ValidateID(s.ID) != nil {
		return false
	}
	c.Put(s)
	return true
}

// current reports whether cur is the entry state row s makes: the same
// row, serving the same content.
func (c *Mirror) current(cur *catalog.Entry, s registry.StoredSkill) bool {
	if cur.ID != s.ID || markOf(cur) != markOfRow(s) {
		return false
	}
	_, pinned := cur.Extra.(pinnedMeta)
	if c.serve == nil {
		return !pinned
	}
	sv := c.serve(s)
	switch {
	case sv.Withdrawn:
		return false
	case !sv.Pinned:
		return !pinned
	}
	return pinned && cur.BodyDigest == catalog.DigestOfString(sv.Body)
}

// Repin rebuilds id's entry from its state row after what a read of it
// serves changed (the serve label moved, a version was yanked or put
// back). Callers hold id's history lock, as registrations do when they
// put, so no newer row is overwritten.
func (c *Mirror) Repin(id string) {
	if cur, ok := c.src.Get(id, ""); ok {
		c.Put(rowOf(cur))
		return
	}
	c.mu.Lock()
	w, ok := c.withdrawn[id]
	c.mu.Unlock()
	if ok {
		c.Put(w)
	}
}

// Row is the state row of id the mirror follows (served or withdrawn).
func (c *Mirror) Row(id string) (registry.StoredSkill, bool) {
	if cur, ok := c.src.Get(id, ""); ok {
		return rowOf(cur), true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.withdrawn[id]
	return w, ok
}

// IDs lists the ids of every state row the mirror follows.
func (c *Mirror) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.sizes))
	for id := range c.sizes {
		out = append(out, id)
	}
	return out
}

// Stats are the number of state rows the mirror follows and the bytes of
// their bodies, and the size of id's body (-1: no row).
func (c *Mirror) Stats(id string) (count int, total int64, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size, ok := c.sizes[id]
	if !ok {
		size = -1
	}
	return len(c.sizes), c.total, size
}

// setSize records the body size of id's row (-1: none). Callers hold c.mu.
func (c *Mirror) setSize(id string, size int) {
	if old, ok := c.sizes[id]; ok {
		c.total -= int64(old)
		delete(c.sizes, id)
	}
	if size >= 0 {
		c.sizes[id] = size
		c.total += int64(size)
	}
}

// Remove drops id and reports whether the mirror held it.
func (c *Mirror) Remove(id string) bool {
	if c.hot != nil {
		c.hot.drop(id)
	}
	c.mu.Lock()
	_, had := c.src.Get(id, "")
	if _, w := c.withdrawn[id]; w {
		had = true
		delete(c.withdrawn, id)
	}
	c.setSize(id, -1)
	c.src.Remove(id)
	if c.loading {
		c.journal = append(c.journal, cacheOp{id: id, remove: true})
	}
	c.mu.Unlock()
	return had
}

// Snapshot marks the rows the mirror holds, by id.
func (c *Mirror) Snapshot() map[string]Mark {
	entries := c.src.Entries()
	out := make(map[string]Mark, len(entries))
	for _, e := range entries {
		out[e.ID] = markOf(e)
	}
	c.mu.Lock()
	for id, w := range c.withdrawn {
		out[id] = markOfRow(w)
	}
	c.mu.Unlock()
	return out
}
