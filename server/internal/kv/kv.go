package kv

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/iii-skills/skills/server/internal/store"
)

// Write is one key of a Commit: Value stored under Scope/Key, or the key
// removed when Delete is set. Values must be valid JSON and are handed
// over (never changed afterwards).
type Write = store.Write

// Store is durable key/value state.
type Store interface {
	// Get returns the value under scope/key; ok is false when there is none.
	Get(ctx context.Context, scope, key string) (value json.RawMessage, ok bool, err error)
	// List returns every value of scope, in insertion order.
	List(ctx context.Context, scope string) ([]json.RawMessage, error)
	// Commit stores every write and returns once all are durable,
	// reporting for each whether its key held a value before. The writes
	// are one transaction where the backend has them (Local, Engine);
	// over iii they are sent at once and may land separately.
	Commit(ctx context.Context, writes ...Write) (existed []bool, err error)
	// Shared reports whether other registry instances read and write the
	// same state (engines sharing one Redis): they then announce their
	// writes to each other (package cluster), keep what they serve in
	// memory rather than reading it back per request, and draw history
	// keys from ranges of their own.
	Shared() bool
}

// Put stores v, encoded as JSON, under scope/key.
func Put(ctx context.Context, s Store, scope, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store %s/%s: encode: %w", scope, key, err)
	}
	_, err = s.Commit(ctx, Write{Scope: scope, Key: key, Value: raw})
	return err
}

// Delete removes scope/key and reports whether it held a value.
func Delete(ctx context.Context, s Store, scope, key string) (bool, error) {
	existed, err := s.Commit(ctx, Write{Scope: scope, Key: key, Delete: true})
	if err != nil {
		return false, err
	}
	return existed[0], nil
}

// local is a Store over a store.Store of this process.
type local struct{ st *store.Store }

// Local is a Store over st, a store this process owns and nobody shares
// (store.Open of a file in the data folder, or store.OpenMemory in tests).
// Its writes fire no engine events. The caller closes st.
func Local(st *store.Store) Store { return local{st} }

func (s local) Get(_ context.Context, scope, key string) (json.RawMessage, bool, error) {
	return s.st.Get(scope, key)
}

func (s local) List(_ context.Context, scope string) ([]json.RawMessage, error) {
	return s.st.List(scope)
}

func (s local) Commit(_ context.Context, writes ...Write) ([]bool, error) {
	type result struct {
		olds []json.RawMessage
		err  error
	}
	done := make(chan result, 1)
	s.st.SetGroupAsync(writes, func(olds []json.RawMessage, err error) { done <- result{olds, err} })
	r := <-done
	if r.err != nil {
		return nil, r.err
	}
	return existedOf(r.olds), nil
}

func (local) Shared() bool { return false }

func existedOf(olds []json.RawMessage) []bool {
	out := make([]bool, len(olds))
	for i, o := range olds {
		out[i] = o != nil
	}
	return out
}

// DropMapped releases the store's mapped pages after a pass that read
// many rows (the registry's start-up repair), so they do not stay resident.
func (s local) DropMapped() { s.st.DropMapped() }
