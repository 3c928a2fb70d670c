package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// triggerType is a registered trigger type. provider is nil for the
// engine's own types (state, engine::functions-available,
// engine::workers-available), which are served in-process.
type triggerType struct {
	id          string
	description string
	triggerReq  json.RawMessage // trigger_request_format: schema of a binding's config
	callReq     json.RawMessage // call_request_format: schema of the fired payload
	provider    *conn
	workerName  string // for built-in types
}

// binding is a registered trigger: "call function_id when trigger_type
// fires, configured by config". It is parked while its type has no
// provider or the provider refused it, and delivered again when a provider
// (re)registers the type. A binding of a built-in type is served by the
// engine (onBuiltin).
type binding struct {
	id          string
	triggerType string
	functionID  string
	config      json.RawMessage
	metadata    json.RawMessage
	owner       *conn
	parked      bool
	onBuiltin   bool
	state       *stateFilter // parsed config of a state binding on the built-in provider
	topic       string       // topic of a subscribe binding on the built-in provider
}

var emptyObject = json.RawMessage("{}")

// registerTriggerFrame is the copy of a binding sent to its provider.
func registerTriggerFrame(b *binding) []byte {
	cfg := b.config
	if len(cfg) == 0 {
		cfg = emptyObject
	}
	return encode(&wire.Message{
		Type:        wire.TypeRegisterTrigger,
		ID:          b.id,
		TriggerType: b.triggerType,
		FunctionID:  b.functionID,
		Config:      cfg,
		Metadata:    b.metadata,
	})
}

func unregisterTriggerFrame(id, triggerType string) []byte {
	return encode(&wire.Message{Type: wire.TypeUnregisterTrigger, ID: id, TriggerType: triggerType})
}

// deliverLocked activates b on the current provider of its type: a worker
// gets a registertrigger frame, a built-in type validates and serves it,
// and without a provider b is parked. An error means the built-in provider
// refused the config; b is then parked. Callers hold e.mu.
func (e *Engine) deliverLocked(b *binding) error {
	tt := e.triggerTypes[b.triggerType]
	switch {
	case tt == nil:
		b.parked = true
	case tt.provider == nil:
		if b.triggerType == stateTriggerType {
			f, err := parseStateFilter(b.config)
			if err != nil {
				b.parked = true
				return err
			}
			b.state = f
		}
		if b.triggerType == subscribeTriggerType {
			topic, err := parseSubscribeTopic(b.config)
			if err != nil {
				b.parked = true
				return err
			}
			b.topic = topic
		}
		b.parked = false
		b.onBuiltin = true
		e.builtinBinds[b.triggerType]++
	default:
		b.parked = false
		tt.provider.send(registerTriggerFrame(b))
	}
	return nil
}

// detachBuiltinLocked takes b off the engine's own provider. Callers hold e.mu.
func (e *Engine) detachBuiltinLocked(b *binding) {
	if b.onBuiltin {
		b.onBuiltin = false
		b.state = nil
		b.topic = ""
		e.builtinBinds[b.triggerType]--
	}
}

