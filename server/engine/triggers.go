package engine

import (
	"encoding/json"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// triggerType is a registered trigger type. provider is nil for the
// engine's own types (state), which are served in-process.
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
// (re)registers the type.
type binding struct {
	id          string
	triggerType string
	functionID  string
	config      json.RawMessage
	metadata    json.RawMessage
	owner       *conn
	parked      bool
	state       *stateFilter // parsed config of a state binding
}

var emptyObject = json.RawMessage("{}")

// registerTriggerFrame is the copy of a binding sent to its provider.
func registerTriggerFrame(b *binding) []byte {
	cfg := b.config
	if len(cfg) == 0 {
		cfg = emptyObject
	}
	return encode(&iii.Message{
		Type:        iii.TypeRegisterTrigger,
		ID:          b.id,
		TriggerType: b.triggerType,
		FunctionID:  b.functionID,
		Config:      cfg,
		Metadata:    b.metadata,
	})
}

func unregisterTriggerFrame(id, triggerType string) []byte {
	return encode(&iii.Message{Type: iii.TypeUnregisterTrigger, ID: id, TriggerType: triggerType})
}

func (e *Engine) registerTriggerType(c *conn, m *iii.Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur := e.triggerTypes[m.ID]; cur != nil && cur.provider == nil {
		e.log.Warn("registertriggertype refused: the engine provides this trigger type itself",
			"trigger_type", m.ID, "worker_id", c.id)
		return
	}
	e.triggerTypes[m.ID] = &triggerType{
		id:          m.ID,
		description: m.Description,
		triggerReq:  m.TriggerRequestFormat,
		callReq:     m.CallRequestFormat,
		provider:    c,
	}
	// Deliver every binding of this type, parked or live, to the new provider.
	for _, b := range e.bindings {
		if b.triggerType == m.ID {
			b.parked = false
			c.send(registerTriggerFrame(b))
		}
	}
}

// unregisterTriggerType is sent by the Node/Python SDKs (the real engine
// drops it). The provider that sent it stops providing the type; its
// bindings are parked until a provider registers the type again.
func (e *Engine) unregisterTriggerType(c *conn, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tt := e.triggerTypes[id]
	if tt == nil || tt.provider != c {
		return
	}
	delete(e.triggerTypes, id)
	for _, b := range e.bindings {
		if b.triggerType == id {
			b.parked = true
		}
	}
}

func (e *Engine) registerTrigger(c *conn, m *iii.Message) {
	b := &binding{
		id:          m.ID,
		triggerType: m.TriggerType,
		functionID:  m.FunctionID,
		config:      m.Config,
		metadata:    m.Metadata,
		owner:       c,
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev := e.bindings[b.id]; prev != nil {
		e.removeBindingLocked(prev)
	}
	tt := e.triggerTypes[b.triggerType]
	switch {
	case tt == nil:
		b.parked = true
	case tt.provider == nil: // built-in type
		if err := e.activateBuiltinBinding(b); err != nil {
			c.send(encode(&iii.Message{
				Type:        iii.TypeTriggerRegistrationResult,
				ID:          b.id,
				TriggerType: b.triggerType,
				FunctionID:  b.functionID,
				Error:       &iii.ErrorBody{Code: iii.CodeTriggerRegistration, Message: err.Error()},
			}))
			return
		}
	default:
		tt.provider.send(registerTriggerFrame(b))
	}
	e.bindings[b.id] = b
}

// activateBuiltinBinding validates a binding of an engine-provided type.
// Callers hold e.mu.
func (e *Engine) activateBuiltinBinding(b *binding) error {
	f, err := parseStateFilter(b.config)
	if err != nil {
		return err
	}
	b.state = f
	e.stateBinds++
	return nil
}

// removeBindingLocked forgets b and tells its provider. Callers hold e.mu.
func (e *Engine) removeBindingLocked(b *binding) {
	delete(e.bindings, b.id)
	if b.state != nil {
		e.stateBinds--
		return
	}
	if tt := e.triggerTypes[b.triggerType]; tt != nil && tt.provider != nil && !b.parked {
		tt.provider.send(unregisterTriggerFrame(b.id, b.triggerType))
	}
}

func (e *Engine) unregisterTrigger(c *conn, m *iii.Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bindings[m.ID]
	if b == nil {
		e.log.Debug("unregistertrigger for an unknown trigger ignored", "id", m.ID, "worker_id", c.id)
		return
	}
	e.removeBindingLocked(b)
}

// triggerRegistrationResult handles a provider's answer to a forwarded
// registertrigger: success needs nothing; an error parks the binding and is
// forwarded to the binding's owner.
func (e *Engine) triggerRegistrationResult(c *conn, m *iii.Message, raw []byte) {
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
// (telling their providers) and the trigger types it provided (parking
// their bindings). Callers hold e.mu.
func (e *Engine) dropTriggersLocked(c *conn) {
	for _, b := range e.bindings {
		if b.owner == c {
			e.removeBindingLocked(b)
		}
	}
	for id, tt := range e.triggerTypes {
		if tt.provider != c {
			continue
		}
		delete(e.triggerTypes, id)
		for _, b := range e.bindings {
			if b.triggerType == id {
				b.parked = true
			}
		}
	}
}
