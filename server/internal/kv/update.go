package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// Op is one operation of an atomic Update of a JSON object value, on one
// of its top-level fields: the subset of state::update that every engine
// applies the same way (the real engine's Redis script reaches only
// top-level fields with set, remove and increment; merge goes one level
// down). Values should hold no number above 2^53 (Redis re-encodes the
// whole value through Lua's cjson, which keeps 14 significant digits):
// write large numbers as strings.
type Op struct {
	// Type is OpSet, OpRemove, OpIncrement or OpMerge.
	Type string
	// Field is the top-level field the operation changes.
	Field string
	// Value is the JSON set, or the object merged into Field's object.
	Value json.RawMessage
	// By is what OpIncrement adds.
	By int64
}

// The operations of Op.
const (
	OpSet       = "set"
	OpRemove    = "remove"
	OpIncrement = "increment"
	OpMerge     = "merge"
)

// Updater is a Store that applies operations to one value atomically
// (state::update: on engines sharing Redis one script, so writers on other
// nodes cannot interleave with it). Update returns the value after the
// operations; a missing key starts as {}.
type Updater interface {
	Update(ctx context.Context, scope, key string, ops ...Op) (json.RawMessage, error)
}

// appendOps renders ops as state::update takes them.
func appendOps(b []byte, ops []Op) []byte {
	b = append(b, '[')
	for i, op := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = wire.AppendJSONString(b, op.Type)
		if op.Type == OpMerge {
			b = append(b, `,"path":[`...)
			b = wire.AppendJSONString(b, op.Field)
			b = append(b, ']')
		} else {
			b = append(b, `,"path":`...)
			b = wire.AppendJSONString(b, op.Field)
		}
		switch op.Type {
		case OpSet, OpMerge:
			b = append(b, `,"value":`...)
			b = append(b, op.Value...)
		case OpIncrement:
			b = append(b, `,"by":`...)
			b = strconv.AppendInt(b, op.By, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// Update is one state::update; an operation the engine reports as not
// applied is an error (the others were applied).
func (s iiiStore) Update(ctx context.Context, scope, key string, ops ...Op) (json.RawMessage, error) {
	b := payload(scope, key, nil)
	b = append(b[:len(b)-1], `,"ops":`...)
	b = append(appendOps(b, ops), '}')
	out, err := s.call(ctx, iii.StateUpdate, b)
	if err != nil {
		return nil, err
	}
	var res struct {
		NewValue json.RawMessage `json:"new_value"`
		Errors   []struct {
			OpIndex int    `json:"op_index"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("%s %s/%s answered %s: %w", iii.StateUpdate, scope, key, clipped(out), err)
	}
	if len(res.Errors) > 0 {
		msgs := make([]string, len(res.Errors))
		for i, e := range res.Errors {
			msgs[i] = fmt.Sprintf("op %d (%s): %s", e.OpIndex, e.Code, e.Message)
		}
		return nil, fmt.Errorf("%s %s/%s: %s", iii.StateUpdate, scope, key, strings.Join(msgs, "; "))
	}
	return res.NewValue, nil
}

func clipped(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// Update applies ops in one store transaction. It fires no engine events:
// it is for stores of this process (tests of code written for shared
// state); the registry uses Update only on shared state.
func (s local) Update(_ context.Context, scope, key string, ops ...Op) (json.RawMessage, error) {
	type result struct {
		v   json.RawMessage
		err error
	}
	done := make(chan result, 1)
	s.st.UpdateAsync(scope, key, func(old json.RawMessage, _ bool) (json.RawMessage, error) {
		return ApplyOps(old, ops)
	}, func(_, nv json.RawMessage, _ bool, err error) { done <- result{nv, err} })
	r := <-done
	return r.v, r.err
}

var _ Updater = local{}
var _ Updater = iiiStore{}

// ApplyOps applies ops to old (nil: absent, read as {}) as state::update
// does, and returns the new value.
func ApplyOps(old json.RawMessage, ops []Op) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(old)) > 0 && !bytes.Equal(bytes.TrimSpace(old), []byte("null")) {
		if err := json.Unmarshal(old, &obj); err != nil {
			return nil, fmt.Errorf("the stored value is not a JSON object: %w", err)
		}
	}
	for i, op := range ops {
		switch op.Type {
		case OpSet:
			obj[op.Field] = op.Value
		case OpRemove:
			delete(obj, op.Field)
		case OpIncrement:
			var n int64
			if cur, ok := obj[op.Field]; ok {
				if err := json.Unmarshal(cur, &n); err != nil {
					return nil, fmt.Errorf("op %d (increment): field %q is not an integer", i, op.Field)
				}
			}
			obj[op.Field] = json.RawMessage(strconv.FormatInt(n+op.By, 10))
		case OpMerge:
			target := map[string]json.RawMessage{}
			if cur, ok := obj[op.Field]; ok && !bytes.Equal(bytes.TrimSpace(cur), []byte("null")) {
				if err := json.Unmarshal(cur, &target); err != nil {
					return nil, fmt.Errorf("op %d (merge): field %q is not an object", i, op.Field)
				}
			}
			var add map[string]json.RawMessage
			if err := json.Unmarshal(op.Value, &add); err != nil {
				return nil, fmt.Errorf("op %d (merge): the value is not an object", i)
			}
			for k, v := range add {
				target[k] = v
			}
			b, err := json.Marshal(target)
			if err != nil {
				return nil, err
			}
			obj[op.Field] = b
		default:
			return nil, fmt.Errorf("op %d: unknown type %q", i, op.Type)
		}
	}
	return json.Marshal(obj)
}
