package iii

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// TriggerRequest describes one call of a function through the engine. Its
// fields are those of the official Go SDK.
type TriggerRequest struct {
	// FunctionID is the function to call, e.g. "state::get".
	FunctionID string
	// Data is the invocation's payload as raw JSON; nil is sent as {}. It is
	// written to the wire as is, so it must be valid JSON (json.Marshal's
	// output, or bytes received from the engine); invalid JSON is refused.
	Data json.RawMessage
	// Metadata is the per-invocation sidecar delivered to the handler (see
	// MetadataFromContext) as raw JSON; nil is omitted.
	Metadata json.RawMessage
	// Action is nil (call and wait), VoidAction() or EnqueueAction(queue).
	Action *TriggerAction
	// Timeout bounds the wait for the result (default: the client's
	// invocation timeout, 30 s). For void calls it bounds how long the call
	// may sit in the offline queue.
	Timeout time.Duration
	// Namespace is the engine namespace the function resolves in; empty
	// means the engine default.
	Namespace string
	// Traceparent and Baggage are the W3C trace context sent with the call
	// (invokefunction "traceparent" / "baggage"). Empty: those of the
	// invocation ctx serves, if any (TraceContextFromContext).
	Traceparent string
	Baggage     string
	// TriggerID names the binding this call fires, for a trigger type's
	// provider (FireTrigger sets it). An engine that stamps callers (ours)
	// then delivers the call as the binding's registrant's, never as the
	// provider's: a provider must not lend its own rights to whoever bound
	// a function to its type. Other engines ignore it.
	TriggerID string
}

// TriggerAction is the optional action of a call: VoidAction or
// EnqueueAction. It is the wire's invokefunction action itself.
type TriggerAction = wire.Action

// VoidAction makes Trigger fire-and-forget: it returns (nil, nil) as soon as
// the call is sent (or queued while disconnected).
func VoidAction() *TriggerAction { return &TriggerAction{Type: wire.ActionVoid} }

// EnqueueAction hands the call to the engine queue named queue; Trigger
// returns the engine's receipt ({"messageReceiptId": "<uuid>"}).
func EnqueueAction(queue string) *TriggerAction {
	return &TriggerAction{Type: wire.ActionEnqueue, Queue: queue}
}

type callResult struct {
	result json.RawMessage
	err    error
}

// pendingCall is an awaited Trigger. conn is the connection its frame was
// written to, nil while it sits in the offline queue.
type pendingCall struct {
	id         string
	functionID string
	conn       *wsConn
	ch         chan callResult // capacity 1; whoever removes the call from the map sends
}

// queuedCall is a Trigger frame held while disconnected. Awaited calls are
// dropped at flush time when their caller is gone (no longer in pending);
// void calls when expires has passed.
type queuedCall struct {
	frame   []byte
	pending *pendingCall
	expires time.Time
}

// Trigger calls a function through the engine. By default it waits for the
// result (up to req.Timeout and ctx) and returns it; a result the function
// did not set is returned as nil. A function error is returned as an
// *InvocationError. A void call returns (nil, nil) once sent or queued; an
// enqueue call returns the engine's receipt.
//
// Timeouts: the call fails with an error matching ErrTimeout when
// req.Timeout passes, or when ctx's deadline passes (then it also matches
// context.DeadlineExceeded); a cancelled ctx gives context.Canceled.
//
// While disconnected, calls are queued (bounded by WithOfflineQueueSize) and
// sent after the next connection's registration replay; when the queue is
// full Trigger fails with ErrNotConnected. An awaited call whose connection
// drops before the result arrives fails with an *InvocationError of code
// invocation_stopped that also matches errors.Is(err, ErrNotConnected); it is
// not re-sent, because the function may already have run.
func (c *Client) Trigger(ctx context.Context, req TriggerRequest) (json.RawMessage, error) {
	if req.FunctionID == "" {
		return nil, errors.New("iii: trigger: FunctionID is empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("iii: trigger %s: %w", req.FunctionID, err)
	}
	data := req.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	} else if !wire.Valid(data) {
		return nil, fmt.Errorf("iii: trigger %s: Data is not valid JSON (want a JSON value such as json.Marshal returns): %.64q", req.FunctionID, data)
	}
	meta := req.Metadata
	if len(meta) > 0 && !wire.Valid(meta) {
		return nil, fmt.Errorf("iii: trigger %s: Metadata is not valid JSON (want a JSON value such as json.Marshal returns): %.64q", req.FunctionID, meta)
	}
	if meta == nil {
		// Calls made from a handler carry its invocation's metadata, the
		// way trace context flows: the registry's section-cycle detection
		// relies on it.
		meta, _ = MetadataFromContext(ctx)
	}
	traceparent, baggage := TraceContextFromContext(ctx)
	if req.Traceparent != "" {
		traceparent = req.Traceparent
	}
	if req.Baggage != "" {
		baggage = req.Baggage
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = c.opts.invocationTimeout
	}
	m := wire.Message{Type: wire.TypeInvokeFunction, FunctionID: req.FunctionID, Data: data, Action: req.Action,
		Metadata: meta, Namespace: req.Namespace, Traceparent: traceparent, Baggage: baggage, TriggerID: req.TriggerID}

	if req.Action != nil && req.Action.Type == wire.ActionVoid {
		frame := wire.EncodeMessage(&m)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.stopErr != nil {
			return nil, c.stopErr
		}
		if c.conn != nil && c.conn.send(frame) {
			return nil, nil
		}
		return nil, c.queueLocked(&queuedCall{frame: frame, expires: time.Now().Add(timeout)})
	}

	m.InvocationID = uuid.NewString()
	p := &pendingCall{id: m.InvocationID, functionID: req.FunctionID, ch: make(chan callResult, 1)}
	frame := wire.EncodeMessage(&m)
	c.mu.Lock()
	if c.stopErr != nil {
		c.mu.Unlock()
		return nil, c.stopErr
	}
	c.pending[p.id] = p
	if c.conn != nil && c.conn.send(frame) {
		p.conn = c.conn
	} else if err := c.queueLocked(&queuedCall{frame: frame, pending: p}); err != nil {
		delete(c.pending, p.id)
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.ch:
		return r.result, r.err
	case <-timer.C:
		c.forget(p)
		return nil, fmt.Errorf("iii: trigger %s: no result within %s: %w", req.FunctionID, timeout, ErrTimeout)
	case <-ctx.Done():
		c.forget(p)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("iii: trigger %s: %w (%w)", req.FunctionID, ErrTimeout, ctx.Err())
		}
		return nil, fmt.Errorf("iii: trigger %s: %w", req.FunctionID, ctx.Err())
	}
}

