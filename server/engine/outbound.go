package engine

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// outbound tracks the bytes queued for every connection and not yet
// written to its socket, so that clients that stop reading cannot make the
// engine hold more than Config.MaxOutboundBytes in total.
type outbound struct {
	total atomic.Int64
	high  atomic.Int64 // largest total since memory was last returned
	gone  atomic.Int64 // connections closed since memory was last returned
	mu    sync.Mutex
	conns map[*conn]struct{}
}

func (o *outbound) add(c *conn) {
	o.mu.Lock()
	if o.conns == nil {
		o.conns = make(map[*conn]struct{})
	}
	o.conns[c] = struct{}{}
	o.mu.Unlock()
}

func (o *outbound) remove(c *conn) {
	o.mu.Lock()
	if _, ok := o.conns[c]; ok {
		delete(o.conns, c)
		o.gone.Add(1)
	}
	o.mu.Unlock()
}

// largest returns the connection with the biggest backlog.
func (o *outbound) largest() (*conn, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var worst *conn
	var most int64
	for c := range o.conns {
		if n := c.qbytes.Load(); n > most {
			worst, most = c, n
		}
	}
	return worst, most
}

// release returns n written (or dropped) bytes of c's backlog.
func (c *conn) release(n int64) {
	if n == 0 {
		return
	}
	c.qbytes.Add(-n)
	c.e.out.total.Add(-n)
}

// minShedBytes is the smallest backlog worth a disconnect when the global
// cap is reached: a client with less is keeping up, whatever the total.
const minShedBytes = 1 << 20

// shedGlobal runs after a frame was queued and the engine's total backlog
// is over its cap: the connection holding the most is the slowest reader,
// and it is disconnected (possibly the one just sent to) with a log line
// naming it. Closing the socket makes its writer's pending write fail at
// once, which returns the rest of its backlog.
func (e *Engine) shedGlobal() {
	victim, n := e.out.largest()
	if victim == nil || n < minShedBytes {
		return
	}
	e.log.Error("closing worker connection: the engine's outbound memory cap is reached and this client has the largest unread backlog",
		"worker_id", victim.id, "remote", victim.remoteIP, "queued_bytes", n,
		"total_queued_bytes", e.out.total.Load(), "max_outbound_bytes", e.cfg.MaxOutboundBytes)
	victim.close()
}

func (o *outbound) noteHigh(total int64) {
	for {
		h := o.high.Load()
		if total <= h || o.high.CompareAndSwap(h, total) {
			return
		}
	}
}

// Memory relief: Go keeps freed heap for reuse, so after a burst of
// backlog (slow readers shed, say) the process would stay at its peak
// size. After a burst (a backlog of at least reliefHigh, or reliefGone
// connections gone) followed by a quiet tick, the heap is returned to the
// OS.
const (
	reliefEvery = 5 * time.Second
	reliefHigh  = 4 << 20
	reliefGone  = 64
)

func (e *Engine) relieveMemory() {
	t := time.NewTicker(reliefEvery)
	defer t.Stop()
	armed := false // a burst was seen; relieve once it has been quiet a tick
	for {
		select {
		case <-e.closing:
			return
		case <-t.C:
		}
		busy := e.out.high.Load() >= reliefHigh || e.out.gone.Load() >= reliefGone
		e.out.high.Store(0)
		e.out.gone.Store(0)
		switch {
		case busy:
			armed = true
		case armed && e.out.total.Load() < minShedBytes:
			armed = false
			debug.FreeOSMemory()
			e.log.Debug("returned freed memory to the OS after a burst of traffic")
		}
	}
}
