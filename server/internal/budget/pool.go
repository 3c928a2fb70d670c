package budget

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultRetryAfter is the Refusal.RetryAfter of a Pool that sets none.
const DefaultRetryAfter = time.Second

// Pool is a capacity shared by clients, each holding at most Share of it.
// All methods are safe for concurrent use.
type Pool struct {
	// What the pool holds, for refusals ("bytes of answers in flight",
	// "sandboxes").
	what            string
	capacity, share int64
	retryAfter      time.Duration

	mu      sync.Mutex
	used    int64
	held    map[string]int64
	waiters list.List // of *waiter, in arrival order
}

type waiter struct {
	client string
	n      int64
	ready  chan struct{} // closed once granted
}

// New returns a pool of capacity units of what, of which one client may
// hold at most share (share ≤ 0 or above capacity: capacity).
func New(what string, capacity, share int64) *Pool {
	if capacity < 1 {
		capacity = 1
	}
	if share <= 0 || share > capacity {
		share = capacity
	}
	return &Pool{what: what, capacity: capacity, share: share, retryAfter: DefaultRetryAfter, held: map[string]int64{}}
}

// SetRetryAfter sets the RetryAfter of the pool's refusals.
func (p *Pool) SetRetryAfter(d time.Duration) { p.retryAfter = d }

// Capacity and Share are the pool's bounds.
func (p *Pool) Capacity() int64 { return p.capacity }
func (p *Pool) Share() int64    { return p.share }

// Used is what all clients hold, Held what client holds.
func (p *Pool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

func (p *Pool) Held(client string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[client]
}

// Lease is what a pool granted; Release gives it back.
type Lease struct {
	p      *Pool
	client string
	n      int64
	once   sync.Once
}

// N is the amount the lease holds.
func (l *Lease) N() int64 {
	if l == nil {
		return 0
	}
	return l.n
}

// Release returns the lease to its pool; later calls do nothing. A nil
// lease is a no-op.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		p := l.p
		p.mu.Lock()
		p.used -= l.n
		if p.held[l.client] -= l.n; p.held[l.client] <= 0 {
			delete(p.held, l.client)
		}
		p.grantLocked()
		p.mu.Unlock()
	})
}

// Refusal is why a pool did not grant a request.
type Refusal struct {
	What   string
	Client string
	// Want is what was asked; Held what the client holds; Share, Used
	// and Capacity the pool's state.
	Want, Held, Share, Used, Capacity int64
	// AtShare: the client holds its share (else the pool is full).
	AtShare bool
	// Waited is how long the request waited before it was refused.
	Waited time.Duration
	// RetryAfter is when asking again is worth it.
	RetryAfter time.Duration
}

