package engine

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// outbound tracks the bytes queued for every connection and not yet
// written to its socket, so that clients that stop reading cannot make the
// engine hold more than Config.MaxOutboundBytes in total.
type outbound struct {
	total atomic.Int64
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
	}
	o.mu.Unlock()
}

// largest returns the socket connection with the biggest backlog (the
// in-process one is never shed: see conn.send).
func (o *outbound) largest() (*conn, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var worst *conn
	var most int64
	for c := range o.conns {
		if n := c.qbytes.Load(); n > most && !c.local {
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

// Memory relief. Go keeps freed heap pages for reuse and returns them to
// the OS only gradually: its scavenger paces itself against the heap goal
// of the last collection, which after a burst (slow readers shed, a
// thousand clients gone) is still the burst's, and a quiet server does not
// collect at all, so the burst's garbage is never even freed. The process
// would stay near its peak for minutes. Every reliefEvery the engine reads
// the runtime's memory classes (cheap, no stop-the-world); when the heap
// holds much more than was live at the last collection (at least
// reliefMinSpare) and the last tick allocated little next to that spare
// (it is not about to be reused), it is collected and returned with
// debug.FreeOSMemory. That happens once per quiet spell after a burst (not
// again before reliefMinSpare more was allocated): never under steady
// load, never per request.
const (
	reliefEvery    = 5 * time.Second
	reliefMinSpare = 4 << 20
	// reliefQuiet: a tick is quiet when it allocated less than the spare
	// heap divided by this.
	reliefQuiet = 8
)

// heapMetrics are the runtime/metrics samples the relief reads.
var heapMetrics = []string{
	"/memory/classes/heap/free:bytes",    // freed, not yet returned to the OS
	"/memory/classes/heap/objects:bytes", // objects, live or garbage not yet collected
	"/gc/heap/live:bytes",                // live heap at the last collection
	"/gc/heap/allocs:bytes",              // allocated since the process started
}

func (e *Engine) relieveMemory() {
	t := time.NewTicker(reliefEvery)
	defer t.Stop()
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	// read returns the spare heap (held beyond the live heap) and the
	// bytes allocated so far.
	read := func() (spare, allocs uint64) {
		metrics.Read(samples)
		v := func(i int) uint64 {
			if samples[i].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return samples[i].Value.Uint64()
		}
		held, live := v(0)+v(1), v(2)
		if held > live {
			spare = held - live
		}
		return spare, v(3)
	}
	_, lastAllocs := read()
	var sinceRelief uint64 // allocated since the last relief: what it could not have returned
	for {
		select {
		case <-e.closing:
			return
		case <-t.C:
		}
		spare, allocs := read()
		allocated := allocs - lastAllocs
		lastAllocs = allocs
		sinceRelief += allocated
		if shouldRelieve(spare, allocated, sinceRelief) {
			debug.FreeOSMemory()
			e.log.Debug("returned freed memory to the OS after a burst of traffic",
				"spare_bytes", spare, "allocated_last_tick", allocated)
			_, lastAllocs = read()
			sinceRelief = 0
		}
	}
}

// shouldRelieve decides a relief from the spare heap, the bytes allocated
// in the last tick and those allocated since the last relief.
func shouldRelieve(spare, allocated, sinceRelief uint64) bool {
	return spare >= reliefMinSpare && // worth a collection
		sinceRelief >= reliefMinSpare && // not what the last relief left
		allocated < spare/reliefQuiet // quiet: the spare is not in use
}
