package catalog

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/sortedset"
)

// Ranks of the usual sources: a lower rank wins. Folder sources take
// RankFolder+i for the i-th configured folder, so the earlier folder wins.
const (
	RankPublished = 0
	RankFolder    = 100
	RankBuiltin   = 1000
)

// Catalog is the one in-memory set of skills. Sources write into it;
// surfaces read it. All methods are safe for concurrent use.
type Catalog struct {
	mu      sync.RWMutex
	sources []*Source         // by rank, then name
	ids     map[string]*Entry // effective entry per id; its source is the owner
	gen     uint64

	// sorted holds every id in ids for ordered reads. Writers (holding mu)
	// add and remove; readers (holding mu.RLock) merge under sortMu.
	sortMu sync.Mutex
	sorted sortedset.Set

	list atomic.Pointer[listSnap]

	subMu sync.Mutex
	subs  []*subscriber
}

type listSnap struct {
	gen     uint64
	entries []*Entry
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{ids: map[string]*Entry{}}
}

// Source is one named, ranked feed of entries. Obtain it with AddSource.
type Source struct {
	c    *Catalog
	name string
	rank int
	// entries maps id to its versions in ascending CompareVersions order.
	entries map[string][]*Entry
}

// AddSource registers a source. The name must be unique; a lower rank
// takes precedence over a higher one, equal ranks order by name.
func (c *Catalog) AddSource(name string, rank int) (*Source, error) {
	if name == "" {
		return nil, fmt.Errorf("catalog source name must be non-empty")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sources {
		if s.name == name {
			return nil, fmt.Errorf("catalog source %q already exists", name)
		}
	}
	s := &Source{c: c, name: name, rank: rank, entries: map[string][]*Entry{}}
	i, _ := slices.BinarySearchFunc(c.sources, s, cmpSource)
	c.sources = slices.Insert(c.sources, i, s)
	return s, nil
}

func cmpSource(a, b *Source) int {
	if a.rank != b.rank {
		if a.rank < b.rank {
			return -1
		}
		return 1
	}
	return strings.Compare(a.name, b.name)
}

// RemoveSource drops a source and everything it holds.
func (c *Catalog) RemoveSource(name string) {
	s := c.Source(name)
	if s == nil {
		return
	}
	s.Replace(nil)
	c.mu.Lock()
	c.sources = slices.DeleteFunc(c.sources, func(x *Source) bool { return x == s })
	c.mu.Unlock()
}

// Source returns the source called name, or nil.
func (c *Catalog) Source(name string) *Source {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.sources {
		if s.name == name {
			return s
		}
	}
	return nil
}

// SourceInfo describes a source for listings.
type SourceInfo struct {
	Name string
	Rank int
	// IDs is how many ids the source holds; Entries counts every version.
	IDs     int
	Entries int
}

// Sources lists the sources in precedence order.
func (c *Catalog) Sources() []SourceInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]SourceInfo, len(c.sources))
	for i, s := range c.sources {
		n := 0
		for _, vs := range s.entries {
			n += len(vs)
		}
		out[i] = SourceInfo{Name: s.name, Rank: s.rank, IDs: len(s.entries), Entries: n}
	}
	return out
}

// Name is the source's name.
func (s *Source) Name() string { return s.name }

// Rank is the source's rank (lower wins).
func (s *Source) Rank() int { return s.rank }

// CheckEntry validates what the catalog requires of an entry: a valid
// iii id (registry.ValidateID) and a valid or empty version.
func CheckEntry(e *Entry) error {
	if e == nil {
		return fmt.Errorf("catalog entry is nil")
	}
	if err := registry.ValidateID(e.ID); err != nil {
		return err
	}
	return ValidateVersion(e.Version)
}

// Put adds or replaces entries, keyed by (ID, Version). Every entry is
// checked first; if one fails, nothing is written. The catalog takes the
// entries over: they must not be changed afterwards.
func (s *Source) Put(entries ...*Entry) error {
	for _, e := range entries {
		if err := CheckEntry(e); err != nil {
			return err
		}
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var tx txn
	tx.begin(c, len(entries))
	for _, e := range entries {
		e.source = s
		vs := s.entries[e.ID]
		i, found := slices.BinarySearchFunc(vs, e.Version, func(x *Entry, v string) int { return CompareVersions(x.Version, v) })
		if found {
			vs[i] = e
		} else {
			vs = slices.Insert(vs, i, e)
		}
		s.entries[e.ID] = vs
		tx.touch(c, e.ID, s)
	}
	tx.commit(c)
	return nil
}

// Remove drops every version of the ids.
func (s *Source) Remove(ids ...string) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var tx txn
	tx.begin(c, len(ids))
	for _, id := range ids {
		if _, ok := s.entries[id]; !ok {
			continue
		}
		delete(s.entries, id)
		tx.touch(c, id, s)
	}
	tx.commit(c)
}

