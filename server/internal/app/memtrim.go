package app

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// When to give memory back: after trimBytes of skill content changed and
// the catalog then stayed quiet for trimQuiet.
const (
	trimBytes = 1 << 20
	trimQuiet = 500 * time.Millisecond
)

// trimAfterChanges returns the heap's free pages to the operating system
// once at least minBytes of skill content changed in the catalog and it
// then stayed unchanged for quiet.
//
// Why: the registry's live heap is mostly skill bodies, but a burst of
// registrations or a cold load (one state::list answer holding the whole
// scope) leaves the heap sized for its peak: the collector's goal stays
// at 1.5x the peak until something allocates again, and the runtime
// gives freed pages back to the OS only slowly. An idle registry would
// then sit at about twice what it holds. One forced collection per burst
// (milliseconds for tens of MiB of mostly pointer-free bodies) brings the
// resident size back to what is live. Small, sparse changes never reach
// minBytes, so they cost nothing: the runtime's own scavenger copes.
func trimAfterChanges(c *catalog.Catalog, minBytes int64, quiet time.Duration) (stop func()) {
	var (
		mu      sync.Mutex
		changed int64
		stopped bool
	)
	timer := time.AfterFunc(time.Hour, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			debug.FreeOSMemory()
		}
	})
	timer.Stop()
	cancel := c.Subscribe(func(ch catalog.Change) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range []*catalog.Entry{ch.Entry, ch.Previous} {
			if e != nil {
				changed += e.Body.Size() + e.TotalSize()
			}
		}
		if changed >= minBytes {
			changed = 0
			timer.Reset(quiet)
		} else if timer.Stop() {
			// A trim is pending: this change extends the burst.
			timer.Reset(quiet)
		}
	})
	return func() {
		cancel()
		mu.Lock()
		stopped = true
		mu.Unlock()
		timer.Stop()
	}
}
