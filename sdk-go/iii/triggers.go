package iii

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/iii-skills/skills/sdk-go/wire"
)

type triggerEntry struct {
	seq   uint64
	typ   string
	frame []byte
}

func (e *triggerEntry) order() uint64 { return e.seq }

// RegisterTrigger binds functionID to the trigger type triggerType under the
// binding id (the official Go SDK's signature). config is the binding's raw
// JSON configuration (nil is sent as {}); the optional metadata (at most one)
// is delivered to the function on every fire. The binding is sent now if
// connected and replayed on every reconnect; registering an id again replaces
// that binding; UnregisterTrigger(id) removes it. The engine only answers on
// failure; failures are logged.
func (c *Client) RegisterTrigger(id, triggerType, functionID string, config json.RawMessage, metadata ...json.RawMessage) error {
	switch {
	case id == "":
		return fmt.Errorf("iii: register trigger of type %q: id is empty (want a binding id, e.g. a UUID)", triggerType)
	case triggerType == "":
		return fmt.Errorf("iii: register trigger %q: trigger type is empty", id)
	case functionID == "":
		return fmt.Errorf("iii: register trigger %q of type %q: function id is empty", id, triggerType)
	case len(metadata) > 1:
		return fmt.Errorf("iii: register trigger %q: want at most one metadata argument, got %d", id, len(metadata))
	}
	if len(config) == 0 {
		config = json.RawMessage("{}")
	} else if !json.Valid(config) {
		return fmt.Errorf("iii: register trigger %q: config is not valid JSON: %.64q", id, config)
	}
	var meta json.RawMessage
	if len(metadata) == 1 && len(metadata[0]) > 0 {
		if meta = metadata[0]; !json.Valid(meta) {
			return fmt.Errorf("iii: register trigger %q: metadata is not valid JSON: %.64q", id, meta)
		}
	}
	e := &triggerEntry{typ: triggerType, frame: wire.EncodeMessage(&wire.Message{Type: wire.TypeRegisterTrigger, ID: id,
		TriggerType: triggerType, FunctionID: functionID, Config: config, Metadata: meta})}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return c.stopErr
	}
	c.seq++
	e.seq = c.seq
	c.triggers[id] = e
	if c.conn != nil {
		c.conn.send(e.frame)
	}
	return nil
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
		c.conn.send(wire.EncodeMessage(&wire.Message{Type: wire.TypeUnregisterTrigger, ID: id, TriggerType: e.typ}))
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
	m := wire.Message{Type: wire.TypeRegisterTriggerType, ID: id, Description: description}
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
	e := &triggerTypeEntry{handler: h, frame: wire.EncodeMessage(&m),
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
		c.conn.send(wire.EncodeMessage(&wire.Message{Type: wire.TypeUnregisterTriggerType, ID: r.id}))
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

// Fire calls the function of every current binding with data (raw JSON, as
// in TriggerRequest.Data) as a void invocation carrying the binding's
// metadata and namespace (the way iii providers fire their triggers). It
// returns the joined errors of the calls that could not be sent or queued.
func (r *TriggerTypeRef) Fire(ctx context.Context, data json.RawMessage) error {
	var errs []error
	for _, b := range r.Bindings() {
		if err := r.c.FireTrigger(ctx, b, data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FireJSON is Fire with payload encoded as JSON: what a provider of change
// events (fire and forget) calls. A nil ref fires nothing.
func (r *TriggerTypeRef) FireJSON(ctx context.Context, payload any) error {
	if r == nil {
		return nil
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode the %s payload: %w", r.ID(), err)
	}
	return r.Fire(ctx, data)
}

// FireTrigger fires one binding: a void invocation of cfg.FunctionID with
// data (raw JSON), cfg.Metadata and cfg.Namespace, naming the binding
// (TriggerRequest.TriggerID) so that our engine runs it as whoever
// registered the binding.
func (c *Client) FireTrigger(ctx context.Context, cfg TriggerConfig, data json.RawMessage) error {
	req := TriggerRequest{FunctionID: cfg.FunctionID, Data: data, Action: VoidAction(), Namespace: cfg.Namespace, TriggerID: cfg.ID}
	if len(cfg.Metadata) > 0 && string(cfg.Metadata) != "null" {
		req.Metadata = cfg.Metadata
	}
	_, err := c.Trigger(ctx, req)
	return err
}

func (c *Client) handleRegisterTrigger(cn *wsConn, m wire.Message) {
	cfg := TriggerConfig{ID: m.ID, FunctionID: m.FunctionID, Config: m.Config, Metadata: m.Metadata, Namespace: m.Namespace}
	c.mu.Lock()
	e := c.triggerTypes[m.TriggerType]
	c.mu.Unlock()

	reply := wire.Message{Type: wire.TypeTriggerRegistrationResult, ID: m.ID, TriggerType: m.TriggerType, FunctionID: m.FunctionID}
	if e == nil {
		reply.Error = &wire.ErrorBody{Code: wire.CodeTriggerTypeNotFound, Message: "Trigger type not found"}
	} else if err := safeTriggerCall(func() error { return e.handler.RegisterTrigger(cn.ctx, cfg) }); err != nil {
		reply.Error = &wire.ErrorBody{Code: wire.CodeTriggerRegistration, Message: err.Error()}
		c.mu.Lock()
		delete(e.bindings, m.ID)
		c.mu.Unlock()
		c.log.Warn("iii: trigger handler refused a binding", "trigger_type", m.TriggerType, "trigger_id", m.ID, "error", err)
	} else {
		c.mu.Lock()
		e.bindings[m.ID] = cfg
		c.mu.Unlock()
	}
	cn.send(wire.EncodeMessage(&reply))
}

func (c *Client) handleUnregisterTrigger(cn *wsConn, m wire.Message) {
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
