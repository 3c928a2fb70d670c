package search

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
)

// Fields are the searchable texts of one skill.
type Fields struct {
	// Name is the id and any other name the skill goes by (frontmatter
	// name); Title the first H1; Description the frontmatter description
	// or first paragraph; Headings the body's other headings; Body the
	// whole markdown.
	Name, Title, Description, Headings, Body string
}

// field numbers, in the order of Fields.
const (
	fName = iota
	fTitle
	fDesc
	fHead
	fBody
	nFields
)

// A posting is one (document, term) pair packed into 32 bits: the
// document's slot in the high 24 bits, the term's frequency per field in
// the low 8 (name 1 bit, title 1, description 2, headings 1, body 3 as a
// log bucket). Packing keeps the index small: 4 bytes a posting, plus
// about 1.5 for the document's own term list.
const (
	slotShift = 8
	maxSlots  = 1 << 24
	nameBit   = 1 << 7
	titleBit  = 1 << 6
	descShift = 4 // 2 bits: 0..3
	headBit   = 1 << 3
	bodyMask  = 7 // 3 bits: bucket of bodyTF
)

// bodyTF is the frequency a body bucket stands for (BM25 saturates long
// before 14 repetitions count).
var bodyTF = [8]float32{0, 1, 2, 3, 4, 6, 9, 14}

func bodyBucket(n int) uint32 {
	for b := 7; b > 0; b-- {
		if float32(n) >= bodyTF[b] {
			return uint32(b)
		}
	}
	return 0
}

// ErrTooMany is returned by Put when the index holds 2^24 documents.
var ErrTooMany = errors.New("search index full (16 777 216 skills)")

// Index is an inverted index over skills, updated one skill at a time.
// All methods are safe for concurrent use; searches run in parallel and
// a change waits only for running searches.
type Index struct {
	an      *analyzer
	related related

	mu       sync.RWMutex
	termIDs  map[string]uint32
	terms    []string   // term id → term ("" when free)
	postings [][]uint32 // term id → postings sorted by slot
	freeTerm []uint32
	slots    []slot
	freeSlot []uint32
	byID     map[string]uint32
	lenSum   [nFields]uint64 // field lengths summed over live documents
	live     int
}

// slot is one document: its id, field lengths (in terms) and its sorted
// term ids, delta-encoded as uvarints (to remove its postings).
type slot struct {
	id    string
	lens  [nFields]uint32
	terms []byte
	live  bool
}

// New returns an empty index.
func New() *Index {
	an := newAnalyzer()
	return &Index{an: an, related: loadRelated(an, relatedTable),
		termIDs: map[string]uint32{}, byID: map[string]uint32{}}
}

// Len is the number of documents.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// docTerms is the analysed form of one document: each distinct term with
// its frequency per field. They are pooled: a change allocates little.
type docTerms struct {
	lens  [nFields]uint32
	idx   map[string]int32
	terms []string
	tf    [][nFields]uint16
}

var docTermsPool = sync.Pool{New: func() any { return &docTerms{idx: make(map[string]int32, 512)} }}

func (x *Index) analyze(f Fields) *docTerms {
	d := docTermsPool.Get().(*docTerms)
	for i, text := range [nFields]string{f.Name, f.Title, f.Description, f.Headings, f.Body} {
		x.an.terms(text, func(_ []byte, t string) {
			j, ok := d.idx[t]
			if !ok {
				j = int32(len(d.terms))
				d.idx[t] = j
				d.terms = append(d.terms, t)
				d.tf = append(d.tf, [nFields]uint16{})
			}
			if d.tf[j][i] < math.MaxUint16 {
				d.tf[j][i]++
			}
			d.lens[i]++
		})
	}
	return d
}

func (d *docTerms) release() {
	clear(d.idx)
	d.terms, d.tf, d.lens = d.terms[:0], d.tf[:0], [nFields]uint32{}
	docTermsPool.Put(d)
}

func pack(slotNo uint32, c *[nFields]uint16) uint32 {
	p := slotNo << slotShift
	if c[fName] > 0 {
		p |= nameBit
	}
	if c[fTitle] > 0 {
		p |= titleBit
	}
	p |= uint32(min(c[fDesc], 3)) << descShift
	if c[fHead] > 0 {
		p |= headBit
	}
	return p | bodyBucket(int(c[fBody]))
}

