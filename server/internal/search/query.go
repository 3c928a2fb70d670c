package search

import (
	"container/heap"
	"math"
	"strings"
	"sync"
)

// Ranking parameters: BM25F (Robertson & Zaragoza) over the short fields,
// one saturation over their weighted, length-normalised frequencies, plus
// BM25 over the body (see tfPart). A word in the name or title says far
// more about what a skill is for than one in its body.
var (
	fieldWeight = [nFields]float32{fName: 10, fTitle: 3, fDesc: 2, fHead: 0.5, fBody: 1}
	fieldB      = [nFields]float32{fName: 0.3, fTitle: 0.3, fDesc: 0.5, fHead: 0.5, fBody: 0.75}
)

const k1 = 1.2

// metaWeight weighs the short fields' saturated score against the body's
// (fieldWeight[fBody]); coordPower is how strongly a skill matching more
// of the query's words (by idf) beats one matching few of them often.
// relatedWeight is how much a related word counts beside the query's own
// word: enough to find a skill that uses other words, too little to beat
// one that uses the same words.
var (
	metaWeight    float32 = 2
	coordPower    float32 = 0.5
	relatedWeight float32 = 0.6
)

// LowConfidenceStrength: the best hit's score per unit of the query's
// weight (the sum of its words' idf) must reach this, else the result is
// flagged low_confidence. A query word matched by one mention in a body of
// average length scores about 1 per unit of its idf, by the name or the
// description 2.7 to 4 (tfPart); below 1.2 the best hit has the query's
// words in passing or not at all. Unlike the share of the query's words
// matched, it does not drop when a request adds a word no skill uses
// ("tests that do not flake"), and it does drop when every word is matched
// only in some body ("set up a Kafka cluster"). Calibrated on
// testdata/eval: queries.tsv, unanswerable.txt and tune-unanswerable.txt;
// heldout.tsv is only measured (docs/search.md).
const LowConfidenceStrength = 1.2

// relatedCover is how much of a query word a related word covers for the
// coordination factor (a paraphrase is an answer, if a weaker one).
const relatedCover = 0.75

// Query is one search.
type Query struct {
	Text string
	// Limit is the most hits returned (at least 1).
	Limit int
	// Namespace keeps ids equal to it or under it ("a" keeps "a", "a/b").
	Namespace string
}

// Hit is one ranked document.
type Hit struct {
	ID    string
	Score float64
}

// Result is a ranked list, best first.
type Result struct {
	Hits []Hit
	// LowConfidence: the best hit matches the query too weakly (or
	// nothing matched), so the hits are guesses (LowConfidenceStrength).
	LowConfidence bool
	// Terms are the query's searchable terms (after stop words and
	// stemming); empty when it had none.
	Terms []string
}

// scratch holds per-slot accumulators, reused between searches.
type scratch struct {
	total, cur, cover, curCover []float32
	touched                     []uint32
	seen                        []bool
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) reset(n int) {
	grow := func(a []float32) []float32 {
		if cap(a) < n {
			return make([]float32, n)
		}
		return a[:n]
	}
	s.total, s.cur, s.cover, s.curCover = grow(s.total), grow(s.cur), grow(s.cover), grow(s.curCover)
	if cap(s.seen) < n {
		s.seen = make([]bool, n)
	}
	s.seen = s.seen[:n]
	s.touched = s.touched[:0]
}

