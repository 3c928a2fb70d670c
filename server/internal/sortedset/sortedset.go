// Package sortedset keeps a set of strings that is read in bytewise order
// and written one member at a time.
//
// A sorted slice edited in place costs a copy of half the slice per write
// (slices.Insert): at 40 000 skill ids that was an eighth of a registry's
// CPU under a stream of registrations. Here writes are O(1) and buffered;
// the next ordered read merges them, so a burst of k writes into n members
// costs O(n + k log k) once.
//
// A Set is not safe for concurrent use; callers hold their own lock (the
// ordered read writes, so readers need it exclusively).
package sortedset

import (
	"slices"
	"strings"
)

// Set is a set of strings. The zero value is empty and ready to use.
type Set struct {
	sorted  []string            // members as of the last merge, ascending
	added   map[string]struct{} // members not in sorted
	removed map[string]struct{} // entries of sorted that are no longer members
}

// Has reports whether s is a member.
func (t *Set) Has(s string) bool {
	if _, ok := t.added[s]; ok {
		return true
	}
	if _, ok := t.removed[s]; ok {
		return false
	}
	_, ok := slices.BinarySearch(t.sorted, s)
	return ok
}

// Add makes s a member.
func (t *Set) Add(s string) {
	if _, ok := t.removed[s]; ok {
		delete(t.removed, s)
		return
	}
	if _, ok := slices.BinarySearch(t.sorted, s); ok {
		return
	}
	if t.added == nil {
		t.added = map[string]struct{}{}
	}
	t.added[s] = struct{}{}
}

// Remove makes s not a member.
func (t *Set) Remove(s string) {
	if _, ok := t.added[s]; ok {
		delete(t.added, s)
		return
	}
	if _, ok := slices.BinarySearch(t.sorted, s); !ok {
		return
	}
	if t.removed == nil {
		t.removed = map[string]struct{}{}
	}
	t.removed[s] = struct{}{}
}

// Len is the number of members.
func (t *Set) Len() int { return len(t.sorted) + len(t.added) - len(t.removed) }

// Replace makes members exactly the given strings (in any order, without
// duplicates); it takes ownership of the slice.
func (t *Set) Replace(members []string) {
	slices.Sort(members)
	t.sorted, t.added, t.removed = members, nil, nil
}

// Sorted returns the members in ascending bytewise order. The slice is
// shared until the next write: callers must not modify it. A merge builds
// a new slice, so a slice returned earlier never changes under its reader.
func (t *Set) Sorted() []string {
	if len(t.added) == 0 && len(t.removed) == 0 {
		return t.sorted
	}
	add := make([]string, 0, len(t.added))
	for s := range t.added {
		add = append(add, s)
	}
	slices.Sort(add)
	out := make([]string, 0, t.Len())
	i, j := 0, 0
	for i < len(t.sorted) || j < len(add) {
		if j == len(add) || i < len(t.sorted) && strings.Compare(t.sorted[i], add[j]) < 0 {
			if _, gone := t.removed[t.sorted[i]]; !gone {
				out = append(out, t.sorted[i])
			}
			i++
			continue
		}
		out = append(out, add[j])
		j++
	}
	t.sorted, t.added, t.removed = out, nil, nil
	return out
}
