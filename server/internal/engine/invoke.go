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

	"github.com/iii-skills/skills/sdk-go/rules"
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
	size       int64              // invocationSize, against the budgets (gate.go)
	charged    bool               // counted in owner's budget; guarded by owner.gmu
	left       bool               // out of e.pending; guarded by owner.gmu
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
	refuse := func(code, why string) {
		if replyID != "" {
			c.send(encodeError(replyID, m.FunctionID, code, why))
		} else {
			e.log.Debug("void call refused", "function_id", m.FunctionID, "worker_id", c.id, "code", code, "reason", why)
		}
	}
	// as is who the call runs as: the connection, or for a trigger fire
	// the binding's registrant (triggerRegistrant).
	as := c
	if m.TriggerID != "" {
		var why string
		if as, why = e.triggerRegistrant(c, m.TriggerID, m.FunctionID); why != "" {
			refuse(rules.CodeForbidden, why)
			return
		}
	}
	if why := as.forbiddenCall(m.FunctionID); why != "" {
		refuse(rules.CodeForbidden, why)
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
			e.runBuiltin(c, as, b, replyID, data)
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
	p := &pending{id: id, functionID: m.FunctionID, owner: owner, size: invocationSize(data, m.Metadata)}
	if replyID != "" {
		p.caller = c
	}
	if code, msg := e.addPending(p, c); code != "" {
		refuse(code, msg)
		return
	}
	e.dispatch(c, p, encodeInvoke(id, m.FunctionID, data, as.id, stampCaller(m.Metadata, as), m.Traceparent, m.Baggage))
}

// triggerRegistrant is who a trigger fire from provider c runs as: the
// connection that registered the binding triggerID, so that a provider
// (the registry) never lends its own rights to whoever bound a function to
// its type. why is set, and the call refused, unless c provides the
// binding's type and the call is to the binding's function.
func (e *Engine) triggerRegistrant(c *conn, triggerID, functionID string) (*conn, string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	b := e.bindings[triggerID]
	if b == nil {
		return nil, fmt.Sprintf("forbidden: trigger_id %s names no registered trigger (its registrant may have left); a trigger fire runs as its registrant", triggerID)
	}
	if tt := e.triggerTypes[b.triggerType]; tt == nil || tt.provider != c || b.functionID != functionID {
		return nil, fmt.Sprintf("forbidden: trigger %s (type %s, function %s) is not a binding this connection provides for %s; only its type's provider fires it",
			triggerID, b.triggerType, b.functionID, functionID)
	}
	return b.owner, ""
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
	if caller != nil && !caller.local {
		// The in-process worker's calls (section reads, trigger fires) are
		// made for its own callers, who are bounded themselves.
		if caller.calls.Load() >= int64(e.cfg.MaxInFlightPerConn) {
			return CodeTooManyInvocations, fmt.Sprintf(
				"too many invocations in flight from this connection (max %d); wait for results before sending more", e.cfg.MaxInFlightPerConn)
		}
		if why := e.callerOverBudget(caller, p.size); why != "" {
			return CodeTooManyInvocations, why
		}
	}
	if caller != nil {
		p.from = caller
		caller.calls.Add(1)
		caller.callBytes.Add(p.size)
	}
	e.pending[p.id] = p
	p.owner.active.Add(1)
	return "", ""
}

// CodeTooManyInvocations answers a call from a connection that already has
// Config.MaxInFlightPerConn worker-routed invocations waiting: one client
// cannot queue unbounded work on a worker that serves everyone.
const CodeTooManyInvocations = "too_many_invocations"

// finish releases p's counts once it left e.pending.
func (p *pending) finish() {
	p.owner.active.Add(-1)
	p.owner.e.leaveGate(p)
	if p.from != nil {
		p.from.calls.Add(-1)
		p.from.callBytes.Add(-p.size)
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

// invokeAs calls a function on behalf of the engine and waits for its
// outcome: a trigger fire of a built-in type or a queued job, run as the
// connection as (the binding's registrant, the job's enqueuer; nil: the
// engine itself), whose identity is stamped and whose rights built-ins
// apply. No _caller_worker_id is injected, as in the real engine.
func (e *Engine) invokeAs(ctx context.Context, as *conn, functionID string, data, metadata json.RawMessage) invokeOutcome {
	stamp := stampOf(as)
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
			if why := as.forbiddenCall(functionID); why != "" {
				return invokeOutcome{err: &wire.ErrorBody{Code: rules.CodeForbidden, Message: why}}
			}
			return e.callBuiltin(ctx, as, b, data)
		}
		return invokeOutcome{err: &wire.ErrorBody{Code: wire.CodeFunctionNotFound,
			Message: fmt.Sprintf("Function %s not found", functionID)}}
	}
	p := &pending{id: uuid.NewString(), functionID: functionID, owner: owner, waiter: make(chan invokeOutcome, 1),
		size: invocationSize(data, metadata)}
	if code, msg := e.addPending(p, nil); code != "" {
		return invokeOutcome{err: &wire.ErrorBody{Code: code, Message: msg}}
	}
	e.deliver(p, encodeInvoke(p.id, functionID, data, "", stampWith(metadata, stamp), "", ""))
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

// runBuiltin executes a built-in for worker c, as the connection as (c, or
// a trigger's registrant), and replies to c when replyID is set.
// Memory-only built-ins finish before it returns; durable writes reply
// from the store's committer once they are fsync'd.
func (e *Engine) runBuiltin(c, as *conn, b *builtin, replyID string, data json.RawMessage) {
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
	e.execBuiltin(as, b, data, reply)
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
