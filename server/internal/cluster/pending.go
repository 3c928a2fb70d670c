package cluster

import "sync"

// maxHopsPerKey bounds the hops one waiting key carries; more messages
// for it still coalesce into its one re-read, their hops uncredited (a
// gap the reconcile covers).
const maxHopsPerKey = 64

// scopeKey names one key of one scope.
type scopeKey struct{ scope, key string }

// hop is a generation hop a message named, and when it was announced
// (Unix nanoseconds; 0: unknown).
type hop struct{ from, to, at int64 }

// pendingKeys are the keys waiting for a re-read: one entry per key
// whatever the messages naming it (coalesced), at most max of them.
type pendingKeys struct {
	mu    sync.Mutex
	max   int
	queue []scopeKey // FIFO of waiting keys
	// waiting holds the hops of each waiting key; running the keys being
	// re-read (a message for one of them makes it wait again: the re-read
	// in flight may have started before its change).
	waiting map[scopeKey][]hop
	running map[scopeKey]bool
}

func newPendingKeys(max int) *pendingKeys {
	return &pendingKeys{max: max, waiting: map[scopeKey][]hop{}, running: map[scopeKey]bool{}}
}

// push queues k with h (h.to == 0: no hop); false when the queue is full.
func (p *pendingKeys) push(k scopeKey, h hop) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	hops, queued := p.waiting[k]
	if !queued {
		if len(p.waiting) >= p.max {
			return false
		}
		p.queue = append(p.queue, k)
	}
	if h.to != 0 && len(hops) < maxHopsPerKey {
		hops = append(hops, h)
	}
	p.waiting[k] = hops
	return true
}

// pop takes the first waiting key that is not being re-read, marking it
// running; ok is false when there is none.
func (p *pendingKeys) pop() (k scopeKey, hops []hop, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, k := range p.queue {
		if p.running[k] {
			continue
		}
		p.queue = append(p.queue[:i:i], p.queue[i+1:]...)
		hops := p.waiting[k]
		delete(p.waiting, k)
		p.running[k] = true
		return k, hops, true
	}
	return scopeKey{}, nil, false
}

// done ends k's re-read; it reports whether more keys wait.
func (p *pendingKeys) done(k scopeKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, k)
	return len(p.queue) > 0
}

// clear drops every waiting key and returns how many there were.
func (p *pendingKeys) clear() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.waiting)
	p.queue = p.queue[:0]
	clear(p.waiting)
	return n
}

func (p *pendingKeys) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}
