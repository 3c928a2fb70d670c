package iii

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Trigger binds a function to a trigger type (registertrigger).
type Trigger struct {
	// ID identifies the binding; a random UUID when empty.
	ID string
	// Type is the trigger type, e.g. "state" or "skills::on-change".
	Type string
	// FunctionID is the function the trigger calls.
	FunctionID string
	// Config is the binding's configuration (any JSON value; nil is sent as {}).
	Config any
	// Metadata is delivered to the function on every fire (optional).
	Metadata any
}

// TriggerRef is a registered trigger binding.
type TriggerRef struct {
	c  *Client
	id string
}

// ID is the binding id.
func (r *TriggerRef) ID() string { return r.id }

// Unregister removes the binding (see Client.UnregisterTrigger).
func (r *TriggerRef) Unregister() error { return r.c.UnregisterTrigger(r.id) }

type triggerEntry struct {
	seq   uint64
	typ   string
	frame []byte
}

func (e *triggerEntry) order() uint64 { return e.seq }

// RegisterTrigger binds t.FunctionID to trigger type t.Type. The binding is
// sent now if connected and replayed on every reconnect. Registering an id
// that is already registered replaces that binding. The engine only answers
// on failure; failures are logged.
func (c *Client) RegisterTrigger(t Trigger) (*TriggerRef, error) {
	if t.Type == "" {
		return nil, errors.New("iii: register trigger: Type is empty")
	}
	if t.FunctionID == "" {
		return nil, fmt.Errorf("iii: register trigger of type %q: FunctionID is empty", t.Type)
	}
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	cfg, err := marshalOr(t.Config, json.RawMessage("{}"))
	if err != nil {
		return nil, fmt.Errorf("iii: register trigger %q: encode config: %w", t.ID, err)
	}
	meta, err := marshalOr(t.Metadata, nil)
	if err != nil {
		return nil, fmt.Errorf("iii: register trigger %q: encode metadata: %w", t.ID, err)
	}
	e := &triggerEntry{typ: t.Type, frame: EncodeMessage(&Message{Type: TypeRegisterTrigger, ID: t.ID,
		TriggerType: t.Type, FunctionID: t.FunctionID, Config: cfg, Metadata: meta})}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return nil, c.stopErr
	}
	c.seq++
	e.seq = c.seq
	c.triggers[t.ID] = e
	if c.conn != nil {
		c.conn.send(e.frame)
	}
	return &TriggerRef{c: c, id: t.ID}, nil
}

// UnregisterTrigger removes the binding id registered by this client. It
// returns an error wrapping ErrNotRegistered for an unknown id.
func (c *Client) UnregisterTrigger(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.triggers[id]
	if e == nil {
		return fmt.Errorf("iii: unregister trigger %q: %w", id, ErrNotRegistered)
	}
	delete(c.triggers, id)
	if c.conn != nil {
		c.conn.send(EncodeMessage(&Message{Type: TypeUnregisterTrigger, ID: id, TriggerType: e.typ}))
	}
	return nil
}

// TriggerConfig is one binding of a trigger type this client provides, as
// the engine delivered it.
type TriggerConfig struct {
	ID         string
	FunctionID string
	Config     json.RawMessage
	Metadata   json.RawMessage
	Namespace  string
}

// TriggerHandler is implemented by trigger-type providers. The engine calls
// RegisterTrigger for every binding of the type (possibly several times for
// the same ID: treat it as an upsert) and UnregisterTrigger when a binding
// goes away; for the latter the client fills FunctionID/Config/Metadata from
// what RegisterTrigger received. Calls for one client are serialised in
// arrival order. A returned error (or panic) is reported to the engine as
// trigger_registration_failed.
type TriggerHandler interface {
	RegisterTrigger(ctx context.Context, cfg TriggerConfig) error
	UnregisterTrigger(ctx context.Context, cfg TriggerConfig) error
}

// TriggerTypeOptions optionally describe a trigger type's JSON Schemas.
type TriggerTypeOptions struct {
	// TriggerRequestFormat is the schema of a binding's config.
	TriggerRequestFormat any
	// CallRequestFormat is the schema of the payload delivered on fire.
	CallRequestFormat any
}

// TriggerTypeRef is a trigger type this client provides.
type TriggerTypeRef struct {
	c     *Client
	id    string
	entry *triggerTypeEntry
}

type triggerTypeEntry struct {
	seq      uint64
	handler  TriggerHandler
	frame    []byte
	bindings map[string]TriggerConfig // guarded by Client.mu
}

func (e *triggerTypeEntry) order() uint64 { return e.seq }

// RegisterTriggerType makes this client the provider of trigger type id. The
// registration is sent now if connected and replayed on every reconnect. It
// fails if id is empty or already provided by this client.
func (c *Client) RegisterTriggerType(id, description string, h TriggerHandler, opts ...TriggerTypeOptions) (*TriggerTypeRef, error) {
	if id == "" {
		return nil, errors.New("iii: register trigger type: id is empty")
	}
	if h == nil {
		return nil, fmt.Errorf("iii: register trigger type %q: handler is nil", id)
	}
	m := Message{Type: TypeRegisterTriggerType, ID: id, Description: description}
	for _, o := range opts {
		var err error
		if o.TriggerRequestFormat != nil {
			if m.TriggerRequestFormat, err = marshalOr(o.TriggerRequestFormat, nil); err != nil {
				return nil, fmt.Errorf("iii: register trigger type %q: encode trigger request format: %w", id, err)
			}
		}
		if o.CallRequestFormat != nil {
			if m.CallRequestFormat, err = marshalOr(o.CallRequestFormat, nil); err != nil {
				return nil, fmt.Errorf("iii: register trigger type %q: encode call request format: %w", id, err)
			}
		}
	}
	e := &triggerTypeEntry{handler: h, frame: EncodeMessage(&m),
		bindings: map[string]TriggerConfig{}}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return nil, c.stopErr
	}
	if _, dup := c.triggerTypes[id]; dup {
		return nil, fmt.Errorf("iii: register trigger type %q: already registered on this client", id)
	}
	c.seq++
	e.seq = c.seq
	c.triggerTypes[id] = e
	if c.conn != nil {
		c.conn.send(e.frame)
	}
	return &TriggerTypeRef{c: c, id: id, entry: e}, nil
}

