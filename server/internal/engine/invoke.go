package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// pending is an invocation forwarded to a worker and not answered yet.
type pending struct {
	id         string
	functionID string
	owner      *conn
	caller     *conn              // gets the result; nil when it is consumed
	from       *conn              // the worker that made the call (nil for the engine's own)
	waiter     chan invokeOutcome // engine-originated calls wait here
	admit      int                // admission state (dispatch.go); guarded by from.hmu
}

// invokeOutcome is the result of an engine-originated invocation.
type invokeOutcome struct {
	result json.RawMessage
	err    *wire.ErrorBody
}

// handleInvoke routes an invokefunction frame from worker c (docs/reference/engine-protocol.md §3).
func (e *Engine) handleInvoke(c *conn, m *wire.Message) {
	if m.Action != nil && m.Action.Type == wire.ActionEnqueue {
		e.enqueue(c, m)
		return
	}
	// replyID is where the caller wants its answer; void calls get none.
	replyID := m.InvocationID
	if m.Action != nil && m.Action.Type == wire.ActionVoid {
		replyID = ""
	}
	data := m.Data
	if len(data) == 0 {
		data = jsonNull
	}
	if why := c.forbiddenCall(m.FunctionID); why != "" {
		if replyID != "" {
			c.send(encodeError(replyID, m.FunctionID, CodeForbidden, why))
		}
		return
	}

	e.mu.RLock()
	f := e.functions[m.FunctionID]
	var owner *conn
	if f != nil {
		owner = f.owner
	}
	e.mu.RUnlock()

	if f == nil {
		if b := e.builtins[m.FunctionID]; b != nil {
			e.runBuiltin(c, b, replyID, data)
			return
		}
		if replyID != "" {
			c.send(encodeError(replyID, m.FunctionID, wire.CodeFunctionNotFound,
				fmt.Sprintf("Function %s not found", m.FunctionID)))
		} else {
			e.log.Debug("void call to unknown function dropped", "function_id", m.FunctionID, "worker_id", c.id)
		}
		return
	}

	id := replyID
	if id == "" {
		id = uuid.NewString()
	}
	p := &pending{id: id, functionID: m.FunctionID, owner: owner}
	if replyID != "" {
		p.caller = c
	}
	if code, msg := e.addPending(p, c); code != "" {
		if replyID != "" {
			c.send(encodeError(replyID, m.FunctionID, code, msg))
		}
		return
	}
	e.dispatch(c, p, encodeInvoke(id, m.FunctionID, data, c.id, stampCaller(m.Metadata, c), m.Traceparent, m.Baggage))
}

// addPending records p. It refuses (returning an error code and message)
// when the owner is already gone or the id is in flight.
func (e *Engine) addPending(p *pending, caller *conn) (code, msg string) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if p.owner.dead {
		return wire.CodeInvocationStopped, "Invocation stopped"
	}
	if caller != nil && caller.dead {
		p.caller = nil
	}
	if _, dup := e.pending[p.id]; dup {
		return wire.CodeInvalidRequest, fmt.Sprintf("invocation_id %s is already in flight; use a fresh UUID per call", p.id)
	}
	if caller != nil {
		if caller.calls.Load() >= int64(e.cfg.MaxInFlightPerConn) {
			return CodeTooManyInvocations, fmt.Sprintf(
				"too many invocations in flight from this connection (max %d); wait for results before sending more", e.cfg.MaxInFlightPerConn)
		}
		p.from = caller
		caller.calls.Add(1)
	}
	e.pending[p.id] = p
	p.owner.active.Add(1)
	return "", ""
}

// CodeForbidden answers a call a scoped token may not make (state::*, publish).
const CodeForbidden = "forbidden"

// CodeTooManyInvocations answers a call from a connection that already has
// Config.MaxInFlightPerConn worker-routed invocations waiting: one client
// cannot queue unbounded work on a worker that serves everyone.
const CodeTooManyInvocations = "too_many_invocations"

// finish releases p's counts once it left e.pending.
func (p *pending) finish() {
	p.owner.active.Add(-1)
	if p.from != nil {
		p.from.calls.Add(-1)
		p.from.callDone(p)
	}
}

// handleResult routes an invocationresult back to whoever is waiting. The
// caller receives the owner's frame unchanged (same invocation_id).
func (e *Engine) handleResult(c *conn, m *wire.Message, raw []byte) {
	e.pmu.Lock()
	p := e.pending[m.InvocationID]
	var caller *conn
	if p != nil && p.owner != c {
		e.pmu.Unlock()
		e.forgedResult(c, p, m.InvocationID)
		return
	}
	if p != nil {
		delete(e.pending, m.InvocationID)
		caller = p.caller
	}
	e.pmu.Unlock()
	if p == nil {
		e.log.Debug("invocationresult for an unknown or finished invocation dropped",
			"invocation_id", m.InvocationID, "worker_id", c.id)
		return
	}
	p.finish()
	switch {
	case p.waiter != nil:
		p.waiter <- invokeOutcome{result: m.Result, err: m.Error}
	case caller != nil:
		caller.send(raw)
	}
}