// forget drops a call whose caller stopped waiting; a late result is ignored.
func (c *Client) forget(p *pendingCall) {
	c.mu.Lock()
	if c.pending[p.id] == p {
		delete(c.pending, p.id)
	}
	c.mu.Unlock()
}

// queueLocked appends to the offline queue, first pruning calls nobody waits
// for when it is full.
func (c *Client) queueLocked(q *queuedCall) error {
	limit := c.opts.offlineQueueSize
	if len(c.offline) >= limit {
		now := time.Now()
		c.offline = dropStale(c.offline, c.pending, now)
	}
	if len(c.offline) >= limit {
		return fmt.Errorf("iii: offline queue full (%d calls waiting for a connection): %w", limit, ErrNotConnected)
	}
	c.offline = append(c.offline, q)
	return nil
}

func dropStale(q []*queuedCall, pending map[string]*pendingCall, now time.Time) []*queuedCall {
	kept := q[:0]
	for _, e := range q {
		if e.live(pending, now) {
			kept = append(kept, e)
		}
	}
	for i := len(kept); i < len(q); i++ {
		q[i] = nil
	}
	return kept
}

func (q *queuedCall) live(pending map[string]*pendingCall, now time.Time) bool {
	if q.pending != nil {
		return pending[q.pending.id] == q.pending
	}
	return now.Before(q.expires)
}

// flushOfflineLocked sends the queued calls whose callers still wait.
func (c *Client) flushOfflineLocked(cn *wsConn) {
	now := time.Now()
	for _, q := range c.offline {
		if !q.live(c.pending, now) {
			continue
		}
		if q.pending != nil {
			q.pending.conn = cn
		}
		cn.send(q.frame)
	}
	c.offline = nil
}

// resolve delivers an invocationresult to its waiting caller.
func (c *Client) resolve(m wire.Message) {
	c.mu.Lock()
	p := c.pending[m.InvocationID]
	if p != nil {
		delete(c.pending, m.InvocationID)
	}
	c.mu.Unlock()
	if p == nil {
		c.log.Debug("iii: result for an unknown or abandoned invocation", "invocation_id", m.InvocationID)
		return
	}
	if m.Error != nil {
		fid := m.FunctionID
		if fid == "" {
			fid = p.functionID
		}
		p.ch <- callResult{err: errorFromBody(fid, m.Error)}
		return
	}
	res := m.Result
	if string(res) == "null" {
		res = nil
	}
	p.ch <- callResult{result: res}
}

// AcceptAll is a TriggerHandler for a trigger type whose bindings need no
// set-up: it accepts every binding (the client keeps them, see
// TriggerTypeRef.Bindings, and Fire reaches them) and logs each at debug
// on log when it is not nil.
func AcceptAll(log *slog.Logger, triggerType string) TriggerHandler {
	return acceptAll{log: log, triggerType: triggerType}
}

type acceptAll struct {
	log         *slog.Logger
	triggerType string
}

func (a acceptAll) RegisterTrigger(_ context.Context, cfg TriggerConfig) error {
	if a.log != nil {
		a.log.Debug("subscriber added", "trigger_type", a.triggerType, "id", cfg.ID, "function_id", cfg.FunctionID)
	}
	return nil
}

func (a acceptAll) UnregisterTrigger(_ context.Context, cfg TriggerConfig) error {
	if a.log != nil {
		a.log.Debug("subscriber removed", "trigger_type", a.triggerType, "id", cfg.ID)
	}
	return nil
}