// ID is the trigger type id.
func (r *TriggerTypeRef) ID() string { return r.id }

// Unregister stops providing the trigger type: it is no longer replayed,
// later registertrigger frames for it are answered trigger_type_not_found,
// and an unregistertriggertype frame is sent (the engine at v0.23 drops that
// frame and keeps the type until this connection closes). Returns an error
// wrapping ErrNotRegistered if already unregistered.
func (r *TriggerTypeRef) Unregister() error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.triggerTypes[r.id] != r.entry {
		return fmt.Errorf("iii: unregister trigger type %q: %w", r.id, ErrNotRegistered)
	}
	delete(c.triggerTypes, r.id)
	if c.conn != nil {
		c.conn.send(EncodeMessage(&Message{Type: TypeUnregisterTriggerType, ID: r.id}))
	}
	return nil
}

// Bindings returns the bindings the engine currently has delivered for this
// type (successfully registered and not unregistered), sorted by id.
func (r *TriggerTypeRef) Bindings() []TriggerConfig {
	c := r.c
	c.mu.Lock()
	out := make([]TriggerConfig, 0, len(r.entry.bindings))
	for _, b := range r.entry.bindings {
		out = append(out, b)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b TriggerConfig) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Fire calls the function of every current binding with payload as a void
// invocation carrying the binding's metadata and namespace (the way iii
// providers fire their triggers). It returns the joined errors of the calls
// that could not be sent or queued.
func (r *TriggerTypeRef) Fire(ctx context.Context, payload any) error {
	var errs []error
	for _, b := range r.Bindings() {
		if err := r.c.FireTrigger(ctx, b, payload); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FireTrigger fires one binding: a void invocation of cfg.FunctionID with
// payload, cfg.Metadata and cfg.Namespace.
func (c *Client) FireTrigger(ctx context.Context, cfg TriggerConfig, payload any) error {
	req := TriggerRequest{FunctionID: cfg.FunctionID, Payload: payload, Action: VoidAction(), Namespace: cfg.Namespace}
	if len(cfg.Metadata) > 0 && string(cfg.Metadata) != "null" {
		req.Metadata = cfg.Metadata
	}
	_, err := c.Trigger(ctx, req)
	return err
}

func (c *Client) handleRegisterTrigger(cn *wsConn, m Message) {
	cfg := TriggerConfig{ID: m.ID, FunctionID: m.FunctionID, Config: m.Config, Metadata: m.Metadata, Namespace: m.Namespace}
	c.mu.Lock()
	e := c.triggerTypes[m.TriggerType]
	c.mu.Unlock()

	reply := Message{Type: TypeTriggerRegistrationResult, ID: m.ID, TriggerType: m.TriggerType, FunctionID: m.FunctionID}
	if e == nil {
		reply.Error = &ErrorBody{Code: CodeTriggerTypeNotFound, Message: "Trigger type not found"}
	} else if err := safeTriggerCall(func() error { return e.handler.RegisterTrigger(cn.ctx, cfg) }); err != nil {
		reply.Error = &ErrorBody{Code: CodeTriggerRegistration, Message: err.Error()}
		c.mu.Lock()
		delete(e.bindings, m.ID)
		c.mu.Unlock()
		c.log.Warn("iii: trigger handler refused a binding", "trigger_type", m.TriggerType, "trigger_id", m.ID, "error", err)
	} else {
		c.mu.Lock()
		e.bindings[m.ID] = cfg
		c.mu.Unlock()
	}
	cn.send(EncodeMessage(&reply))
}

func (c *Client) handleUnregisterTrigger(cn *wsConn, m Message) {
	c.mu.Lock()
	var e *triggerTypeEntry
	if m.TriggerType != "" {
		e = c.triggerTypes[m.TriggerType]
	} else {
		for _, t := range c.triggerTypes {
			if _, ok := t.bindings[m.ID]; ok {
				e = t
				break
			}
		}
	}
	var cfg TriggerConfig
	if e != nil {
		var ok bool
		if cfg, ok = e.bindings[m.ID]; !ok {
			cfg = TriggerConfig{ID: m.ID}
		}
		delete(e.bindings, m.ID)
	}
	c.mu.Unlock()
	if e == nil {
		c.log.Debug("iii: unregistertrigger for a type this client does not provide", "trigger_type", m.TriggerType, "trigger_id", m.ID)
		return
	}
	if err := safeTriggerCall(func() error { return e.handler.UnregisterTrigger(cn.ctx, cfg) }); err != nil {
		c.log.Warn("iii: trigger handler failed to unregister a binding", "trigger_type", m.TriggerType, "trigger_id", m.ID, "error", err)
	}
}

func safeTriggerCall(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}
