package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/jsonargs"
	"github.com/iii-skills/skills/server/internal/store"
)

// The state trigger type (docs/reference/engine-protocol.md §5.5) and its event names.
const (
	stateTriggerType        = "state"
	stateTriggerDescription = "State change trigger: fires on " + iii.StateSet + ", " + iii.StateUpdate + " and " + iii.StateDelete
	stateWorkerName         = "iii-state"
	eventCreated            = "state:created"
	eventUpdated            = "state:updated"
	eventDeleted            = "state:deleted"
)

// State error codes (docs/reference/engine-protocol.md §3.3).
const (
	codeSetError        = "SET_ERROR"
	codeGetError        = "GET_ERROR"
	codeDeleteError     = "DELETE_ERROR"
	codeUpdateError     = "UPDATE_ERROR"
	codeListError       = "LIST_ERROR"
	codeListGroupsError = "LIST_GROUPS_ERROR"
)

func (e *Engine) stateBuiltins() []*builtin {
	return []*builtin{
		{id: iii.StateSet, description: "Store a JSON value under scope/key; returns the previous and the new value",
			request: schemaStateSetInput, response: schemaStateSetResult, async: e.stateSet},
		{id: iii.StateGet, description: "Read the value stored under scope/key (no result when absent)",
			request: schemaScopeKey, response: schemaAny, call: e.stateGet},
		{id: iii.StateDelete, description: "Delete scope/key; returns the deleted value (no result when absent)",
			request: schemaScopeKey, response: schemaAny, async: e.stateDelete},
		{id: iii.StateUpdate, description: "Apply update operations (set, merge, increment, decrement, append, remove) to scope/key atomically",
			request: schemaStateUpdateInput, response: schemaStateUpdateResult, async: e.stateUpdate},
		{id: iii.StateList, description: "List the values of a scope in insertion order",
			request: schemaScope, response: schemaStateListResult, call: e.stateList},
		{id: iii.StateListGroups, description: "List the scopes that hold values",
			request: schemaEmptyInput, response: schemaStateListGroupsResult, call: e.stateListGroups},
	}
}

// stateInput is the input of every state function; each uses a subset.
// It is decoded in one pass (no intermediate map): this is the hot path.
type stateInput struct {
	Scope *string         `json:"scope"`
	Key   *string         `json:"key"`
	Value json.RawMessage `json:"value"`
	Data  json.RawMessage `json:"data"` // alias of value
	Ops   json.RawMessage `json:"ops"`
}

const stateExample = `{"scope":"skills","key":"my-skill"}`

// decodeState decodes a state function's input and checks that scope (and
// key, when needKey) are present, naming what is missing or wrong.
func decodeState(fn string, data json.RawMessage, needKey bool) (*stateInput, *wire.ErrorBody) {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return nil, decodeErr(jsonargs.NotObject(fn, stateExample, d))
	}
	in, ok := scanState(d)
	if !ok {
		in = &stateInput{}
		if err := json.Unmarshal(d, in); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				var fields map[string]json.RawMessage
				_ = json.Unmarshal(d, &fields)
				return nil, decodeErr(jsonargs.WrongType(fn, te.Field, "a string", fields[te.Field]))
			}
			return nil, decodeErr(jsonargs.NotObject(fn, stateExample, d))
		}
	}
	if in.Scope == nil {
		return nil, decodeErr(jsonargs.Missing(fn, "scope", "a string"))
	}
	if needKey && in.Key == nil {
		return nil, decodeErr(jsonargs.Missing(fn, "key", "a string"))
	}
	return in, nil
}

