package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/invoke"
)

// iiiStore is the engine's state::* functions, called through an iii client.
type iiiStore struct{ engine invoke.Caller }

// III is a Store over the state::* functions of the engine client is
// connected to, each call bounded by timeout (the registry's
// state_timeout_ms, like upstream's state wrappers). The state may be
// shared with other registry instances (engines on one Redis): Shared is
// true. Errors read the way upstream's Rust SDK displays them
// (iii.RustDisplay), because upstream messages embed that text.
func III(client *iii.Client, timeout time.Duration) Store {
	return iiiStore{engine: invoke.Caller{Client: client, Timeout: timeout}}
}

func (iiiStore) Shared() bool { return true }

func (s iiiStore) call(ctx context.Context, fn string, payload []byte) (json.RawMessage, error) {
	var out json.RawMessage
	if err := s.engine.Call(ctx, fn, json.RawMessage(payload), &out); err != nil {
		return nil, iii.RustDisplay(err)
	}
	return out, nil
}

// payload is {"scope":…,"key":…} (without key when key is ""), then
// "value": value when value is set.
func payload(scope, key string, value json.RawMessage) []byte {
	b := make([]byte, 0, len(scope)+len(key)+len(value)+32)
	b = append(b, `{"scope":`...)
	b = wire.AppendJSONString(b, scope)
	if key != "" {
		b = append(b, `,"key":`...)
		b = wire.AppendJSONString(b, key)
	}
	if value != nil {
		b = append(b, `,"value":`...)
		b = append(b, value...)
	}
	return append(b, '}')
}

// Get returns the stored value; the engine answers a missing key with no
// result, or null.
func (s iiiStore) Get(ctx context.Context, scope, key string) (json.RawMessage, bool, error) {
	out, err := s.call(ctx, iii.StateGet, payload(scope, key, nil))
	if err != nil || isNull(out) {
		return nil, false, err
	}
	return out, true, nil
}

// List accepts what upstream's extract_state_entries does: a flat array,
// {items:[{value}]} or {value:[…]}; anything else is an empty scope.
func (s iiiStore) List(ctx context.Context, scope string) ([]json.RawMessage, error) {
	out, err := s.call(ctx, iii.StateList, payload(scope, "", nil))
	if err != nil {
		return nil, err
	}
	return stateEntries(out), nil
}

// Commit sends every write at once (our engine then puts them in one
// group commit; another engine stores them one by one).
func (s iiiStore) Commit(ctx context.Context, writes ...Write) ([]bool, error) {
	existed := make([]bool, len(writes))
	if len(writes) == 1 {
		var err error
		existed[0], err = s.write(ctx, writes[0])
		if err != nil {
			return nil, err
		}
		return existed, nil
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			existed[i], errs[i] = s.write(ctx, w)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return existed, nil
}

// write is one state::set ({old_value, new_value}) or state::delete (the
// old value, or nothing).
func (s iiiStore) write(ctx context.Context, w Write) (bool, error) {
	if w.Delete {
		out, err := s.call(ctx, iii.StateDelete, payload(w.Scope, w.Key, nil))
		return err == nil && !isNull(out), err
	}
	out, err := s.call(ctx, iii.StateSet, payload(w.Scope, w.Key, w.Value))
	if err != nil {
		return false, err
	}
	existed := false
	wire.ScanObject(out, func(key, value []byte) bool {
		if string(key) == "old_value" {
			existed = !isNull(value)
			return false
		}
		return true
	})
	return existed, nil
}

func stateEntries(raw json.RawMessage) []json.RawMessage {
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

func isNull(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}
