package history

import "sync"

// contentCacheBytes bounds the contents a History keeps decoded in memory:
// a small share of what history stores (the bodies stay in the store; the
// cache only spares hot selector reads a store read and a JSON unquote).
const contentCacheBytes = 4 << 20

// contentCache holds the decoded content of recently read versions by
// content key. A key names one immutable row (keys are never reused: see
// History.nextKey), so an entry never goes stale; it is also checked
// against the id and version asked for, so a hit can only ever return what
// the store row would have. Oldest entries go first when it is full.
type contentCache struct {
	mu    sync.RWMutex
	rows  map[uint64]cachedContent
	order []uint64 // insertion order, oldest first; may hold dropped keys
	bytes int
}

type cachedContent struct {
	id      string
	n       int
	content string
}

func (c *contentCache) get(key uint64, id string, n int) (string, bool) {
	c.mu.RLock()
	e, ok := c.rows[key]
	c.mu.RUnlock()
	if !ok || e.n != n || e.id != id {
		return "", false
	}
	return e.content, true
}

func (c *contentCache) put(key uint64, id string, n int, content string) {
	size := len(content) + len(id)
	if size > contentCacheBytes/16 {
		return // a large body would push out many small hot ones
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows == nil {
		c.rows = map[uint64]cachedContent{}
	}
	if _, ok := c.rows[key]; ok {
		return
	}
	for c.bytes+size > contentCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if e, ok := c.rows[old]; ok {
			c.bytes -= len(e.content) + len(e.id)
			delete(c.rows, old)
		}
	}
	c.rows[key] = cachedContent{id: id, n: n, content: content}
	c.order = append(c.order, key)
	c.bytes += size
}

// forget drops key (its row was deleted) so its bytes go back to the cache.
func (c *contentCache) forget(key uint64) {
	c.mu.RLock()
	_, ok := c.rows[key]
	c.mu.RUnlock()
	if !ok {
		return // the common case on a register: nobody read it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.rows[key]; ok {
		c.bytes -= len(e.content) + len(e.id)
		delete(c.rows, key)
	}
	if len(c.order) > 4*len(c.rows)+64 {
		// Compact: order only grows by puts, but forgotten keys linger.
		kept := c.order[:0]
		for _, k := range c.order {
			if _, ok := c.rows[k]; ok {
				kept = append(kept, k)
			}
		}
		c.order = kept
	}
}
