package engine

// Dispatch and call admission: a connection's calls to worker functions are dispatched
// to their owner at most callWindow at a time, and not at all while the
// caller leaves holdBacklog bytes of answers unread; the others wait here,
// in order, still counted against Config.MaxInFlightPerConn, and go out as
// answers come back and are written. A worker (the registry's, say) serves
// every client and runs their calls side by side: without this, one client
// that sends MaxInFlightPerConn fetches and never reads would have the
// worker compute all of them (256 × a 256 KiB skill: 64 MiB of answers
// queued ahead of everyone else's) before it is even found out, and again
// after every re-dial. Held calls of a connection that leaves are dropped
// without ever reaching a worker.
//
// Calls a connection makes while it is itself executing an invocation
// (a section handler reading another skill, say) are never held: they may
// be what its earlier calls wait for.

// callWindow is how many worker-routed calls one connection may have
// dispatched and unanswered at once (nested calls aside).
const callWindow = 32

// holdBacklog: while a connection has this many bytes queued and not yet
// written to its socket, its new calls wait.
const holdBacklog = 1 << 20

// Admission states of a pending invocation (pending.admit), guarded by
// the caller's hmu.
const (
	callNew      = iota // not dispatched yet, or dispatched outside the window
	callHeld            // waiting in the caller's held queue
	callWindowed        // dispatched and counted in the caller's window
	callFinished        // answered, stopped or dropped
)

// heldCall is an invocation waiting for its caller's window.
type heldCall struct {
	p     *pending
	frame []byte // the invokefunction frame for p.owner
}

// dispatch sends the invocation p (from caller, possibly nil for the
// engine's own calls) to its owner, or holds it until caller's window
// has room.
func (e *Engine) dispatch(caller *conn, p *pending, frame []byte) {
	if caller == nil || p.from != caller || caller.active.Load() > 0 || caller.local {
		e.deliver(p, frame)
		return
	}
	caller.hmu.Lock()
	if p.admit == callFinished { // stopped already (its owner left)
		caller.hmu.Unlock()
		return
	}
	if caller.isClosed() {
		// Gone: its cleanup has dropped (or will not see) held calls.
		caller.hmu.Unlock()
		e.abandon([]*pending{p})
		return
	}
	if len(caller.held) == 0 && caller.sent < callWindow && caller.qbytes.Load() < holdBacklog {
		p.admit = callWindowed
		caller.sent++
		caller.hmu.Unlock()
		e.deliver(p, frame)
		return
	}
	p.admit = callHeld
	caller.held = append(caller.held, heldCall{p: p, frame: frame})
	caller.hmu.Unlock()
}

// callDone takes a finished invocation out of c's window and lets held
// calls go.
func (c *conn) callDone(p *pending) {
	c.hmu.Lock()
	was := p.admit
	p.admit = callFinished
	if was == callWindowed {
		c.sent--
	}
	c.hmu.Unlock()
	if was == callWindowed {
		c.releaseHeld()
	}
}

// releaseHeld dispatches held calls while c's window has room and its
// backlog is small. A closed connection's are left to dropHeld.
func (c *conn) releaseHeld() {
	for {
		c.hmu.Lock()
		if len(c.held) == 0 || c.sent >= callWindow || c.qbytes.Load() >= holdBacklog || c.isClosed() {
			if len(c.held) == 0 && cap(c.held) > 0 {
				c.held = nil // let a burst's array go
			}
			c.hmu.Unlock()
			return
		}
		h := c.held[0]
		c.held[0] = heldCall{}
		c.held = c.held[1:]
		if h.p.admit != callHeld { // stopped while it waited
			c.hmu.Unlock()
			continue
		}
		h.p.admit = callWindowed
		c.sent++
		c.hmu.Unlock()
		c.e.deliver(h.p, h.frame)
	}
}

// dropHeld forgets the calls c still holds: c is gone, nobody wants their
// answers, and no worker has started them.
func (e *Engine) dropHeld(c *conn) {
	c.hmu.Lock()
	held := c.held
	c.held = nil
	ps := make([]*pending, 0, len(held))
	for _, h := range held {
		if h.p.admit == callHeld {
			ps = append(ps, h.p)
		}
	}
	c.hmu.Unlock()
	e.abandon(ps)
}

// abandon removes invocations that never reached their owner.
func (e *Engine) abandon(ps []*pending) {
	if len(ps) == 0 {
		return
	}
	e.pmu.Lock()
	mine := ps[:0]
	for _, p := range ps {
		if _, ok := e.pending[p.id]; ok {
			delete(e.pending, p.id)
			mine = append(mine, p)
		}
	}
	e.pmu.Unlock()
	for _, p := range mine {
		p.finish()
	}
}

func (c *conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