// Search ranks the documents for q.
func (x *Index) Search(q Query) Result {
	terms := x.an.queryTerms(q.Text)
	res := Result{Terms: terms, LowConfidence: true}
	if len(terms) == 0 || q.Limit <= 0 {
		return res
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 {
		return res
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.reset(len(x.slots))

	n := float64(x.live)
	var avg [nFields]float32
	for i := range avg {
		avg[i] = float32(float64(x.lenSum[i])/n) + 1e-3
	}
	var idfSum float32
	for _, t := range terms {
		// A word no skill uses weighs like the rarest word.
		idf := x.idf(t)
		idfSum += idf
		var cur []uint32 // slots touched by this query word
		visit := func(term string, weight, cover float32) {
			tid, ok := x.termIDs[term]
			if !ok {
				return
			}
			w := weight * x.idf(term)
			for _, p := range x.postings[tid] {
				s := p >> slotShift
				if sc.cur[s] == 0 {
					cur = append(cur, s)
				}
				sc.cur[s] = max(sc.cur[s], w*x.tfPart(p, s, &avg))
				sc.curCover[s] = max(sc.curCover[s], cover)
			}
		}
		visit(t, 1, 1)
		for _, r := range x.related[t] {
			visit(r, relatedWeight, relatedCover)
		}
		for _, s := range cur {
			if !sc.seen[s] {
				sc.seen[s] = true
				sc.touched = append(sc.touched, s)
			}
			sc.total[s] += sc.cur[s]
			sc.cover[s] += idf * sc.curCover[s]
			sc.cur[s], sc.curCover[s] = 0, 0
		}
	}
	res.Hits = x.top(sc, q, idfSum)
	if len(res.Hits) > 0 {
		res.LowConfidence = res.Hits[0].Score < LowConfidenceStrength*float64(idfSum)
	}
	for _, s := range sc.touched {
		sc.total[s], sc.cover[s], sc.seen[s] = 0, 0, false
	}
	return res
}

// idf is BM25's inverse document frequency (never negative).
func (x *Index) idf(term string) float32 {
	df := 0
	if tid, ok := x.termIDs[term]; ok {
		df = len(x.postings[tid])
	}
	n := float64(x.live)
	return float32(math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5)))
}

// tfPart is the score of posting p of slot s before idf: BM25F over the
// short fields (name, title, description, headings), where one mention
// says what the skill is for, plus BM25 over the body at a lower weight.
// Saturating them apart keeps a long body from drowning a name match.
func (x *Index) tfPart(p, s uint32, avg *[nFields]float32) float32 {
	lens := &x.slots[s].lens
	norm := func(f int) float32 {
		return 1 - fieldB[f] + fieldB[f]*float32(lens[f])/avg[f]
	}
	var meta, body float32
	if p&nameBit != 0 {
		meta += fieldWeight[fName] / norm(fName)
	}
	if p&titleBit != 0 {
		meta += fieldWeight[fTitle] / norm(fTitle)
	}
	if d := (p >> descShift) & 3; d != 0 {
		meta += fieldWeight[fDesc] * float32(d) / norm(fDesc)
	}
	if p&headBit != 0 {
		meta += fieldWeight[fHead] / norm(fHead)
	}
	if b := p & bodyMask; b != 0 {
		body = bodyTF[b] / norm(fBody)
	}
	return metaWeight*meta*(k1+1)/(k1+meta) + fieldWeight[fBody]*body*(k1+1)/(k1+body)
}

// top selects the best q.Limit touched slots (ties by id).
func (x *Index) top(sc *scratch, q Query, idfSum float32) []Hit {
	h := &hitHeap{}
	for _, s := range sc.touched {
		score := sc.total[s]
		if coordPower != 0 && idfSum > 0 {
			score *= float32(math.Pow(float64(sc.cover[s]/idfSum), float64(coordPower)))
		}
		if score <= 0 {
			continue
		}
		id := x.slots[s].id
		if q.Namespace != "" && !hasPrefixNS(id, q.Namespace) {
			continue
		}
		hit := Hit{ID: id, Score: float64(score)}
		if h.Len() < q.Limit {
			heap.Push(h, hit)
		} else if better(hit, (*h)[0]) {
			(*h)[0] = hit
			heap.Fix(h, 0)
		}
	}
	out := make([]Hit, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(Hit)
	}
	return out
}

func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return strings.Compare(a.ID, b.ID) < 0
}

// hitHeap is a min-heap: the worst kept hit on top.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(v any)        { *h = append(*h, v.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
