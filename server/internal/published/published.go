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
	// serve, when set (a serve label is configured), returns the content
	// a read of row's id serves when that is not row itself: the serve
	// label's version (see pinnedEntry).
	serve func(row registry.StoredSkill) (body string, at time.Time, ok bool)

	mu    sync.Mutex
	ready bool

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
	// Serve, when set (a serve label is configured), returns the content
	// a read of row's id serves when that is not row itself: the serve
	// label's version (see pinnedMeta).
	Serve func(row registry.StoredSkill) (body string, at time.Time, ok bool)
}

// New mirrors into src.
func New(src *catalog.Source, o Options) *Mirror {
	m := &Mirror{src: src, read: o.Read, serve: o.Serve}
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
// content when the serve label pins another one, else s itself.
func (c *Mirror) EntryFor(s registry.StoredSkill) *catalog.Entry {
	if c.serve != nil {
		if body, at, ok := c.serve(s); ok {
			e := entryOf(registry.StoredSkill{ID: s.ID, RegisteredAt: registry.Timestamp(at), Skill: body})
			e.Modified, e.Extra = at, pinnedMeta{row: s}
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
	for _, s := range rows {
		if cur, ok := c.src.Get(s.ID, ""); ok && c.current(cur, s) {
			entries = append(entries, cur)
			continue
		}
		entries = append(entries, c.EntryFor(s))
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

func (c *Mirror) Put(s registry.StoredSkill) {
	e := c.EntryFor(s) // parse outside the lock
	c.mu.Lock()
	_ = c.src.Put(e) // the id was validated by the caller
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
	body, _, ok := c.serve(s)
	if !ok {
		return !pinned
	}
	return pinned && cur.BodyDigest == catalog.DigestOfString(body)
}

// Repin rebuilds id's entry from its state row after the serve label
// moved. Callers hold id's history lock, as registrations do when they
// put, so no newer row is overwritten.
func (c *Mirror) Repin(id string) {
	if cur, ok := c.src.Get(id, ""); ok {
		c.Put(rowOf(cur))
	}
}

// Remove drops id and reports whether the mirror held it.
func (c *Mirror) Remove(id string) bool {
	if c.hot != nil {
		c.hot.drop(id)
	}
	c.mu.Lock()
	_, had := c.src.Get(id, "")
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
	return out
}