// RemoveVersion drops one version of id; it reports whether it was held.
func (s *Source) RemoveVersion(id, version string) bool {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	vs := s.entries[id]
	i := slices.IndexFunc(vs, func(e *Entry) bool { return e.Version == version })
	if i < 0 {
		return false
	}
	vs = slices.Delete(slices.Clone(vs), i, i+1)
	if len(vs) == 0 {
		delete(s.entries, id)
	} else {
		s.entries[id] = vs
	}
	var tx txn
	tx.begin(c, 1)
	tx.touch(c, id, s)
	tx.commit(c)
	return true
}

// Replace makes entries the source's whole content: ids it no longer
// holds are removed, the rest put. Entries are checked first; if one
// fails, nothing is written. Ids whose entries are the same pointers as
// before cause no event.
func (s *Source) Replace(entries []*Entry) error {
	next := make(map[string][]*Entry, len(entries))
	for _, e := range entries {
		if err := CheckEntry(e); err != nil {
			return err
		}
		vs := next[e.ID]
		i, found := slices.BinarySearchFunc(vs, e.Version, func(x *Entry, v string) int { return CompareVersions(x.Version, v) })
		if found {
			vs[i] = e
		} else {
			vs = slices.Insert(vs, i, e)
		}
		next[e.ID] = vs
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		// Entries kept from before are read by subscribers without the
		// lock: only fresh ones are written.
		if e.source != s {
			e.source = s
		}
	}
	prev := s.entries
	s.entries = next
	var tx txn
	tx.begin(c, len(prev)+len(next))
	for id, vs := range next {
		if !slices.Equal(prev[id], vs) {
			tx.touch(c, id, s)
		}
	}
	for id := range prev {
		if _, ok := next[id]; !ok {
			tx.touch(c, id, s)
		}
	}
	tx.commit(c)
	return nil
}

// Get returns the source's own entry at (id, version).
func (s *Source) Get(id, version string) (*Entry, bool) {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	for _, e := range s.entries[id] {
		if e.Version == version {
			return e, true
		}
	}
	return nil, false
}

// Versions lists the source's own versions of id, highest first.
func (s *Source) Versions(id string) []*Entry {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	vs := slices.Clone(s.entries[id])
	slices.Reverse(vs)
	return vs
}

// Entries lists every entry the source holds (all versions), by id then
// ascending version.
func (s *Source) Entries() []*Entry {
	s.c.mu.RLock()
	ids := make([]string, 0, len(s.entries))
	n := 0
	for id, vs := range s.entries {
		ids = append(ids, id)
		n += len(vs)
	}
	slices.Sort(ids)
	out := make([]*Entry, 0, n)
	for _, id := range ids {
		out = append(out, s.entries[id]...)
	}
	s.c.mu.RUnlock()
	return out
}

// Len is the number of ids the source holds.
func (s *Source) Len() int {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	return len(s.entries)
}

// txn collects the effects of one write on the effective entries.
type txn struct {
	batch   bool // rebuild the sorted ids once at commit instead of per id
	changes []Change
	cause   string
}

// batchThreshold is the write size above which the sorted id list is
// rebuilt once rather than edited per id.
const batchThreshold = 64

func (t *txn) begin(c *Catalog, n int) {
	t.batch = n > batchThreshold
}

// touch recomputes the effective entry of id after source s wrote it.
func (t *txn) touch(c *Catalog, id string, s *Source) {
	t.cause = s.name
	var eff *Entry
	for _, src := range c.sources {
		if vs := src.entries[id]; len(vs) > 0 {
			eff = vs[len(vs)-1]
			break
		}
	}
	prev := c.ids[id]
	if prev == eff {
		return
	}
	switch {
	case eff == nil:
		delete(c.ids, id)
		if !t.batch {
			c.sorted.Remove(id)
		}
		t.changes = append(t.changes, Change{ID: id, Op: OpRemove, Previous: prev, Cause: s.name})
	case prev == nil:
		c.ids[id] = eff
		if !t.batch {
			c.sorted.Add(id)
		}
		t.changes = append(t.changes, Change{ID: id, Op: OpPut, Entry: eff, Cause: s.name})
	default:
		c.ids[id] = eff
		t.changes = append(t.changes, Change{ID: id, Op: OpPut, Entry: eff, Previous: prev, Cause: s.name})
	}
}