// scanState is decodeState's one-pass path for the usual input: valid JSON
// whose keys are exactly the fields' names and whose scope and key are
// strings without escapes. It checks the input once and points into it
// (frames are owned by whoever handles them), where json.Unmarshal checks
// it, scans it again to decode and copies every value. ok is false for
// anything else; json.Unmarshal then decodes it (case-insensitive keys
// included) and names what is wrong.
func scanState(d []byte) (*stateInput, bool) {
	if !wire.Valid(d) {
		return nil, false
	}
	in := &stateInput{}
	str := func(dst **string, v []byte) bool {
		if string(v) == "null" {
			*dst = nil
			return true
		}
		s, ok := wire.PlainString(v)
		*dst = &s
		return ok && utf8.ValidString(s) // encoding/json replaces invalid UTF-8
	}
	ok := wire.ScanObject(d, func(key, v []byte) bool {
		switch string(key) {
		case "scope":
			return str(&in.Scope, v)
		case "key":
			return str(&in.Key, v)
		case "value":
			in.Value = v
		case "data":
			in.Data = v
		case "ops":
			in.Ops = v
		default:
			// encoding/json matches keys case-insensitively.
			for _, f := range stateFields {
				if bytes.EqualFold(key, []byte(f)) {
					return false
				}
			}
		}
		return true
	})
	return in, ok
}

// stateFields are the keys of stateInput.
var stateFields = [...]string{"scope", "key", "value", "data", "ops"}

// storeErr maps a store error to an error body: validation problems are
// the caller's fault (deserialization_error), the rest use code.
func storeErr(fn, code string, err error) *wire.ErrorBody {
	if errors.Is(err, store.ErrInvalid) {
		return &wire.ErrorBody{Code: wire.CodeDeserializationError, Message: fmt.Sprintf("%s: %v", fn, err)}
	}
	return &wire.ErrorBody{Code: code, Message: fmt.Sprintf("%s: %v", fn, err)}
}

func compact(v json.RawMessage) json.RawMessage {
	// Clients send compact JSON; compacting a 2 KiB value that already is
	// compact costs a full scan.
	if !wire.HasSpace(v) {
		return v
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return v
	}
	return buf.Bytes()
}

func (e *Engine) stateSet(c *conn, data json.RawMessage, done asyncDone) {
	const fn = iii.StateSet
	in, errb := decodeState(fn, data, true)
	if errb != nil {
		done(nil, errb)
		return
	}
	if errb := e.privateScope(c, fn, *in.Scope); errb != nil {
		done(nil, errb)
		return
	}
	value := in.Value
	if value == nil {
		value = in.Data // alias accepted by the real engine
	}
	if value == nil {
		done(nil, decodeErr(jsonargs.Missing(fn, "value", "any JSON value; data is accepted as an alias")))
		return
	}
	value = compact(value)
	scope, key := *in.Scope, *in.Key
	// decodeState checked the input (and with it value) once; value points
	// into this frame, which nothing else holds.
	e.store.SetAsyncOwned(scope, key, value, func(old json.RawMessage, err error) {
		if err != nil {
			done(nil, storeErr(fn, codeSetError, err))
			return
		}
		e.fireState(c, scope, key, old, value, old != nil, false)
		done(setResult(old, value), nil)
	})
}

// setResult renders {"old_value": old|null, "new_value": new}.
func setResult(old, nv json.RawMessage) json.RawMessage {
	if old == nil {
		old = jsonNull
	}
	if nv == nil {
		nv = jsonNull
	}
	b := make([]byte, 0, len(old)+len(nv)+30)
	b = append(b, `{"old_value":`...)
	b = append(b, old...)
	b = append(b, `,"new_value":`...)
	b = append(b, nv...)
	return append(b, '}')
}

func (e *Engine) stateGet(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	in, errb := decodeState(iii.StateGet, data, true)
	if errb != nil {
		return nil, errb
	}
	v, ok, err := e.store.Get(*in.Scope, *in.Key)
	if err != nil {
		return nil, storeErr(iii.StateGet, codeGetError, err)
	}
	if !ok {
		return nil, nil // no "result" key
	}
	return v, nil
}

