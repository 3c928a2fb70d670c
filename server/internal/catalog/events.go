package catalog

import (
	"slices"
	"sync"
)

// Op is what happened to an id's effective entry.
type Op string

const (
	// OpPut: the id has a new effective entry (new id, new content, new
	// owner or new highest version).
	OpPut Op = "put"
	// OpRemove: no source holds the id any more.
	OpRemove Op = "remove"
)

// Change is one change of an id's effective entry.
type Change struct {
	ID string
	Op Op
	// Entry is the new effective entry (nil for OpRemove); Previous the
	// one it replaced (nil for a new id).
	Entry    *Entry
	Previous *Entry
	// Cause is the name of the source whose write made the change: a
	// surface that already announced its own writes (the published
	// source) can skip these.
	Cause string
	// Generation is the catalog's Generation right after this change.
	Generation uint64
}

// subscriber delivers changes to one callback from its own goroutine,
// through an unbounded queue, so a slow subscriber never blocks writers
// and sees changes in order.
type subscriber struct {
	fn     func(Change)
	mu     sync.Mutex
	queue  []Change
	wake   chan struct{}
	done   chan struct{}
	closed bool
}

// Subscribe calls fn with every change, in order, from a goroutine of its
// own. The returned function stops delivery (changes still queued are
// dropped) and waits for a running fn call to return; it must not be
// called from fn.
func (c *Catalog) Subscribe(fn func(Change)) (cancel func()) {
	s := &subscriber{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.subMu.Lock()
	c.subs = append(slices.Clip(c.subs), s) // copy-on-write: publish reads without the lock
	c.subMu.Unlock()
	go s.run()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.subMu.Lock()
			c.subs = slices.DeleteFunc(slices.Clone(c.subs), func(x *subscriber) bool { return x == s })
			c.subMu.Unlock()
			s.mu.Lock()
			s.closed = true
			s.queue = nil
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
			<-s.done
		})
	}
}

// publish queues changes for every subscriber; called with c.mu held so
// that queue order is write order.
func (c *Catalog) publish(changes []Change) {
	c.subMu.Lock()
	subs := c.subs
	c.subMu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if !s.closed {
			s.queue = append(s.queue, changes...)
		}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *subscriber) run() {
	defer close(s.done)
	for range s.wake {
		for {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			q := s.queue
			s.queue = nil
			s.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, ch := range q {
				s.mu.Lock()
				closed := s.closed
				s.mu.Unlock()
				if closed {
					return
				}
				s.fn(ch)
			}
		}
	}
}
