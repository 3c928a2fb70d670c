// Package kv is the small key/value interface that usage counts and
// webhook deliveries are kept in: JSON rows under string keys, read one at
// a time or listed by key prefix. The server adapts it to the state it
// keeps (the embedded engine's store, or engine state shared by several
// nodes); this package has an in-memory implementation for tests and a
// single process, and one over a scope of server/internal/store.
//
// Each package that uses a Store keeps its rows apart by giving its keys a
// prefix of its own, or by getting a Store of its own (a scope).
package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/iii-skills/skills/server/internal/store"
)

// Store holds JSON rows under string keys. Implementations are safe for
// concurrent use; a Set or Delete that returns nil is durable as far as the
// implementation is (a store-backed one: fsync'd).
type Store interface {
	// Get returns the row under key; ok is false when there is none.
	Get(ctx context.Context, key string) (value json.RawMessage, ok bool, err error)
	// Set stores value (valid JSON) under key.
	Set(ctx context.Context, key string, value json.RawMessage) error
	// Delete removes key; removing a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every row whose key starts with prefix ("" for all),
	// sorted by key.
	List(ctx context.Context, prefix string) ([]Row, error)
}

// Row is one key and its value.
type Row struct {
	Key   string
	Value json.RawMessage
}

// Memory is a Store in a map: nothing survives the process.
type Memory struct {
	mu   sync.RWMutex
	rows map[string]json.RawMessage
}

// NewMemory returns an empty in-memory Store.
func NewMemory() *Memory { return &Memory{rows: make(map[string]json.RawMessage)} }

func (m *Memory) Get(_ context.Context, key string) (json.RawMessage, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.rows[key]
	return slices.Clone(v), ok, nil
}

func (m *Memory) Set(_ context.Context, key string, value json.RawMessage) error {
	if !json.Valid(value) {
		return fmt.Errorf("kv: value for %q is not valid JSON", key)
	}
	m.mu.Lock()
	m.rows[key] = slices.Clone(value)
	m.mu.Unlock()
	return nil
}

func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	delete(m.rows, key)
	m.mu.Unlock()
	return nil
}

func (m *Memory) List(_ context.Context, prefix string) ([]Row, error) {
	m.mu.RLock()
	out := make([]Row, 0, len(m.rows))
	for k, v := range m.rows {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Row{Key: k, Value: slices.Clone(v)})
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Len is how many rows there are.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.rows)
}

// OnStore is a Store over one scope of a server/internal/store Store: rows
// are durable when Set returns. List reads the scope's keys and then each
// row (a key deleted in between is left out).
func OnStore(s *store.Store, scope string) Store { return scoped{s: s, scope: scope} }

type scoped struct {
	s     *store.Store
	scope string
}

func (s scoped) Get(_ context.Context, key string) (json.RawMessage, bool, error) {
	return s.s.Get(s.scope, key)
}

func (s scoped) Set(_ context.Context, key string, value json.RawMessage) error {
	_, err := s.s.Set(s.scope, key, value)
	return err
}

func (s scoped) Delete(_ context.Context, key string) error {
	_, _, err := s.s.Delete(s.scope, key)
	return err
}

func (s scoped) List(_ context.Context, prefix string) ([]Row, error) {
	keys, err := s.s.Keys(s.scope)
	if err != nil {
		return nil, err
	}
	var out []Row
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		v, ok, err := s.s.Get(s.scope, k)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Row{Key: k, Value: v})
		}
	}
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
