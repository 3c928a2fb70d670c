package webhooks

import (
	"container/heap"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// queue is one endpoint's deliveries. Publish and Resend hand deliveries
// in through the inbox; one loop (run) owns the per-skill lines and starts
// the sends: only the first delivery of a skill is ever in flight, so a
// skill's changes arrive in order, and at most Concurrency skills are in
// flight at once.
type queue struct {
	d   *Dispatcher
	ep  Endpoint
	id  string
	key []byte

	queued atomic.Int64 // stored and not yet delivered nor dead (≤ MaxQueue)

	mu    sync.Mutex
	inbox []*Delivery
	dead  []uint64 // sequences of the dead letters, oldest first (≤ MaxDead)
	last  struct {
		err       string
		delivered time.Time
	}
	wake chan struct{}

	delivered, failed atomic.Uint64

	// Owned by run.
	lines    map[string][]*Delivery // per skill id, in sequence order
	inFlight map[string]bool
	due      dueHeap // the first delivery of each skill not in flight
	results  chan result
}

func newQueue(d *Dispatcher, ep Endpoint, id string, key []byte) *queue {
	return &queue{d: d, ep: ep, id: id, key: key, wake: make(chan struct{}, 1),
		lines: map[string][]*Delivery{}, inFlight: map[string]bool{},
		results: make(chan result, d.opts.Concurrency)}
}

// reserve takes a place in the queue, false when it is full.
func (q *queue) reserve() bool {
	for {
		n := q.queued.Load()
		if n >= int64(q.d.opts.MaxQueue) {
			return false
		}
		if q.queued.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (q *queue) release() { q.queued.Add(-1) }

// push hands a stored delivery to the loop.
func (q *queue) push(del *Delivery) {
	q.mu.Lock()
	q.inbox = append(q.inbox, del)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// result is how an attempt ended, after the send goroutine stored it.
type result struct {
	del      *Delivery
	done     bool // delivered, or dead: it leaves the line
	canceled bool // Run is stopping: the delivery stays as stored
}

func (q *queue) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	inFlight := 0
	for {
		q.takeInbox()
		now := q.d.opts.Now()
		for inFlight < q.d.opts.Concurrency && q.due.Len() > 0 && !q.due[0].NextAt.After(now) {
			del := heap.Pop(&q.due).(*Delivery)
			q.inFlight[del.SkillID] = true
			inFlight++
			go q.attempt(ctx, del)
		}
		var wait <-chan time.Time
		if inFlight < q.d.opts.Concurrency && q.due.Len() > 0 {
			timer.Reset(q.due[0].NextAt.Sub(now))
			wait = timer.C
		}
		select {
		case <-ctx.Done():
			// Settle what was in flight, so that a later Run starts
			// from a consistent state.
			for ; inFlight > 0; inFlight-- {
				q.finish(<-q.results)
			}
			timer.Stop()
			return
		case <-q.wake:
		case <-wait:
		case r := <-q.results:
			inFlight--
			q.finish(r)
		}
		if wait != nil && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// takeInbox moves new deliveries into their skill's line, in sequence
// order, and makes a line's first delivery due.
func (q *queue) takeInbox() {
	q.mu.Lock()
	in := q.inbox
	q.inbox = nil
	q.mu.Unlock()
	for _, del := range in {
		line := q.lines[del.SkillID]
		i := len(line)
		for i > 0 && line[i-1].Seq > del.Seq {
			i--
		}
		if i == 0 && len(line) > 0 {
			// Earlier than the line's first: possible only for a
			// first delivery not yet sent (never once one is in flight).
			if q.inFlight[del.SkillID] {
				i = 1
			} else {
				q.removeDue(line[0])
			}
		}
		q.lines[del.SkillID] = slices.Insert(line, i, del)
		if i == 0 {
			heap.Push(&q.due, del)
		}
	}
}

func (q *queue) removeDue(del *Delivery) {
	for i, x := range q.due {
		if x == del {
			heap.Remove(&q.due, i)
			return
		}
	}
}

// finish takes an attempt's result: the next delivery of the skill
// becomes due when this one left the line, else this one again.
func (q *queue) finish(r result) {
	skill := r.del.SkillID
	delete(q.inFlight, skill)
	line := q.lines[skill]
	if r.done {
		line = line[1:]
		if len(line) == 0 {
			delete(q.lines, skill)
			return
		}
		q.lines[skill] = line
	}
	heap.Push(&q.due, line[0])
}

// attempt sends one delivery and stores the outcome: delivered (removed
// from the queue), retried later (attempts and next time stored) or dead
// (moved to the dead letters).
func (q *queue) attempt(ctx context.Context, del *Delivery) {
	status, err := q.d.send(ctx, q, del)
	if err != nil && ctx.Err() != nil {
		// Stopping: not an attempt of the receiver's making. (A delivery
		// that succeeded as Run stopped is still recorded below.)
		q.results <- result{del: del, canceled: true}
		return
	}
	now := q.d.opts.Now()
	kvc := context.WithoutCancel(ctx)
	if err == nil {
		if derr := q.d.opts.KV.Delete(kvc, q.d.queueKey(q.id, del.Seq)); derr != nil {
			// Delivered; after a restart it would be sent again, with
			// the same webhook-id.
			q.d.opts.Logger.Warn("webhooks: a delivered change is still queued", "url", q.ep.URL, "id", del.ID, "error", derr)
		}
		q.queued.Add(-1)
		q.delivered.Add(1)
		q.mu.Lock()
		q.last.delivered = now
		q.mu.Unlock()
		q.results <- result{del: del, done: true}
		return
	}
	q.failed.Add(1)
	del.Attempts++
	del.LastError, del.LastStatus = shownError(err, q.ep.URL), status
	q.mu.Lock()
	q.last.err = del.LastError
	q.mu.Unlock()
	if del.Attempts >= q.d.opts.MaxAttempts {
		if berr := q.bury(kvc, del); berr != nil {
			q.d.opts.Logger.Warn("webhooks: a failed delivery could not be moved to the dead letters; it stays queued", "url", q.ep.URL, "id", del.ID, "error", berr)
			del.NextAt = now.Add(q.d.opts.MaxInterval)
			q.results <- result{del: del}
			return
		}
		if derr := q.d.opts.KV.Delete(kvc, q.d.queueKey(q.id, del.Seq)); derr != nil {
			q.d.opts.Logger.Warn("webhooks: a dead letter is still queued", "url", q.ep.URL, "id", del.ID, "error", derr)
		}
		q.queued.Add(-1)
		q.d.opts.Logger.Warn("webhooks: delivery failed on every attempt; it is a dead letter", "url", q.ep.URL, "skill", del.SkillID, "type", del.Type, "attempts", del.Attempts, "error", del.LastError)
		q.results <- result{del: del, done: true}
		return
	}
	del.NextAt = now.Add(q.d.retryAfter(del.Attempts))
	raw, _ := json.Marshal(del)
	if serr := q.d.opts.KV.Set(kvc, q.d.queueKey(q.id, del.Seq), raw); serr != nil {
		q.d.opts.Logger.Warn("webhooks: could not store a delivery's attempt count", "url", q.ep.URL, "id", del.ID, "error", serr)
	}
	q.results <- result{del: del}
}

// bury stores del as a dead letter, dropping the oldest past MaxDead.
func (q *queue) bury(ctx context.Context, del *Delivery) error {
	del.DeadAt = q.d.opts.Now()
	del.Key = q.id + "/" + formatSeq(del.Seq)
	raw, _ := json.Marshal(del)
	if err := q.d.opts.KV.Set(ctx, q.d.deadKey(q.id, del.Seq), raw); err != nil {
		return err
	}
	q.mu.Lock()
	i, _ := slices.BinarySearch(q.dead, del.Seq)
	q.dead = slices.Insert(q.dead, i, del.Seq)
	var drop []uint64
	if n := len(q.dead) - q.d.opts.MaxDead; n > 0 {
		drop = slices.Clone(q.dead[:n])
		q.dead = q.dead[n:]
	}
	q.mu.Unlock()
	for _, seq := range drop {
		if err := q.d.opts.KV.Delete(ctx, q.d.deadKey(q.id, seq)); err != nil {
			q.d.opts.Logger.Warn("webhooks: an old dead letter could not be dropped", "url", q.ep.URL, "error", err)
		}
	}
	return nil
}

// forget removes a resent dead letter from the count.
func (q *queue) forget(seq uint64) {
	q.mu.Lock()
	if i, ok := slices.BinarySearch(q.dead, seq); ok {
		q.dead = slices.Delete(q.dead, i, i+1)
	}
	q.mu.Unlock()
}

func (q *queue) status() Status {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Status{URL: ShownURL(q.ep.URL), Events: q.ep.Events, Queued: int(q.queued.Load()), Dead: len(q.dead),
		Delivered: q.delivered.Load(), FailedTries: q.failed.Load(), LastError: q.last.err, LastDelivered: q.last.delivered}
}

// retryAfter is the wait before attempt n+1 after n failed ones: the n-th
// interval of an exponential backoff.
func (d *Dispatcher) retryAfter(n int) time.Duration {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(d.opts.InitialInterval),
		backoff.WithMultiplier(d.opts.Multiplier),
		backoff.WithMaxInterval(d.opts.MaxInterval),
		backoff.WithRandomizationFactor(0.2),
		backoff.WithMaxElapsedTime(0),
	)
	wait := b.NextBackOff()
	for i := 1; i < n; i++ {
		wait = b.NextBackOff()
	}
	return wait
}

// dueHeap orders the deliveries waiting to be tried by when they are due,
// then by sequence.
type dueHeap []*Delivery

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].NextAt.Equal(h[j].NextAt) {
		return h[i].NextAt.Before(h[j].NextAt)
	}
	return h[i].Seq < h[j].Seq
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(*Delivery)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}