// Put adds or replaces the document id. The text is analysed before the
// index is locked, so searches wait only for the postings to change.
func (x *Index) Put(id string, f Fields) error {
	d := x.analyze(f)
	defer d.release()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(id)
	var s uint32
	if n := len(x.freeSlot); n > 0 {
		s = x.freeSlot[n-1]
		x.freeSlot = x.freeSlot[:n-1]
	} else {
		if len(x.slots) >= maxSlots {
			return ErrTooMany
		}
		s = uint32(len(x.slots))
		x.slots = append(x.slots, slot{})
	}
	ids := make([]uint32, 0, len(d.terms))
	for j, t := range d.terms {
		tid := x.termLocked(t)
		ids = append(ids, tid)
		x.postings[tid] = insertPosting(x.postings[tid], pack(s, &d.tf[j]))
	}
	slices.Sort(ids)
	enc := make([]byte, 0, len(ids)*2)
	prev := uint32(0)
	for _, t := range ids {
		enc = binary.AppendUvarint(enc, uint64(t-prev))
		prev = t
	}
	x.slots[s] = slot{id: id, lens: d.lens, terms: slices.Clip(enc), live: true}
	x.byID[id] = s
	for i, n := range d.lens {
		x.lenSum[i] += uint64(n)
	}
	x.live++
	return nil
}

// Remove drops the document id; it reports whether it was there.
func (x *Index) Remove(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.removeLocked(id)
}

func (x *Index) removeLocked(id string) bool {
	s, ok := x.byID[id]
	if !ok {
		return false
	}
	sl := &x.slots[s]
	for b, prev := sl.terms, uint32(0); len(b) > 0; {
		d, n := binary.Uvarint(b)
		b = b[n:]
		tid := prev + uint32(d)
		prev = tid
		x.postings[tid] = removePosting(x.postings[tid], s)
		if len(x.postings[tid]) == 0 {
			delete(x.termIDs, x.terms[tid])
			x.terms[tid] = ""
			x.postings[tid] = nil
			x.freeTerm = append(x.freeTerm, tid)
		}
	}
	for i, n := range sl.lens {
		x.lenSum[i] -= uint64(n)
	}
	*sl = slot{}
	delete(x.byID, id)
	x.freeSlot = append(x.freeSlot, s)
	x.live--
	return true
}

func (x *Index) termLocked(t string) uint32 {
	if id, ok := x.termIDs[t]; ok {
		return id
	}
	var id uint32
	if n := len(x.freeTerm); n > 0 {
		id = x.freeTerm[n-1]
		x.freeTerm = x.freeTerm[:n-1]
		x.terms[id] = t
	} else {
		id = uint32(len(x.terms))
		x.terms = append(x.terms, t)
		x.postings = append(x.postings, nil)
	}
	x.termIDs[t] = id
	return id
}

// insertPosting puts p into the slot-sorted list ps.
func insertPosting(ps []uint32, p uint32) []uint32 {
	i, _ := slices.BinarySearchFunc(ps, p>>slotShift, func(e, s uint32) int { return int(e>>slotShift) - int(s) })
	return slices.Insert(ps, i, p)
}

// removePosting drops slot s from ps, shrinking the array when it is
// mostly empty so removed skills give their memory back.
func removePosting(ps []uint32, s uint32) []uint32 {
	i, ok := slices.BinarySearchFunc(ps, s, func(e, s uint32) int { return int(e>>slotShift) - int(s) })
	if !ok {
		return ps
	}
	ps = slices.Delete(ps, i, i+1)
	if cap(ps) > 16 && len(ps) < cap(ps)/4 {
		ps = slices.Clone(ps)
	}
	return ps
}

// MemoryBytes estimates the index's heap: postings, term lists, the
// vocabulary and the document table (map overheads approximated).
func (x *Index) MemoryBytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var n int64
	for _, p := range x.postings {
		n += int64(cap(p))*4 + 24
	}
	for _, t := range x.terms {
		n += int64(len(t)) + 16 + 48 // string, header, map entry
	}
	for _, s := range x.slots {
		n += int64(cap(s.terms)) + int64(len(s.id)) + 80
	}
	n += int64(len(x.byID)) * 48
	x.an.mu.RLock()
	for k, v := range x.an.stems {
		n += int64(len(k)+len(v)) + 80
	}
	x.an.mu.RUnlock()
	return n
}

// hasPrefixNS reports whether id is in namespace ns (ns itself or under
// ns/).
func hasPrefixNS(id, ns string) bool {
	return id == ns || len(id) > len(ns) && id[len(ns)] == '/' && strings.HasPrefix(id, ns)
}
