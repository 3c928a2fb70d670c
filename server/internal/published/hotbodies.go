package published

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// DefaultHotBodyBytes bounds the bodies kept in memory after a read when
// published bodies live in the store (published.stored): the skills read
// most recently, so a skill read over and over is not decoded from the
// store each time, while a burst of registrations (which reads none)
// leaves memory as it was.
const DefaultHotBodyBytes = 4 << 20

// hotBodies keeps recently read bodies up to max bytes, evicting with the
// clock (second-chance) rule: a hit only sets the body's referenced flag
// under a read lock, so 64 callers reading one hot skill do not queue on
// a lock to reorder a list. A body is kept under its skill id and the
// digest of the entry that read it, so an entry made by a newer write
// never gets an older body.
type hotBodies struct {
	mu    sync.RWMutex
	max   int64
	bytes int64
	order *list.List // of *hotBody, newest first; eviction looks at the back
	byID  map[string]*list.Element
}

type hotBody struct {
	id         string
	digest     catalog.Digest
	body       string
	referenced atomic.Bool // read since it was last passed over by eviction
}

func newHotBodies(max int64) *hotBodies {
	return &hotBodies{max: max, order: list.New(), byID: map[string]*list.Element{}}
}

// get returns id's body read for the entry with digest d.
func (h *hotBodies) get(id string, d catalog.Digest) (string, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	el, ok := h.byID[id]
	if !ok {
		return "", false
	}
	b := el.Value.(*hotBody)
	if b.digest != d {
		return "", false
	}
	b.referenced.Store(true)
	return b.body, true
}

// put keeps body as id's, read for the entry with digest d, and drops
// bodies not read lately beyond max.
func (h *hotBodies) put(id string, d catalog.Digest, body string) {
	if int64(len(body)) > h.max/4 {
		return // one large body must not push out many small ones
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byID[id]; ok {
		old := el.Value.(*hotBody)
		h.bytes -= int64(len(old.body))
		old.digest, old.body = d, body
		h.bytes += int64(len(body))
		h.order.MoveToFront(el)
	} else {
		h.byID[id] = h.order.PushFront(&hotBody{id: id, digest: d, body: body})
		h.bytes += int64(len(body))
	}
	for h.bytes > h.max {
		el := h.order.Back()
		b := el.Value.(*hotBody)
		if b.referenced.Swap(false) {
			h.order.MoveToFront(el) // read since: a second chance
			continue
		}
		h.order.Remove(el)
		delete(h.byID, b.id)
		h.bytes -= int64(len(b.body))
	}
}

// drop forgets id (unregistered: its body need not stay).
func (h *hotBodies) drop(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byID[id]; ok {
		h.bytes -= int64(len(el.Value.(*hotBody).body))
		h.order.Remove(el)
		delete(h.byID, id)
	}
}