func (e *Engine) stateDelete(c *conn, data json.RawMessage, done asyncDone) {
	const fn = iii.StateDelete
	in, errb := decodeState(fn, data, true)
	if errb != nil {
		done(nil, errb)
		return
	}
	if errb := e.privateScope(c, fn, *in.Scope); errb != nil {
		done(nil, errb)
		return
	}
	scope, key := *in.Scope, *in.Key
	if scope == "" || key == "" {
		done(nil, nil) // nothing can be stored there
		return
	}
	e.store.DeleteAsync(scope, key, func(old json.RawMessage, existed bool, err error) {
		switch {
		case err != nil:
			done(nil, storeErr(fn, codeDeleteError, err))
		case !existed:
			done(nil, nil)
		default:
			e.fireState(c, scope, key, old, nil, true, true)
			done(old, nil)
		}
	})
}

func (e *Engine) stateList(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	const fn = iii.StateList
	in, errb := decodeState(fn, data, false)
	if errb != nil {
		return nil, errb
	}
	vals, err := e.store.List(*in.Scope)
	if err != nil {
		return nil, storeErr(fn, codeListError, err)
	}
	n := 2
	for _, v := range vals {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']'), nil
}

func (e *Engine) stateListGroups(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	if _, errb := parseArgs(iii.StateListGroups, data, false, `{}`); errb != nil {
		return nil, errb
	}
	groups, err := e.store.ListGroups()
	if err != nil {
		return nil, storeErr(iii.StateListGroups, codeListGroupsError, err)
	}
	return mustJSON(map[string][]string{"groups": groups}), nil
}

func (e *Engine) stateUpdate(c *conn, data json.RawMessage, done asyncDone) {
	const fn = iii.StateUpdate
	in, errb := decodeState(fn, data, true)
	if errb != nil {
		done(nil, errb)
		return
	}
	if errb := e.privateScope(c, fn, *in.Scope); errb != nil {
		done(nil, errb)
		return
	}
	if len(in.Ops) == 0 || bytes.Equal(in.Ops, jsonNull) {
		done(nil, decodeErr(jsonargs.Missing(fn, "ops", "an array of update operations")))
		return
	}
	var ops []updateOp
	if err := json.Unmarshal(in.Ops, &ops); err != nil {
		done(nil, decodeErr(jsonargs.WrongType(fn, "ops", "an array of {type, path?, value?, by?} objects", in.Ops)))
		return
	}
	scope, key := *in.Scope, *in.Key
	var opErrs []opError // written by the update function, read by the callback (same goroutine)
	e.store.UpdateAsync(scope, key, func(old json.RawMessage, _ bool) (json.RawMessage, error) {
		out, errs, err := applyOps(old, ops)
		opErrs = errs
		return out, err
	}, func(old, nv json.RawMessage, existed bool, err error) {
		if err != nil {
			done(nil, storeErr(fn, codeUpdateError, err))
			return
		}
		if !bytes.Equal(old, nv) || !existed {
			e.fireState(c, scope, key, old, nv, existed, false)
		}
		done(mustJSON(struct {
			OldValue json.RawMessage `json:"old_value"`
			NewValue json.RawMessage `json:"new_value"`
			Errors   []opError       `json:"errors,omitempty"`
		}{orNull(old), orNull(nv), opErrs}), nil)
	})
}

func orNull(v json.RawMessage) json.RawMessage {
	if v == nil {
		return jsonNull
	}
	return v
}

// ---- state trigger ----

// stateFilter is the parsed config of a state binding.
type stateFilter struct {
	Scope               string `json:"scope"`
	Key                 string `json:"key"`
	ConditionFunctionID string `json:"condition_function_id"`
	// SkipOwnWrites (config key "skip_own_writes", ours; the real engine
	// ignores it) leaves out the writes made over the binding's own
	// connection: a worker that mirrors a scope already applied them and
	// would pay a round trip per write to throw the echo away.
	SkipOwnWrites bool `json:"skip_own_writes"`
}

