package cluster

import "testing"

// Hops count only one increment at a time, only up to the counter read
// from state, and only within reach: forged ones cannot move what was
// applied past the real generation, nor grow memory.
func TestGenerationTrustsNoHopBeyondTheCounter(t *testing.T) {
	g := newGeneration()
	g.reset(10, true)
	g.credit(10, 11)        // real, but the counter read is still 10
	g.credit(11, 1_000_000) // not one increment
	g.credit(20, 21)        // ahead, kept for later
	for from := int64(10 + maxHops); from < 10+2*maxHops; from++ {
		g.credit(from, from+1) // out of reach: never held
	}
	if g.applied != 10 || len(g.hops) != 2 {
		t.Fatalf("applied %d, %d hops held; want 10 and 2", g.applied, len(g.hops))
	}
	if g.gapPersists(11) { // the counter now reads 11: the credited hop closes it
		t.Fatal("a gap the credited hop closed")
	}
	if g.applied != 11 {
		t.Fatalf("applied %d; want 11", g.applied)
	}
	// A forged run of hops beyond the counter is not applied.
	for from := int64(11); from < 100; from++ {
		g.credit(from, from+1)
	}
	if g.applied != 11 || !g.upToDate(11) {
		t.Fatalf("applied %d after forged hops beyond the counter 11", g.applied)
	}
	if g.gapPersists(11) {
		t.Fatal("forged hops made a gap")
	}
	// A real gap is re-listed at the second check, a reset at once.
	if g.gapPersists(2000) || !g.gapPersists(2000) {
		t.Fatal("a gap that stays open is re-listed at its second check")
	}
	g.reset(2000, true)
	if !g.gapPersists(5) {
		t.Fatal("a counter that went back is re-listed at once")
	}
}

func TestGenerationMissing(t *testing.T) {
	g := newGeneration()
	if g.missing(0) == 0 {
		t.Fatal("nothing known counts as missing")
	}
	g.reset(3, true)
	g.credit(3, 4)
	if m := g.missing(5); m != 1 {
		t.Fatalf("missing(5) = %d; want 1 (hop 3→4 credited, 4→5 not)", m)
	}
}

// Messages for one key coalesce into one waiting re-read, with one more
// behind a re-read in flight; at most max keys wait.
func TestPendingKeysCoalesceAndBound(t *testing.T) {
	p := newPendingKeys(2)
	a, b, c := scopeKey{"s", "a"}, scopeKey{"s", "b"}, scopeKey{"s", "c"}
	for i := range 100 {
		if !p.push(a, hop{from: int64(i), to: int64(i + 1)}) {
			t.Fatal("a message for a waiting key was refused")
		}
	}
	if !p.push(b, hop{}) || p.push(c, hop{}) {
		t.Fatal("the third key was taken beyond the bound of 2")
	}
	k, hops, ok := p.pop()
	if !ok || k != a || len(hops) != maxHopsPerKey {
		t.Fatalf("pop = %v %d hops %v; want a with %d hops", k, len(hops), ok, maxHopsPerKey)
	}
	p.push(a, hop{}) // a changes again while it is re-read
	if k, _, _ := p.pop(); k != b {
		t.Fatalf("pop = %v; want b (a is being re-read)", k)
	}
	if _, _, ok := p.pop(); ok {
		t.Fatal("a was handed out twice at once")
	}
	p.done(a)
	if k, _, ok := p.pop(); !ok || k != a {
		t.Fatalf("pop after a's re-read = %v %v; want a again", k, ok)
	}
}
