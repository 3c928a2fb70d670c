package engine

// Worker budgets. A worker (the registry, say) serves every client, so the
// invocations delivered to it must not be whoever sends fastest: four
// sockets sending eight 15 MiB calls each to one registry function used to
// put 480 MiB in the registry's queue at once, and the engine then dropped
// the registry's connection for "not reading". Two budgets bound that:
//
//   - per worker: the invocations dispatched to one worker and not yet
//     answered carry at most Config.MaxWorkerBytes (one call always goes
//     when none is in flight). Others wait at the worker's gate, in
//     arrival order, and go as answers come back. A flood is slowed to the
//     worker's pace and honest calls take their turn between its calls
//     (the gate's own bound, maxGateCalls and maxGateBytes, refuses large
//     calls long before it could shut small ones out);
//     nothing a caller sends can push a worker past its outbound cap, so a
//     flood never disconnects it.
//   - per caller: one connection's worker-routed calls (waiting for its
//     window, at a gate, queued with enqueue, or running) carry at most
//     Config.MaxCallerBytes (its first call always passes); more are
//     refused at once with too_many_invocations, so a flooder holds a
//     bounded share of any gate and of the engine's memory.

import (
	"fmt"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// gatedCall is an invocation waiting for its owner's budget.
type gatedCall struct {
	p     *pending
	frame []byte
}

// deliver sends p's invocation frame to its owner within the owner's
// budget, or queues it at the owner's gate.
func (e *Engine) deliver(p *pending, frame []byte) {
	o := p.owner
	o.gmu.Lock()
	if p.left {
		o.gmu.Unlock()
		return // answered, stopped or abandoned before it was sent
	}
	if len(o.gate) == 0 && e.fitsLocked(o, p.size) {
		e.chargeLocked(o, p)
		o.gmu.Unlock()
		o.send(frame)
		return
	}
	if len(o.gate) >= maxGateCalls || p.size > smallCall && o.gateBytes+p.size > e.maxGateBytes() {
		n, b := len(o.gate), o.gateBytes
		o.gmu.Unlock()
		e.refuse(p, CodeTooManyInvocations, fmt.Sprintf(
			"worker busy: %d calls (%d bytes in calls over %d bytes) already wait for the worker serving %s (max %d calls, %d bytes); try again later",
			n, b, smallCall, p.functionID, maxGateCalls, e.maxGateBytes()))
		return
	}
	o.gate = append(o.gate, gatedCall{p: p, frame: frame})
	o.gateBytes += bigPart(p.size)
	o.gmu.Unlock()
}

// What waits at one worker's gate is bounded: at most maxGateCalls
// calls, and calls over smallCall bytes at most maxGateBytes in all; past
// that a call is refused (too_many_invocations) instead of held. Small
// calls (a fetch, a list) do not count against the bytes, so a flood of
// large frames cannot shut them out; and one client cannot fill the
// count alone (its sockets × the 32 calls each may have out, with the
// default shares, are a quarter of it). Small calls waiting stay under
// maxGateCalls × smallCall (256 MiB) however many clients send them.
const (
	maxGateCalls = 65536
	smallCall    = 4 << 10
)

func (e *Engine) maxGateBytes() int64 { return 4 * e.cfg.MaxWorkerBytes }

// bigPart is what a call of size bytes counts in gateBytes.
func bigPart(size int64) int64 {
	if size > smallCall {
		return size
	}
	return 0
}

// refuse answers p, which never reached its owner, with an error and
// forgets it.
func (e *Engine) refuse(p *pending, code, msg string) {
	e.pmu.Lock()
	_, mine := e.pending[p.id]
	if mine {
		delete(e.pending, p.id)
	}
	caller := p.caller
	e.pmu.Unlock()
	if !mine {
		return
	}
	p.finish()
	e.log.Debug("invocation refused", "function_id", p.functionID, "code", code, "reason", msg)
	switch {
	case p.waiter != nil:
		p.waiter <- invokeOutcome{err: &wire.ErrorBody{Code: code, Message: msg}}
	case caller != nil:
		caller.send(encodeError(p.id, p.functionID, code, msg))
	}
}

// fitsLocked reports whether a call of size bytes may go to o now: o has
// nothing in flight, or it stays within Config.MaxWorkerBytes. Callers
// hold o.gmu.
func (e *Engine) fitsLocked(o *conn, size int64) bool {
	return o.loadCalls == 0 || o.loadBytes+size <= e.cfg.MaxWorkerBytes
}

// chargeLocked counts p against its owner's budget. Callers hold o.gmu.
func (e *Engine) chargeLocked(o *conn, p *pending) {
	p.charged = true
	o.loadBytes += p.size
	o.loadCalls++
}

// leaveGate takes p (which has left e.pending) off its owner's budget or
// gate and sends the gated calls that now fit, in arrival order.
func (e *Engine) leaveGate(p *pending) {
	o := p.owner
	o.gmu.Lock()
	p.left = true
	if !p.charged {
		// Still at the gate (or never delivered): skipped when its turn
		// comes; the calls behind it are not held up by it.
		o.gmu.Unlock()
		if len(o.gate) > 0 {
			e.releaseGate(o)
		}
		return
	}
	p.charged = false
	o.loadBytes -= p.size
	o.loadCalls--
	o.gmu.Unlock()
	e.releaseGate(o)
}

// releaseGate sends o's gated calls while they fit.
func (e *Engine) releaseGate(o *conn) {
	var out [][]byte
	o.gmu.Lock()
	n := 0
	for ; n < len(o.gate); n++ {
		g := o.gate[n]
		if g.p.left {
			o.gateBytes -= bigPart(g.p.size)
			continue
		}
		if !e.fitsLocked(o, g.p.size) {
			break
		}
		o.gateBytes -= bigPart(g.p.size)
		e.chargeLocked(o, g.p)
		out = append(out, g.frame)
	}
	if n > 0 {
		clear(o.gate[:n])
		o.gate = o.gate[n:]
		if len(o.gate) == 0 {
			o.gate = nil // let a burst's array go
		}
	}
	o.gmu.Unlock()
	for _, f := range out {
		o.send(f)
	}
}

// dropGate forgets the calls waiting at a finished connection's gate
// (haltInvocations answers their callers).
func (e *Engine) dropGate(o *conn) {
	o.gmu.Lock()
	o.gate, o.gateBytes = nil, 0
	o.gmu.Unlock()
}

// callerOverBudget says why caller may not add a call of size bytes, or
// returns "". Callers hold e.pmu.
func (e *Engine) callerOverBudget(caller *conn, size int64) string {
	if caller.calls.Load() == 0 {
		return "" // a first call always passes, however large
	}
	if b := caller.callBytes.Load(); b+size > e.cfg.MaxCallerBytes {
		return fmt.Sprintf("the invocations in flight from this connection carry %d bytes and this one %d (max %d in all); wait for results before sending more",
			b, size, e.cfg.MaxCallerBytes)
	}
	return ""
}

// invocationSize is what a call counts against the budgets: its payload
// and metadata plus the frame's envelope.
func invocationSize(data, metadata []byte) int64 {
	return int64(len(data) + len(metadata) + 256)
}
