package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/iii-skills/skills/sdk-go/wire"
)

var pongFrame = []byte(`{"type":"pong"}`)

// handleFrame decodes and routes one inbound frame. Bad frames are logged
// and dropped; nothing a worker sends closes its connection (except an
// oversize frame, handled by the read loop) and a panic is contained here.
func (e *Engine) handleFrame(c *conn, mt int, data []byte) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("panic while handling a frame; frame dropped", "worker_id", c.id,
				"panic", r, "frame", preview(data), "stack", string(debug.Stack()))
		}
	}()
	if mt == websocket.BinaryMessage && isTelemetry(data) {
		return
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return
	}
	// Results are forwarded as they came, without decoding them: they can be
	// megabytes (the iii://skills index) and the caller decodes them anyway.
	if f, ok := wire.ScanResultFrame(data); ok && e.forwardResult(c, f.InvocationID, data) {
		return
	}
	// Invocations are routed without decoding their payload either: the
	// owner or the built-in decodes it. A payload forwarded to a worker is
	// still checked, so no worker is sent a frame it cannot parse.
	if f, ok := wire.ScanInvokeFrame(data); ok && e.forwardable(&f) {
		e.handleInvoke(c, &wire.Message{Type: wire.TypeInvokeFunction, InvocationID: f.InvocationID,
			FunctionID: f.FunctionID, Data: f.Data, Metadata: f.Metadata, Action: f.Action,
			Traceparent: f.Traceparent, Baggage: f.Baggage, TriggerID: f.TriggerID})
		return
	}
	var m wire.Message
	if err := json.Unmarshal(data, &m); err != nil {
		e.log.Warn("dropping frame: not a valid iii protocol message", "worker_id", c.id,
			"err", err, "frame", preview(data))
		return
	}
	if missing := missingField(&m); missing != "" {
		e.log.Warn("dropping frame: required field missing", "worker_id", c.id,
			"type", string(m.Type), "missing", missing, "frame", preview(data))
		if missing == "data" && validUUID(m.InvocationID) {
			// The real engine drops such a frame and the caller times
			// out (docs/reference/engine-protocol.md §10.13); naming the problem costs nothing.
			c.send(encodeError(m.InvocationID, m.FunctionID, wire.CodeInvalidRequest,
				`invokefunction has no "data" key; send "data": null for a call without a payload`))
		}
		return
	}
	if (m.Type == wire.TypeInvokeFunction || m.Type == wire.TypeInvocationResult) &&
		m.InvocationID != "" && !validUUID(m.InvocationID) {
		e.log.Warn("dropping frame: invocation_id is not a UUID", "worker_id", c.id,
			"type", string(m.Type), "invocation_id", preview([]byte(m.InvocationID)))
		return
	}
	switch m.Type {
	case wire.TypeInvokeFunction:
		e.handleInvoke(c, &m)
	case wire.TypeInvocationResult:
		e.handleResult(c, &m, data)
	case wire.TypeRegisterFunction:
		e.registerFunction(c, &m)
	case wire.TypeUnregisterFunction:
		e.unregisterFunction(c, m.ID)
	case wire.TypeRegisterTriggerType:
		e.registerTriggerType(c, &m)
	case wire.TypeUnregisterTriggerType:
		e.unregisterTriggerType(c, m.ID)
	case wire.TypeRegisterTrigger:
		e.registerTrigger(c, &m)
	case wire.TypeUnregisterTrigger:
		e.unregisterTrigger(c, &m)
	case wire.TypeTriggerRegistrationResult:
		e.triggerRegistrationResult(c, &m, data)
	case wire.TypeReattach:
		e.reattach(c, &m)
	case wire.TypePing:
		c.send(pongFrame)
	case wire.TypePong, wire.TypeRegisterService, wire.TypeWorkerRegistered, wire.TypeRegistrationRejected:
		// Nothing to do: pong answers nothing, services are console
		// cosmetics, and the last two only flow engine → worker.
	default:
		e.log.Warn("dropping frame: unknown message type", "worker_id", c.id,
			"type", string(m.Type), "frame", preview(data))
	}
}

// missingField names the first required field m lacks, or returns "".
func missingField(m *wire.Message) string {
	switch m.Type {
	case "":
		return "type"
	case wire.TypeInvokeFunction:
		if m.FunctionID == "" {
			return "function_id"
		}
		if m.Data == nil {
			return "data"
		}
	case wire.TypeInvocationResult:
		if m.InvocationID == "" {
			return "invocation_id"
		}
	case wire.TypeRegisterFunction, wire.TypeUnregisterFunction, wire.TypeRegisterTriggerType,
		wire.TypeUnregisterTriggerType, wire.TypeUnregisterTrigger, wire.TypeRegisterService:
		if m.ID == "" {
			return "id"
		}
	case wire.TypeRegisterTrigger:
		switch {
		case m.ID == "":
			return "id"
		case m.TriggerType == "":
			return "trigger_type"
		case m.FunctionID == "":
			return "function_id"
		}
	case wire.TypeTriggerRegistrationResult:
		if m.ID == "" {
			return "id"
		}
	case wire.TypeReattach:
		if m.PreviousWorkerID == "" {
			return "previous_worker_id"
		}
	}
	return ""
}

// validUUID reports whether s is a UUID in its 36-character text form, the
// only invocation_id the real engine decodes (docs/reference/engine-protocol.md §2.3, §10.14).
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// preview shortens a frame for a log line.
func preview(b []byte) string {
	const max = 256
	if len(b) <= max {
		return string(b)
	}
	return fmt.Sprintf("%s… (%d bytes)", b[:max], len(b))
}

// forwardResult sends a result frame unchanged to the worker that made the
// call. It reports false, touching nothing, when the frame needs the full
// decode: an engine-internal waiter, or no pending invocation by that id.
func (e *Engine) forwardResult(c *conn, id string, data []byte) bool {
	e.pmu.Lock()
	p := e.pending[id]
	if p == nil || p.waiter != nil || p.caller == nil || p.owner != c {
		// Not ours to forward: handleResult decides (and logs a result
		// from a connection that is not the owner).
		e.pmu.Unlock()
		return false
	}
	delete(e.pending, id)
	e.pmu.Unlock()
	p.finish()
	// The scan locates fields without validating the rest; a frame is only
	// forwarded whole when it parses, so no caller is sent one it cannot.
	if !wire.Valid(data) {
		e.log.Warn("invocationresult dropped: not valid JSON", "worker_id", c.id,
			"function_id", p.functionID, "invocation_id", id, "frame", preview(data))
		p.caller.send(encodeError(id, p.functionID, wire.CodeDeserializationError,
			"the worker serving "+p.functionID+" answered with an invocationresult that is not valid JSON"))
		return true
	}
	p.caller.send(data)
	return true
}

// forwardable reports whether a scanned invocation may skip full decoding:
// a built-in validates its input itself; what goes to a worker must be
// valid JSON (the full decoding path logs and drops it otherwise).
func (e *Engine) forwardable(f *wire.InvokeFrame) bool {
	// Frames the full decode refuses (no "data" key, an invocation_id that
	// is not a UUID) take that path, which logs and answers them.
	if len(f.Data) == 0 || (f.InvocationID != "" && !validUUID(f.InvocationID)) {
		return false
	}
	if _, builtin := e.builtins[f.FunctionID]; builtin {
		return true // workers cannot register a built-in's id
	}
	return wire.Valid(f.Data) && (len(f.Metadata) == 0 || wire.Valid(f.Metadata))
}