func parseStateFilter(cfg json.RawMessage) (*stateFilter, error) {
	f := &stateFilter{}
	c := bytes.TrimSpace(cfg)
	if len(c) == 0 || bytes.Equal(c, jsonNull) {
		return f, nil
	}
	if c[0] != '{' {
		return nil, fmt.Errorf("state trigger config must be an object {scope?, key?, condition_function_id?, skip_own_writes?}, got %s", jsonargs.Kind(c))
	}
	if err := json.Unmarshal(c, f); err != nil {
		return nil, fmt.Errorf("state trigger config must be an object {scope?, key?, condition_function_id?, skip_own_writes?} of strings (skip_own_writes a boolean): %v", err)
	}
	return f, nil
}

type stateTarget struct {
	bindingID  string
	functionID string
	metadata   json.RawMessage
	condition  string
	owner      *conn // the binding's registrant: the fire runs as it
}

// fireState delivers a state event to the matching state bindings, each
// through its own FIFO queue (see fireBuiltin). It runs after the write is
// durable, in commit order, so every binding sees a key's changes in order.
// writer is the connection that made the write (nil for the engine's own).
func (e *Engine) fireState(writer *conn, scope, key string, old, nv json.RawMessage, existed, deleted bool) {
	e.mu.RLock()
	if e.builtinBinds[stateTriggerType] == 0 {
		e.mu.RUnlock()
		return
	}
	var targets []stateTarget
	for _, b := range e.bindings {
		if !b.onBuiltin || b.state == nil {
			continue
		}
		if (b.state.Scope != "" && b.state.Scope != scope) || (b.state.Key != "" && b.state.Key != key) {
			continue
		}
		if b.state.SkipOwnWrites && writer != nil && b.owner == writer {
			continue
		}
		targets = append(targets, stateTarget{bindingID: b.id, functionID: b.functionID, metadata: b.metadata,
			condition: b.state.ConditionFunctionID, owner: b.owner})
	}
	e.mu.RUnlock()
	if len(targets) == 0 {
		return
	}
	event := eventUpdated
	switch {
	case deleted:
		event = eventDeleted
	case !existed:
		event = eventCreated
	}
	payload := mustJSON(struct {
		Type      string          `json:"type"`
		EventType string          `json:"event_type"`
		Scope     string          `json:"scope"`
		Key       string          `json:"key"`
		OldValue  json.RawMessage `json:"old_value"`
		NewValue  json.RawMessage `json:"new_value"`
	}{"state", event, scope, key, orNull(old), orNull(nv)})
	for _, t := range targets {
		e.queues.push(bindingQueue(t.bindingID), job{fn: func() {
			if t.condition != "" {
				out := e.invokeAs(e.ctx, t.owner, t.condition, payload, t.metadata)
				if out.err != nil {
					e.log.Warn("state trigger condition failed; target skipped", "condition_function_id", t.condition,
						"code", out.err.Code, "message", out.err.Message)
					return
				}
				if bytes.Equal(bytes.TrimSpace(out.result), []byte("false")) {
					return
				}
			}
			if out := e.invokeAs(e.ctx, t.owner, t.functionID, payload, t.metadata); out.err != nil {
				e.log.Warn("state trigger target failed", "function_id", t.functionID,
					"code", out.err.Code, "message", out.err.Message)
			}
		}})
	}
}

// privateScope refuses a write to one of Config.PrivateScopes from a
// socket connection: only the in-process worker (the registry, which
// keeps its immutable versions and labels there) and the engine itself
// write them. Reads stay open to everyone.
func (e *Engine) privateScope(c *conn, fn, scope string) *wire.ErrorBody {
	if c == nil || c.local || !slices.Contains(e.cfg.PrivateScopes, scope) {
		return nil
	}
	e.log.Warn("state write refused: private scope", "function_id", fn, "scope", scope, "worker_id", c.id, "remote", c.remoteIP)
	return &wire.ErrorBody{Code: rules.CodeForbidden, Message: fmt.Sprintf(
		"forbidden: %s: scope %q is private to the registry running inside this engine (its version history); only the registry writes it. %s and %s still read it",
		fn, scope, iii.StateGet, iii.StateList)}
}