// forgedResult logs a result sent by a connection the invocation was not
// sent to; the frame is dropped and the invocation keeps waiting for its
// owner.
func (e *Engine) forgedResult(c *conn, p *pending, id string) {
	e.log.Warn("invocationresult dropped: it came from a connection the invocation was not sent to",
		"invocation_id", id, "function_id", p.functionID, "worker_id", c.id, "remote", c.remoteIP,
		"owner_worker_id", p.owner.id)
}

// haltInvocations answers every invocation c was executing with
// invocation_stopped and forgets the results c was waiting for.
func (e *Engine) haltInvocations(c *conn) {
	var stopped []*pending
	e.pmu.Lock()
	c.dead = true
	for id, p := range e.pending {
		switch {
		case p.owner == c:
			delete(e.pending, id)
			stopped = append(stopped, p)
		case p.caller == c:
			// The owner still runs it; its result will be consumed.
			p.caller = nil
		}
	}
	e.pmu.Unlock()
	for _, p := range stopped {
		p.finish()
		stop := &wire.ErrorBody{Code: wire.CodeInvocationStopped, Message: "Invocation stopped"}
		switch {
		case p.waiter != nil:
			p.waiter <- invokeOutcome{err: stop}
		case p.caller != nil && p.caller != c:
			p.caller.send(encodeError(p.id, p.functionID, stop.Code, stop.Message))
		}
	}
}

// internalCallTimeout bounds an engine-originated call (trigger fire,
// queued job) so that a worker that never answers cannot pile up goroutines
// or stall a queue forever.
const internalCallTimeout = 5 * time.Minute

// invokeInternal calls a function on behalf of the engine (trigger fires)
// and waits for its outcome. No _caller_worker_id is injected.
func (e *Engine) invokeInternal(ctx context.Context, functionID string, data, metadata json.RawMessage) invokeOutcome {
	return e.invokeAs(ctx, nil, functionID, data, metadata)
}

// invokeAs is invokeInternal stamped with stamp (a stampOf; nil: the
// engine's own call), for a queued job of a connection.
func (e *Engine) invokeAs(ctx context.Context, stamp json.RawMessage, functionID string, data, metadata json.RawMessage) invokeOutcome {
	if stamp == nil {
		stamp = engineStamp
	}
	ctx, cancel := context.WithTimeout(ctx, internalCallTimeout)
	defer cancel()
	if len(data) == 0 {
		data = jsonNull
	}
	e.mu.RLock()
	f := e.functions[functionID]
	var owner *conn
	if f != nil {
		owner = f.owner
	}
	e.mu.RUnlock()
	if f == nil {
		if b := e.builtins[functionID]; b != nil {
			return e.callBuiltin(ctx, nil, b, data)
		}
		return invokeOutcome{err: &wire.ErrorBody{Code: wire.CodeFunctionNotFound,
			Message: fmt.Sprintf("Function %s not found", functionID)}}
	}
	p := &pending{id: uuid.NewString(), functionID: functionID, owner: owner, waiter: make(chan invokeOutcome, 1)}
	if code, msg := e.addPending(p, nil); code != "" {
		return invokeOutcome{err: &wire.ErrorBody{Code: code, Message: msg}}
	}
	owner.send(encodeInvoke(p.id, functionID, data, "", stampWith(metadata, stamp), "", ""))
	select {
	case out := <-p.waiter:
		return out
	case <-ctx.Done():
	case <-e.closing:
	}
	e.pmu.Lock()
	_, still := e.pending[p.id]
	delete(e.pending, p.id)
	e.pmu.Unlock()
	if still {
		p.finish()
	} else {
		// The outcome raced the cancellation and is already buffered.
		return <-p.waiter
	}
	return invokeOutcome{err: &wire.ErrorBody{Code: wire.CodeInvocationStopped, Message: "Invocation stopped"}}
}

// runBuiltin executes a built-in for worker c and replies when replyID is
// set. Memory-only built-ins finish before it returns; durable writes reply
// from the store's committer once they are fsync'd.
func (e *Engine) runBuiltin(c *conn, b *builtin, replyID string, data json.RawMessage) {
	reply := func(res json.RawMessage, errb *wire.ErrorBody) {
		switch {
		case replyID == "":
			if errb != nil {
				e.log.Debug("void call to built-in failed", "function_id", b.id, "worker_id", c.id,
					"code", errb.Code, "message", errb.Message)
			}
		case errb != nil:
			c.send(encodeError(replyID, b.id, errb.Code, errb.Message))
		default:
			c.send(encodeResult(replyID, b.id, res))
		}
	}
	e.execBuiltin(c, b, data, reply)
}

