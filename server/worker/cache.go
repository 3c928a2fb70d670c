package worker

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/registry"
)

// skillCache mirrors the skills state scope in memory so that the index,
// listings and single reads never re-list and re-parse the whole scope
// (upstream does on every read; with 10 000 skills that is the difference
// between microseconds and hundreds of milliseconds).
//
// State stays the source of truth: every write goes to state first and the
// cache follows it. Writes that other workers make straight into the scope
// arrive as `state` trigger events (see Worker.bindStateEvents). Until the
// first full load succeeded the cache is not "ready" and readers fall back
// to state, exactly like upstream.
type skillCache struct {
	mu    sync.RWMutex
	ready bool
	rows  map[string]registry.StoredSkill
	index *registry.Index

	// While a load's state::list is in flight, writes are also journaled and
	// replayed over the loaded rows, so a register that lands between the
	// list and the swap is not lost.
	loading bool
	journal []cacheOp

	// pub, when set, is the catalog source mirrored from the cache.
	pub *catalog.Source
}

// cacheOp is a journaled write: a put of row, or a removal of id.
type cacheOp struct {
	row    registry.StoredSkill
	id     string
	remove bool
}

func newSkillCache() *skillCache {
	return &skillCache{rows: map[string]registry.StoredSkill{}, index: registry.NewIndex()}
}

// beginLoad starts journaling writes ahead of a load.
func (c *skillCache) beginLoad() {
	c.mu.Lock()
	c.loading = true
	c.journal = c.journal[:0]
	c.mu.Unlock()
}

// abortLoad ends a load whose state::list failed.
func (c *skillCache) abortLoad() {
	c.mu.Lock()
	c.loading = false
	c.journal = nil
	c.mu.Unlock()
}

// load replaces the whole content with rows from a state::list, then
// replays the writes journaled since beginLoad.
func (c *skillCache) load(raw []json.RawMessage) {
	rows := make(map[string]registry.StoredSkill, len(raw))
	entries := make([]registry.IndexEntry, 0, len(raw))
	for _, r := range raw {
		s, err := registry.DecodeStoredSkill(r)
		if err != nil {
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
	for _, s := range rows {
		entries = append(entries, registry.NewIndexEntry(s.ID, s.Skill))
	}
	c.rows = rows
	c.index.Replace(entries)
	c.ready = true
	c.loading = false
	c.journal = nil
	c.feedReplace(rows)
}

func (c *skillCache) invalidate() {
	c.mu.Lock()
	c.ready = false
	c.mu.Unlock()
}

func (c *skillCache) put(s registry.StoredSkill) {
	e := registry.NewIndexEntry(s.ID, s.Skill) // parse outside the lock
	c.mu.Lock()
	c.rows[s.ID] = s
	c.index.PutEntry(e)
	if c.loading {
		c.journal = append(c.journal, cacheOp{row: s})
	}
	c.mu.Unlock()
	c.feedPut(s)
}

// putIfChanged puts s unless the cache already holds that exact row: the
// state events of the worker's own writes arrive after it cached them.
func (c *skillCache) putIfChanged(s registry.StoredSkill) {
	c.mu.RLock()
	cur, ok := c.rows[s.ID]
	c.mu.RUnlock()
	if ok && cur == s {
		return
	}
	c.put(s)
}

func (c *skillCache) remove(id string) {
	c.mu.Lock()
	delete(c.rows, id)
	c.index.Delete(id)
	if c.loading {
		c.journal = append(c.journal, cacheOp{id: id, remove: true})
	}
	c.mu.Unlock()
	c.feedRemove(id)
}

// get returns the row for id; ready is false when the cache cannot answer.
func (c *skillCache) get(id string) (row registry.StoredSkill, found, ready bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	row, found = c.rows[id]
	return row, found, c.ready
}

// renderIndex returns the iii://skills body, or ready=false.
func (c *skillCache) renderIndex() (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return "", false
	}
	return c.index.Render(), true
}

// entries returns the index entries in id order, or ready=false.
func (c *skillCache) entries() ([]registry.IndexEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, false
	}
	return c.index.Entries(), true
}

// list returns every row sorted by id, or ready=false.
func (c *skillCache) list() ([]registry.StoredSkill, bool) {
	c.mu.RLock()
	if !c.ready {
		c.mu.RUnlock()
		return nil, false
	}
	out := make([]registry.StoredSkill, 0, len(c.rows))
	for _, r := range c.rows {
		out = append(out, r)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b registry.StoredSkill) int { return strings.Compare(a.ID, b.ID) })
	return out, true
}
