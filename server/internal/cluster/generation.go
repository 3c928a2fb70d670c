package cluster

import "sync"

// maxHops bounds the generation hops held ahead of what was applied: a
// message naming a hop further ahead is not counted (its key is still
// re-read), so forged hops cannot grow memory.
const maxHops = 4096

// generation is what an instance knows about the shared counter: every
// change up to applied has been applied here. Hops (single increments
// from → from+1) are credited once their key was re-read, but never past
// the counter last read from state (ceiling), so messages alone, forged
// ones included, cannot move applied beyond the real generation.
type generation struct {
	mu sync.Mutex
	// known: applied is meaningful (a load read the counter).
	known   bool
	applied int64
	// ceiling is the counter as last read from state (or returned by this
	// instance's own bump).
	ceiling int64
	// hops holds the from of each credited hop not yet reached.
	hops map[int64]struct{}
	// suspect is a generation a check found not yet applied (0: none).
	suspect int64
}

func newGeneration() *generation { return &generation{hops: map[int64]struct{}{}} }

// credit records that the change from → to has been applied (a message's
// key re-read, or this instance's own write). Anything but one increment
// within reach of applied is ignored.
func (g *generation) credit(from, to int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known || to != from+1 || from < g.applied || from >= g.applied+maxHops {
		return
	}
	g.hops[from] = struct{}{}
	g.walk()
}

// own records this instance's own bump: it was read from state.
func (g *generation) own(from, to int64) {
	g.mu.Lock()
	g.ceiling = max(g.ceiling, to)
	g.mu.Unlock()
	g.credit(from, to)
}

// walk advances applied through the credited hops, up to the ceiling.
// Callers hold g.mu.
func (g *generation) walk() {
	for g.applied < g.ceiling {
		if _, ok := g.hops[g.applied]; !ok {
			return
		}
		delete(g.hops, g.applied)
		g.applied++
	}
}

// gapPersists records gen, just read from state, and reports whether
// changes up to it are missing and were already missing at the previous
// check (or the counter went back: state was reset, or nothing is known
// yet); otherwise it remembers gen for the next check. This instance's own
// writes and messages in flight close their gaps within milliseconds: a
// busy registry must not re-list because of them.
func (g *generation) gapPersists(gen int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ceiling = gen
	g.walk()
	switch {
	case !g.known || gen < g.applied:
		return true
	case gen == g.applied:
		g.suspect = 0
		return false
	case g.suspect != 0 && g.applied < g.suspect:
		return true
	default:
		g.suspect = gen
		return false
	}
}

// upToDate reports whether every change up to gen has been applied.
func (g *generation) upToDate(gen int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.known && g.applied == gen
}

// reset starts from gen, read before a full re-list: hops at or beyond it
// stay credited (their keys were re-read, before or during the listing).
func (g *generation) reset(gen int64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known, g.applied, g.ceiling, g.suspect = ok, gen, gen, 0
	for from := range g.hops {
		if from < gen || from >= gen+maxHops {
			delete(g.hops, from)
		}
	}
}

// forget marks the counter unknown: the next check re-lists.
func (g *generation) forget() {
	g.mu.Lock()
	g.known = false
	g.mu.Unlock()
}

// observe records gen, just read from state, as the ceiling and returns
// how many changes up to it are not applied (negative: the counter went
// back; nothing known counts as missing).
func (g *generation) observe(gen int64) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known {
		return max(gen, 1)
	}
	g.ceiling = gen
	g.walk()
	return gen - g.applied
}

// missing is how many changes up to gen are not applied, counting the
// credited hops within reach (changes nothing).
func (g *generation) missing(gen int64) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known {
		return max(gen, 1)
	}
	applied := g.applied
	for applied < gen {
		if _, ok := g.hops[applied]; !ok {
			break
		}
		applied++
	}
	return gen - applied
}

// appliedUpTo is the generation every change up to which was applied, and
// whether it is known.
func (g *generation) appliedUpTo() (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.applied, g.known
}

// credited reports whether the hop from → from+1 was applied already
// (its message arrived) or lies below what was applied.
func (g *generation) credited(from int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.hops[from]
	return ok || from < g.applied
}