// registerTriggerType makes c the provider of a type. The engine's own
// types (state, engine::functions-available, engine::workers-available)
// cannot be taken over: a worker providing `state` would receive every
// state binding and could starve the registry of other workers' writes.
// A type provided by another live connection stays with it (first owner
// wins, as for function ids); c is kept on standby and takes the type over
// if that provider leaves, so a provider that reconnects before its old
// connection is cleaned up still ends up providing it. The provider's own
// re-registration re-delivers every binding, as upstream does. There is no
// reply frame for registertriggertype, so refusals are logged.
func (e *Engine) registerTriggerType(c *conn, m *wire.Message) {
	if why := c.outOfScope("trigger type", m.ID); why != "" {
		e.log.Warn("registertriggertype refused: "+why, "trigger_type", m.ID, "worker_id", c.id, "remote", c.remoteIP)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if why := e.typeReservedLocked(c, m.ID); why != "" {
		e.log.Warn("registertriggertype refused: "+why, "trigger_type", m.ID, "worker_id", c.id, "remote", c.remoteIP)
		return
	}
	tt := &triggerType{
		id:          m.ID,
		description: m.Description,
		triggerReq:  m.TriggerRequestFormat,
		callReq:     m.CallRequestFormat,
		provider:    c,
	}
	if cur := e.triggerTypes[m.ID]; cur != nil && cur.provider != c {
		if cur.provider == nil {
			e.log.Warn("registertriggertype refused: the trigger type is served by the engine itself",
				"trigger_type", m.ID, "worker_id", c.id, "remote", c.remoteIP)
			return
		}
		e.log.Warn("registertriggertype deferred: the trigger type belongs to another live worker (first owner wins); this worker provides it if that one leaves",
			"trigger_type", m.ID, "worker_id", c.id, "remote", c.remoteIP, "owner_worker_id", cur.provider.id)
		e.standbyTypes[m.ID] = append(slices.DeleteFunc(e.standbyTypes[m.ID],
			func(s *triggerType) bool { return s.provider == c }), tt)
		return
	}
	e.provideLocked(tt)
}

// provideLocked makes tt's connection the provider of its type and
// delivers every binding of the type, parked or live, to it. Callers hold
// e.mu.
func (e *Engine) provideLocked(tt *triggerType) {
	e.triggerTypes[tt.id] = tt
	for _, b := range e.bindings {
		if b.triggerType == tt.id {
			b.parked = false
			tt.provider.send(registerTriggerFrame(b))
		}
	}
}

// unregisterTriggerType is sent by the Node/Python SDKs (the real engine
// drops it). The provider that sent it stops providing the type.
func (e *Engine) unregisterTriggerType(c *conn, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tt := e.triggerTypes[id]; tt != nil && tt.provider == c {
		e.removeTypeLocked(id)
	}
}

// removeTypeLocked drops a worker-provided type: the first standby
// registration of a live connection takes it over, else its bindings are
// parked until a provider registers the type again. Callers hold e.mu.
func (e *Engine) removeTypeLocked(id string) {
	delete(e.triggerTypes, id)
	standby := e.standbyTypes[id]
	delete(e.standbyTypes, id)
	for i, tt := range standby {
		if !tt.provider.isDone() {
			if rest := standby[i+1:]; len(rest) > 0 {
				e.standbyTypes[id] = rest
			}
			e.log.Info("a standby worker now provides the trigger type", "trigger_type", id, "worker_id", tt.provider.id)
			e.provideLocked(tt)
			return
		}
	}
	for _, b := range e.bindings {
		if b.triggerType == id {
			b.parked = true
		}
	}
}

func (e *Engine) registerTrigger(c *conn, m *wire.Message) {
	b := &binding{
		id:          m.ID,
		triggerType: m.TriggerType,
		functionID:  m.FunctionID,
		config:      m.Config,
		metadata:    nullToNil(m.Metadata),
		owner:       c,
	}
	refuse := func(msg string) {
		c.send(encode(&wire.Message{
			Type:        wire.TypeTriggerRegistrationResult,
			ID:          b.id,
			TriggerType: b.triggerType,
			FunctionID:  b.functionID,
			Error:       &wire.ErrorBody{Code: wire.CodeTriggerRegistration, Message: msg},
		}))
	}
	if why := c.scopeForbidsBinding(b.triggerType, b.functionID); why != "" {
		e.log.Warn("registertrigger refused: "+why, "id", b.id, "trigger_type", b.triggerType, "worker_id", c.id)
		refuse(why)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev := e.bindings[b.id]; prev != nil {
		if prev.owner != c && e.conns[prev.owner.id] == prev.owner {
			// Only the owner replaces or removes a trigger while it lives.
			e.log.Warn("registertrigger refused: the trigger id belongs to another live worker",
				"id", b.id, "worker_id", c.id, "remote", c.remoteIP, "owner_worker_id", prev.owner.id)
			refuse(fmt.Sprintf("trigger %s belongs to another worker (%s); only its owner may replace or remove it", b.id, prev.owner.id))
			return
		}
		e.removeBindingLocked(prev)
	}
	if err := e.deliverLocked(b); err != nil {
		refuse(err.Error())
		return
	}
	e.bindings[b.id] = b
}

// removeBindingLocked forgets b and tells its provider. Callers hold e.mu.
func (e *Engine) removeBindingLocked(b *binding) {
	delete(e.bindings, b.id)
	if b.onBuiltin {
		e.detachBuiltinLocked(b)
		return
	}
	if tt := e.triggerTypes[b.triggerType]; tt != nil && tt.provider != nil && !b.parked {
		tt.provider.send(unregisterTriggerFrame(b.id, b.triggerType))
	}
}

func (e *Engine) unregisterTrigger(c *conn, m *wire.Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bindings[m.ID]
	if b == nil {
		e.log.Debug("unregistertrigger for an unknown trigger ignored", "id", m.ID, "worker_id", c.id)
		return
	}
	if b.owner != c {
		// unregistertrigger has no reply frame; the refusal is logged.
		e.log.Warn("unregistertrigger refused: the trigger belongs to another worker; only its owner may remove it",
			"id", m.ID, "worker_id", c.id, "remote", c.remoteIP, "owner_worker_id", b.owner.id)
		return
	}
	e.removeBindingLocked(b)
}

// triggerRegistrationResult handles a provider's answer to a forwarded
// registertrigger: success needs nothing; an error parks the binding and is
// forwarded to the binding's owner.
func (e *Engine) triggerRegistrationResult(c *conn, m *wire.Message, raw []byte) {
	if m.Error == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bindings[m.ID]
	if b == nil {
		return
	}
	tt := e.triggerTypes[b.triggerType]
	if tt == nil || tt.provider != c {
		e.log.Warn("triggerregistrationresult ignored: sender does not provide the trigger type",
			"id", m.ID, "trigger_type", b.triggerType, "worker_id", c.id)
		return
	}
	b.parked = true
	e.log.Info("trigger provider refused a binding; parked until the type is registered again",
		"id", b.id, "trigger_type", b.triggerType, "code", m.Error.Code, "message", m.Error.Message)
	b.owner.send(raw)
}

// dropTriggersLocked removes what a finished connection owned: its bindings
// (telling their providers) and the trigger types it provided (their
// bindings fall back to the engine or are parked). Callers hold e.mu.
func (e *Engine) dropTriggersLocked(c *conn) {
	for _, b := range e.bindings {
		if b.owner == c {
			e.removeBindingLocked(b)
		}
	}
	for id, list := range e.standbyTypes {
		list = slices.DeleteFunc(list, func(s *triggerType) bool { return s.provider == c })
		if len(list) == 0 {
			delete(e.standbyTypes, id)
		} else {
			e.standbyTypes[id] = list
		}
	}
	for id, tt := range e.triggerTypes {
		if tt.provider == c {
			e.removeTypeLocked(id)
		}
	}
}
