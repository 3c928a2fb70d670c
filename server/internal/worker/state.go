package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/registry"
)

// stateStore reaches the engine's state::* functions, each call bounded by the
// configured state timeout, like upstream's state.rs wrappers.
type stateStore struct {
	client  *iii.Client
	timeout time.Duration
	// local lists a scope in-process (Options.ListState), or is nil.
	local func(scope string) ([]json.RawMessage, error)
}

func (s stateStore) call(ctx context.Context, fn string, payload any) (json.RawMessage, error) {
	if payload == nil {
		payload = struct{}{} // sent as {}, like an absent payload
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode the %s payload: %w", fn, err)
	}
	return s.trigger(ctx, fn, data)
}

func (s stateStore) trigger(ctx context.Context, fn string, data json.RawMessage) (json.RawMessage, error) {
	return s.client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: s.timeout})
}

// get returns the stored value, or nil when the key is absent (the engine
// sends no result, or null).
func (s stateStore) get(ctx context.Context, scope, key string) (json.RawMessage, error) {
	out, err := s.call(ctx, iii.StateGet, map[string]string{"scope": scope, "key": key})
	if err != nil {
		return nil, err
	}
	if isNull(out) {
		return nil, nil
	}
	return out, nil
}

func (s stateStore) set(ctx context.Context, scope, key string, value any) error {
	_, err := s.call(ctx, iii.StateSet, map[string]any{"scope": scope, "key": key, "value": value})
	return err
}

// setSkill stores a skill row. It writes the payload directly: encoding a
// map through reflection (and escaping the body for HTML, which serde_json
// does not do either) was a measurable part of every registration.
func (s stateStore) setSkill(ctx context.Context, scope string, row registry.StoredSkill) error {
	_, err := s.trigger(ctx, iii.StateSet, skillSetPayload(scope, row))
	return err
}

// setRaw stores value (valid JSON) under scope/key through state::set.
func (s stateStore) setRaw(ctx context.Context, scope, key string, value json.RawMessage) error {
	b := make([]byte, 0, len(value)+len(scope)+len(key)+32)
	b = append(b, `{"scope":`...)
	b = wire.AppendJSONString(b, scope)
	b = append(b, `,"key":`...)
	b = wire.AppendJSONString(b, key)
	b = append(b, `,"value":`...)
	b = append(b, value...)
	_, err := s.trigger(ctx, iii.StateSet, append(b, '}'))
	return err
}

// skillSetPayload is the state::set input {scope, key, value} storing row.
func skillSetPayload(scope string, row registry.StoredSkill) json.RawMessage {
	b := make([]byte, 0, len(row.Skill)+len(row.Skill)/16+len(scope)+2*len(row.ID)+96)
	b = append(b, `{"scope":`...)
	b = wire.AppendJSONString(b, scope)
	b = append(b, `,"key":`...)
	b = wire.AppendJSONString(b, row.ID)
	b = append(b, `,"value":`...)
	b = appendSkillRow(b, row)
	return append(b, '}')
}

// appendSkillRow appends row as JSON: registry.StoredSkill's keys, in its
// field order.
func appendSkillRow(b []byte, row registry.StoredSkill) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, row.ID)
	b = append(b, `,"registered_at":`...)
	b = wire.AppendJSONString(b, row.RegisteredAt)
	b = append(b, `,"skill":`...)
	b = wire.AppendJSONString(b, row.Skill)
	return append(b, '}')
}

// delete removes key and returns the previous value (nil when there was none).
func (s stateStore) delete(ctx context.Context, scope, key string) (json.RawMessage, error) {
	out, err := s.call(ctx, iii.StateDelete, map[string]string{"scope": scope, "key": key})
	if err != nil {
		return nil, err
	}
	if isNull(out) {
		return nil, nil
	}
	return out, nil
}

// list returns every value of scope. Like upstream's extract_state_entries it
// accepts a flat array, {items:[{value}]} or {value:[…]}; anything else is an
// empty scope.
func (s stateStore) list(ctx context.Context, scope string) ([]json.RawMessage, error) {
	if s.local != nil {
		vals, err := s.local(scope)
		if err != nil {
			return nil, fmt.Errorf("state::list %s: %w", scope, err)
		}
		return vals, nil
	}
	out, err := s.call(ctx, iii.StateList, map[string]string{"scope": scope})
	if err != nil {
		return nil, err
	}
	return extractStateEntries(out), nil
}

func extractStateEntries(raw json.RawMessage) []json.RawMessage {
	var flat []json.RawMessage
	if json.Unmarshal(raw, &flat) == nil {
		return flat
	}
	var wrapped struct {
		Items []struct {
			Value json.RawMessage `json:"value"`
		} `json:"items"`
		Value []json.RawMessage `json:"value"`
	}
	if json.Unmarshal(raw, &wrapped) != nil {
		return nil
	}
	if wrapped.Items != nil {
		out := make([]json.RawMessage, 0, len(wrapped.Items))
		for _, it := range wrapped.Items {
			out = append(out, it.Value)
		}
		return out
	}
	return wrapped.Value
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// sdkError renders an iii client error the way upstream's Rust SDK
// displays it, because upstream messages embed that text ("trigger x:
// remote error (function_not_found): Function x not found").
var sdkError = iii.RustDisplay