func (r *Refusal) Error() string {
	if r.AtShare {
		return fmt.Sprintf("this client already holds %d of its share of %d %s (the server's %d are shared between clients); wait for its earlier requests to finish, then retry",
			r.Held, r.Share, r.What, r.Capacity)
	}
	waited := ""
	if r.Waited > 0 {
		waited = fmt.Sprintf(" after waiting %s", r.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("the server is busy: %d of its %d %s are in use by other requests%s; retry after %s",
		r.Used, r.Capacity, r.What, waited, r.RetryAfter)
}

// Wait says how Acquire waits.
type Wait struct {
	// Max bounds the time spent waiting for other clients to release
	// (0: until ctx ends).
	Max time.Duration
	// ForShare waits while the client holds its share too (its own
	// earlier requests must end first); without it a client at its share
	// is refused at once.
	ForShare bool
	// ShareMax bounds the time spent waiting at the share (0: until ctx
	// ends). A caller that already holds a lease of this pool sets it: a
	// client's requests that each hold part of its share and wait for
	// more would otherwise wait on one another for ever.
	ShareMax time.Duration
}

// fitsLocked reports whether client may take n now, and if not, whether
// the client's share is what stops it.
func (p *Pool) fitsLocked(client string, n int64) (fits, atShare bool) {
	if p.held[client]+n > p.share {
		return false, true
	}
	return p.used+n <= p.capacity, false
}

func (p *Pool) grantLocked() {
	for e := p.waiters.Front(); e != nil; {
		w := e.Value.(*waiter)
		next := e.Next()
		fits, atShare := p.fitsLocked(w.client, w.n)
		switch {
		case fits:
			p.takeLocked(w.client, w.n)
			p.waiters.Remove(e)
			close(w.ready)
		case !atShare:
			return // the pool is full for it: no later request overtakes it
		}
		e = next
	}
}

func (p *Pool) takeLocked(client string, n int64) {
	p.used += n
	p.held[client] += n
}

// blockedLocked reports whether a waiter is held back by the pool being
// full (not by its share): a new request then queues behind it.
func (p *Pool) blockedLocked() bool {
	for e := p.waiters.Front(); e != nil; e = e.Next() {
		w := e.Value.(*waiter)
		if _, atShare := p.fitsLocked(w.client, w.n); !atShare {
			return true
		}
	}
	return false
}

func (p *Pool) refusalLocked(client string, n int64, atShare bool, waited time.Duration) *Refusal {
	return &Refusal{What: p.what, Client: client, Want: n, Held: p.held[client], Share: p.share, Used: p.used,
		Capacity: p.capacity, AtShare: atShare, Waited: waited, RetryAfter: p.retryAfter}
}

// clamp bounds a request to the share: a single request larger than a
// share takes the whole share rather than never being granted.
func (p *Pool) clamp(n int64) int64 { return min(max(n, 1), p.share) }

// TryAcquire grants n (at most a share) to client at once, or refuses.
func (p *Pool) TryAcquire(client string, n int64) (*Lease, error) {
	n = p.clamp(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	fits, atShare := p.fitsLocked(client, n)
	if !fits || !atShare && p.blockedLocked() {
		return nil, p.refusalLocked(client, n, atShare, 0)
	}
	p.takeLocked(client, n)
	return &Lease{p: p, client: client, n: n}, nil
}

// Acquire grants n (at most a share) to client, waiting in arrival order
// for room as w says. It returns a *Refusal when the wait ends without
// room, or ctx's error when ctx ends first.
func (p *Pool) Acquire(ctx context.Context, client string, n int64, w Wait) (*Lease, error) {
	n = p.clamp(n)
	p.mu.Lock()
	fits, atShare := p.fitsLocked(client, n)
	if fits && !p.blockedLocked() {
		p.takeLocked(client, n)
		p.mu.Unlock()
		return &Lease{p: p, client: client, n: n}, nil
	}
	if atShare && !w.ForShare {
		r := p.refusalLocked(client, n, true, 0)
		p.mu.Unlock()
		return nil, r
	}
	me := &waiter{client: client, n: n, ready: make(chan struct{})}
	elem := p.waiters.PushBack(me)
	p.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var err error
		select {
		case <-me.ready:
			return &Lease{p: p, client: client, n: n}, nil
		case <-ctx.Done():
			err = ctx.Err()
		case <-p.wake(timer, start, w):
		}
		p.mu.Lock()
		select {
		case <-me.ready: // granted while giving up: keep it
			p.mu.Unlock()
			return &Lease{p: p, client: client, n: n}, nil
		default:
		}
		// The bound of what holds the request back now: the pool (Max)
		// or its own share (ShareMax).
		_, atShare := p.fitsLocked(client, n)
		bound := w.Max
		if atShare {
			bound = w.ShareMax
		}
		if err == nil && (bound <= 0 || time.Since(start) < bound) {
			p.mu.Unlock()
			continue
		}
		p.waiters.Remove(elem)
		p.grantLocked() // it may have held others back
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		r := p.refusalLocked(client, n, atShare, time.Since(start))
		p.mu.Unlock()
		return nil, r
	}
}

// wake arms timer for the next bound of w to pass, or to look again in a
// while when the bound of one reason has passed but the request is held
// back by the other (unbounded) one; nil when w has no bound.
func (p *Pool) wake(timer *time.Timer, start time.Time, w Wait) <-chan time.Time {
	const poll = 50 * time.Millisecond
	next := time.Duration(-1)
	for _, b := range []time.Duration{w.Max, w.ShareMax} {
		if b <= 0 {
			continue
		}
		d := time.Until(start.Add(b))
		if d <= 0 {
			d = poll
		}
		if next < 0 || d < next {
			next = d
		}
	}
	if next < 0 {
		return nil
	}
	timer.Reset(next)
	return timer.C
}

// fitsState is fitsLocked under the lock.
func (p *Pool) fitsState(client string, n int64) (fits, atShare bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fitsLocked(client, n)
}
