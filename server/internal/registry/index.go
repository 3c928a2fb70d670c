package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Summary is what the index needs from a skill body, computed once (at
// register time) so that rendering never re-parses markdown.
type Summary struct {
	// Title is the first H1 (ExtractTitle); HasTitle is false when the body
	// has none, in which case the id stands in for it.
	Title    string
	HasTitle bool
	// Description is the first paragraph, already truncated
	// (ExtractDescription); HasDescription is false when there is none.
	Description    string
	HasDescription bool
}

// Summarize extracts the title and description of a skill body.
func Summarize(body string) Summary {
	var s Summary
	s.Title, s.HasTitle = ExtractTitle(body)
	s.Description, s.HasDescription = ExtractDescription(body)
	return s
}

// DisplayTitle is the title, or id when the body has no H1. It is the link
// text of the index line and the resources-list "name".
func (s Summary) DisplayTitle(id string) string {
	if s.HasTitle {
		return s.Title
	}
	return id
}

// IndexEntry is one skill as the index sees it.
type IndexEntry struct {
	ID string
	Summary
}

// NewIndexEntry summarizes body for id.
func NewIndexEntry(id, body string) IndexEntry {
	return IndexEntry{ID: id, Summary: Summarize(body)}
}

// Line renders the entry's index line (see IndexLine).
func (e IndexEntry) Line() string {
	return IndexLine(e.ID, e.DisplayTitle(e.ID), e.Description, e.HasDescription)
}

// IndexLine renders one line of the iii://skills index, newline included:
//
//	{indent}- [`{id}`](iii://{id}) — {title}[ — {desc}]\n
//
// indent is two spaces per '/' in id; the dash is U+2014; the description
// suffix is present only when hasDesc is true and desc is non-empty. title
// must already be resolved (Summary.DisplayTitle).
func IndexLine(id, title, desc string, hasDesc bool) string {
	var b strings.Builder
	b.Grow(indexLineLen(id, title, desc, hasDesc))
	writeIndexLine(&b, id, title, desc, hasDesc)
	return b.String()
}

func indexLineLen(id, title, desc string, hasDesc bool) int {
	n := 2*strings.Count(id, "/") + len("- [`") + len(id) + len("`](") + len(Scheme) + len(id) + len(")") +
		len(IndexSeparator) + len(title) + 1
	if hasDesc && desc != "" {
		n += len(IndexSeparator) + len(desc)
	}
	return n
}

func writeIndexLine(b *strings.Builder, id, title, desc string, hasDesc bool) {
	for range strings.Count(id, "/") {
		b.WriteString("  ")
	}
	b.WriteString("- [`")
	b.WriteString(id)
	b.WriteString("`](")
	b.WriteString(Scheme)
	b.WriteString(id)
	b.WriteString(")")
	b.WriteString(IndexSeparator)
	b.WriteString(title)
	if hasDesc && desc != "" {
		b.WriteString(IndexSeparator)
		b.WriteString(desc)
	}
	b.WriteByte('\n')
}

// compareIDs is the upstream order: plain bytewise string comparison.
func compareIDs(a, b IndexEntry) int { return strings.Compare(a.ID, b.ID) }

// RenderIndex renders the whole iii://skills body: IndexHeader, then either
// IndexEmptyLine or one IndexLine per entry in bytewise id order. The input
// order does not matter and the slice is not modified.
func RenderIndex(entries []IndexEntry) string {
	if len(entries) == 0 {
		return IndexHeader + IndexEmptyLine
	}
	sorted := entries
	if !slices.IsSortedFunc(entries, compareIDs) {
		sorted = slices.Clone(entries)
		slices.SortStableFunc(sorted, compareIDs)
	}
	n := len(IndexHeader)
	for _, e := range sorted {
		n += indexLineLen(e.ID, e.DisplayTitle(e.ID), e.Description, e.HasDescription)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(IndexHeader)
	for _, e := range sorted {
		writeIndexLine(&b, e.ID, e.DisplayTitle(e.ID), e.Description, e.HasDescription)
	}
	return b.String()
}

// RenderIndexError is the index body served (as a successful read) when the
// skills could not be listed; e is the error's display text.
func RenderIndexError(e string) string {
	return fmt.Sprintf(FmtIndexError, e)
}

// Index is an in-memory, concurrency-safe iii://skills index: a sorted set
// of ids with their summaries. Put and Delete cost O(n) in the worst case
// (slice shift); Render is O(total bytes) on the first call after a change
// and O(1) afterwards (the body is cached). Lines are not kept between
// renders: with 10 000 skills they would cost 1.6 MB to save 1.5 ms per
// post-change render. The zero value is ready to use.
type Index struct {
	mu       sync.RWMutex
	ids      []string // bytewise sorted
	entries  map[string]IndexEntry
	rendered string
	valid    bool
}

// NewIndex returns an empty Index.
func NewIndex() *Index { return &Index{} }

// Put inserts or replaces the entry for id with the summary of body.
func (x *Index) Put(id, body string) {
	x.PutEntry(NewIndexEntry(id, body))
}

// PutEntry inserts or replaces e.
func (x *Index) PutEntry(e IndexEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.entries == nil {
		x.entries = make(map[string]IndexEntry)
	}
	if _, ok := x.entries[e.ID]; !ok {
		i, _ := slices.BinarySearch(x.ids, e.ID)
		x.ids = slices.Insert(x.ids, i, e.ID)
	}
	x.entries[e.ID] = e
	x.valid = false
}

// Delete removes id and reports whether it was present.
func (x *Index) Delete(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.entries[id]; !ok {
		return false
	}
	i, _ := slices.BinarySearch(x.ids, id)
	x.ids = slices.Delete(x.ids, i, i+1)
	delete(x.entries, id)
	x.valid = false
	return true
}

// Replace swaps the whole content for entries (any order; a later duplicate
// id wins).
func (x *Index) Replace(entries []IndexEntry) {
	m := make(map[string]IndexEntry, len(entries))
	for _, e := range entries {
		m[e.ID] = e
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ids, x.entries, x.valid = ids, m, false
}

// Len is the number of entries.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Get returns the entry for id.
func (x *Index) Get(id string) (IndexEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.entries[id]
	return e, ok
}

// Entries returns a copy of all entries in bytewise id order.
func (x *Index) Entries() []IndexEntry {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]IndexEntry, len(x.ids))
	for i, id := range x.ids {
		out[i] = x.entries[id]
	}
	return out
}

// Render returns the iii://skills body (same text as RenderIndex over
// Entries()).
func (x *Index) Render() string {
	x.mu.RLock()
	if x.valid {
		s := x.rendered
		x.mu.RUnlock()
		return s
	}
	x.mu.RUnlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.valid {
		sorted := make([]IndexEntry, len(x.ids))
		for i, id := range x.ids {
			sorted[i] = x.entries[id]
		}
		x.rendered = RenderIndex(sorted)
		x.valid = true
	}
	return x.rendered
}