func (t *txn) commit(c *Catalog) {
	if len(t.changes) == 0 {
		return
	}
	if t.batch {
		sorted := make([]string, 0, len(c.ids))
		for id := range c.ids {
			sorted = append(sorted, id)
		}
		c.sorted.Replace(sorted)
		// Events of one batch go out in id order.
		slices.SortFunc(t.changes, func(a, b Change) int { return strings.Compare(a.ID, b.ID) })
	}
	for i := range t.changes {
		c.gen++
		t.changes[i].Generation = c.gen
	}
	c.publish(t.changes)
}

// Generation counts changes of effective entries; it grows with every
// event and lets surfaces cache renders of List.
func (c *Catalog) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// Len is the number of ids with an effective entry.
func (c *Catalog) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.ids)
}

// Get returns the effective entry of id: its owner source's highest
// version.
func (c *Catalog) Get(id string) (*Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.ids[id]; e != nil {
		return e, true
	}
	return nil, false
}

// Owner returns the name of the source that owns id.
func (c *Catalog) Owner(id string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.ids[id]; e != nil {
		return e.source.name, true
	}
	return "", false
}

// GetVersion returns version of id from its owner source.
func (c *Catalog) GetVersion(id, version string) (*Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sl := c.ids[id]
	if sl == nil {
		return nil, false
	}
	for _, e := range sl.source.entries[id] {
		if e.Version == version {
			return e, true
		}
	}
	return nil, false
}

// Versions lists every version of id its owner source holds, highest
// first (so Versions(id)[0] is Get(id)).
func (c *Catalog) Versions(id string) []*Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sl := c.ids[id]
	if sl == nil {
		return nil
	}
	vs := slices.Clone(sl.source.entries[id])
	slices.Reverse(vs)
	return vs
}

// sortedIDs returns every effective id in bytewise order. Callers hold
// c.mu (read or write); the slice must not be modified.
func (c *Catalog) sortedIDs() []string {
	c.sortMu.Lock()
	defer c.sortMu.Unlock()
	return c.sorted.Sorted()
}

// List returns the effective entries sorted bytewise by id. The slice is
// a shared snapshot, rebuilt only after a change: callers must not modify
// it.
func (c *Catalog) List() []*Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if snap := c.list.Load(); snap != nil && snap.gen == c.gen {
		return snap.entries
	}
	ids := c.sortedIDs()
	out := make([]*Entry, len(ids))
	for i, id := range ids {
		out[i] = c.ids[id]
	}
	c.list.Store(&listSnap{gen: c.gen, entries: out})
	return out
}

// AllVersions lists every version of every id from the id's owner
// source, sorted by id then ascending version.
func (c *Catalog) AllVersions() []*Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids := c.sortedIDs()
	out := make([]*Entry, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.ids[id].source.entries[id]...)
	}
	return out
}

// Shadow is one source's entries at an id that another source owns.
type Shadow struct {
	ID string
	// Source holds entries at ID that are hidden by By, the owner.
	Source string
	By     string
	// Entries are the hidden entries, ascending version.
	Entries []*Entry
}

// Shadowed lists every hidden (id, source) pair, by id then source
// precedence.
func (c *Catalog) Shadowed() []Shadow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Shadow
	if len(c.sources) < 2 {
		return out
	}
	for _, id := range c.sortedIDs() {
		owner := c.ids[id].source
		for _, s := range c.sources {
			if s == owner {
				continue
			}
			if vs := s.entries[id]; len(vs) > 0 {
				out = append(out, Shadow{ID: id, Source: s.name, By: owner.name, Entries: slices.Clone(vs)})
			}
		}
	}
	return out
}

// ShadowedAt lists the sources whose entries at id are hidden by its
// owner, in precedence order.
func (c *Catalog) ShadowedAt(id string) []Shadow {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sl := c.ids[id]
	if sl == nil {
		return nil
	}
	var out []Shadow
	for _, s := range c.sources {
		if s == sl.source {
			continue
		}
		if vs := s.entries[id]; len(vs) > 0 {
			out = append(out, Shadow{ID: id, Source: s.name, By: sl.source.name, Entries: slices.Clone(vs)})
		}
	}
	return out
}

// Holders returns, for every source holding id, its highest version, in
// precedence order (Holders(id)[0] is Get(id)). A surface that must skip a
// source (the published one while it is not loaded) picks the first
// holder it accepts.
func (c *Catalog) Holders(id string) []*Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Entry
	for _, s := range c.sources {
		if vs := s.entries[id]; len(vs) > 0 {
			out = append(out, vs[len(vs)-1])
		}
	}
	return out
}