// callBuiltin runs a built-in and waits for its outcome.
func (e *Engine) callBuiltin(ctx context.Context, c *conn, b *builtin, data json.RawMessage) invokeOutcome {
	ch := make(chan invokeOutcome, 1)
	e.execBuiltin(c, b, data, func(res json.RawMessage, errb *wire.ErrorBody) {
		ch <- invokeOutcome{result: res, err: errb}
	})
	select {
	case out := <-ch:
		return out
	case <-ctx.Done():
		return invokeOutcome{err: &wire.ErrorBody{Code: wire.CodeInvocationStopped, Message: "Invocation stopped"}}
	}
}

// execBuiltin runs b and hands its outcome to done exactly once; a panic in
// the built-in (or in the completion path) becomes an invocation_failed
// error instead of taking anything down.
func (e *Engine) execBuiltin(c *conn, b *builtin, data json.RawMessage, done asyncDone) {
	var once sync.Once
	finish := func(res json.RawMessage, errb *wire.ErrorBody) {
		once.Do(func() { done(res, errb) })
	}
	recovered := func(r any) {
		e.log.Error("panic in built-in function", "function_id", b.id, "panic", r, "stack", string(debug.Stack()))
		finish(nil, &wire.ErrorBody{Code: wire.CodeInvocationFailed, Message: fmt.Sprintf("built-in %s failed: %v", b.id, r)})
	}
	defer func() {
		if r := recover(); r != nil {
			recovered(r)
		}
	}()
	if b.async == nil {
		res, errb := b.call(e.ctx, c, data)
		finish(res, errb)
		return
	}
	b.async(c, data, func(res json.RawMessage, errb *wire.ErrorBody) {
		defer func() {
			if r := recover(); r != nil {
				recovered(r)
			}
		}()
		finish(res, errb)
	})
}

var jsonNull = json.RawMessage("null")

// injectCaller adds "_caller_worker_id" to an object payload (docs/reference/engine-protocol.md §3.1); other
// payloads are returned unchanged. The common case splices bytes instead of
// decoding the payload.
func injectCaller(data json.RawMessage, workerID string) json.RawMessage {
	if d := bytes.TrimLeft(data, " \t\r\n"); len(d) == 0 || d[0] != '{' {
		return data
	}
	return appendCallerData(nil, data, workerID)
}

// appendCallerData appends injectCaller(data, workerID) to b: an invocation
// frame is written in one go instead of copying a payload of kilobytes
// once to inject the caller and again into the frame.
func appendCallerData(b []byte, data json.RawMessage, workerID string) []byte {
	d := bytes.TrimLeft(data, " \t\r\n")
	if len(d) == 0 || d[0] != '{' {
		return append(b, data...)
	}
	if mayNameCaller(d) {
		// The payload may carry its own _caller_worker_id, spelled as is,
		// in another case (Go's decoder matches struct fields that way) or
		// with escapes: every such key goes, so no decoder, first-wins or
		// last-wins, can read a forged one.
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(d, &obj); err != nil {
			return append(b, data...)
		}
		for k := range obj {
			if strings.EqualFold(k, "_caller_worker_id") {
				delete(obj, k)
			}
		}
		obj["_caller_worker_id"], _ = json.Marshal(workerID)
		out, err := json.Marshal(obj)
		if err != nil {
			return append(b, data...)
		}
		return append(b, out...)
	}
	rest := bytes.TrimLeft(d[1:], " \t\r\n")
	b = append(b, `{"_caller_worker_id":`...)
	b = appendString(b, workerID)
	if len(rest) > 0 && rest[0] == '}' {
		return append(b, '}')
	}
	b = append(b, ',')
	return append(b, rest...)
}

// mayNameCaller reports whether an object payload could hold a key that
// decodes to _caller_worker_id in any case: any \u escape (which could
// spell it) or "_caller_wor" in any ASCII case (the rest may use the
// Kelvin sign, which Unicode folds to k).
func mayNameCaller(d []byte) bool {
	if bytes.Contains(d, []byte(`\u`)) {
		return true
	}
	const name = "_caller_wor"
	for i := bytes.IndexByte(d, '_'); i >= 0 && i+len(name) <= len(d); {
		if bytes.EqualFold(d[i:i+len(name)], []byte(name)) {
			return true
		}
		j := bytes.IndexByte(d[i+1:], '_')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}
