package engine

// Worker-registered functions: claiming and releasing ids (first owner
// wins), as triggers.go does for trigger types and bindings.

import (
	"encoding/json"
	"strings"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// function is a worker-registered function.
type function struct {
	id             string
	description    string
	requestFormat  json.RawMessage
	responseFormat json.RawMessage
	metadata       json.RawMessage
	owner          *conn
}

// registerFunction claims a function id for c. Ids the engine serves
// itself (engine::*, state::*, every built-in) cannot be registered, and an
// id owned by another live connection stays with it: first owner wins, as
// in iii 0.23. The loser gets registrationrejected
// (FUNCTION_NAMESPACE_CONFLICT) and keeps its connection; nothing is
// shadowed, so nothing needs restoring when it leaves.
func (e *Engine) registerFunction(c *conn, m *wire.Message) {
	if reservedFunction(m.ID) || e.builtins[m.ID] != nil {
		e.log.Warn("registerfunction refused: the id is served by the engine itself",
			"function_id", m.ID, "worker_id", c.id, "remote", c.remoteIP)
		c.send(encodeRejected(m.ID, "", ""))
		return
	}
	if why := c.outOfScope("function", m.ID); why != "" {
		e.log.Warn("registerfunction refused: "+why, "function_id", m.ID, "worker_id", c.id, "remote", c.remoteIP)
		c.send(encodeRejected(m.ID, "", "forbidden: "+why))
		return
	}
	f := &function{
		id:             m.ID,
		description:    m.Description,
		requestFormat:  m.RequestFormat,
		responseFormat: m.ResponseFormat,
		metadata:       nullToNil(m.Metadata),
		owner:          c,
	}
	e.mu.Lock()
	if why := e.functionReservedLocked(c, m.ID); why != "" {
		owner := ""
		if prev := e.functions[m.ID]; prev != nil {
			owner = prev.owner.id
		}
		e.mu.Unlock()
		e.log.Warn("registerfunction refused: "+why, "function_id", m.ID, "worker_id", c.id, "remote", c.remoteIP)
		c.send(encodeRejected(m.ID, owner, why))
		return
	}
	if prev := e.functions[m.ID]; prev != nil && prev.owner != c {
		owner := prev.owner.id
		e.mu.Unlock()
		e.log.Warn("registerfunction refused: the id belongs to another live worker (first owner wins)",
			"function_id", m.ID, "worker_id", c.id, "remote", c.remoteIP, "owner_worker_id", owner)
		c.send(encodeRejected(m.ID, owner, ""))
		return
	}
	e.functions[m.ID] = f
	e.mu.Unlock()
	e.functionsChanged()
}

// reservedFunction reports whether id is in a namespace of the engine's
// own built-ins: workers may not register there even ids the engine does
// not serve, so a future built-in can never be pre-empted.
func reservedFunction(id string) bool {
	return strings.HasPrefix(id, "engine::") || strings.HasPrefix(id, "state::")
}

// encodeRejected builds the registrationrejected frame for a function id
// (docs/reference/engine-protocol.md §2.13); ownerID is "" when the engine itself owns the id or the
// connection's scoped token does not cover it. reason, when set, says why
// in "description" (our addition; other clients ignore it).
func encodeRejected(functionID, ownerID, reason string) []byte {
	b := make([]byte, 0, 128+len(functionID)+len(ownerID)+len(reason))
	b = append(b, `{"type":"registrationrejected","code":`...)
	b = appendString(b, wire.CodeFunctionNamespaceClash)
	b = append(b, `,"namespace":"default","function_id":`...)
	b = appendString(b, functionID)
	b = append(b, `,"owner_worker_id":`...)
	b = appendString(b, ownerID)
	if reason != "" {
		b = append(b, `,"description":`...)
		b = appendString(b, reason)
	}
	return append(b, '}')
}

func (e *Engine) unregisterFunction(c *conn, id string) {
	e.mu.Lock()
	f := e.functions[id]
	removed := f != nil && f.owner == c
	if removed {
		delete(e.functions, id)
	}
	e.mu.Unlock()
	if removed {
		e.functionsChanged()
	}
}
