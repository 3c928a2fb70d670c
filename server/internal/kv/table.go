package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Table is one state scope seen as rows under string keys, listed by key
// prefix: for packages that keep many small rows of their own (usage
// counts, webhook deliveries) in the same Store as everything else.
type Table interface {
	// Get returns the row under key; ok is false when there is none.
	Get(ctx context.Context, key string) (value json.RawMessage, ok bool, err error)
	// Set stores value (valid JSON) under key, durable when it returns.
	Set(ctx context.Context, key string, value json.RawMessage) error
	// Delete removes key; removing a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every row whose key starts with prefix ("" for all),
	// sorted by key.
	List(ctx context.Context, prefix string) ([]Row, error)
}

// Row is one key of a Table and its value.
type Row struct {
	Key   string
	Value json.RawMessage
}

// TableOf is the Table of scope in s. Each row is stored as {"key": k,
// "value": v}: a Store lists a scope's values only (state::list answers
// no keys), so a row carries its key. List reads the whole scope.
func TableOf(s Store, scope string) Table { return table{s: s, scope: scope} }

type table struct {
	s     Store
	scope string
}

type envelope struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func (t table) Get(ctx context.Context, key string) (json.RawMessage, bool, error) {
	raw, ok, err := t.s.Get(ctx, t.scope, key)
	if err != nil || !ok {
		return nil, false, err
	}
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil || e.Key != key {
		return nil, false, fmt.Errorf("state %s/%s is not a row of this table: %s", t.scope, key, clip(raw))
	}
	return e.Value, true, nil
}

func (t table) Set(ctx context.Context, key string, value json.RawMessage) error {
	if !json.Valid(value) {
		return fmt.Errorf("kv: value for %q is not valid JSON", key)
	}
	return Put(ctx, t.s, t.scope, key, envelope{Key: key, Value: value})
}

func (t table) Delete(ctx context.Context, key string) error {
	_, err := Delete(ctx, t.s, t.scope, key)
	return err
}

func (t table) List(ctx context.Context, prefix string) ([]Row, error) {
	raws, err := t.s.List(ctx, t.scope)
	if err != nil {
		return nil, err
	}
	var out []Row
	for _, raw := range raws {
		var e envelope
		if json.Unmarshal(raw, &e) != nil || e.Key == "" {
			continue // not a row of this table
		}
		if strings.HasPrefix(e.Key, prefix) {
			out = append(out, Row{Key: e.Key, Value: e.Value})
		}
	}
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func clip(v []byte) string {
	if len(v) > 64 {
		return string(v[:64]) + "…"
	}
	return string(v)
}

// MemoryTable is a Table in a map, for unit tests: nothing survives the
// process.
type MemoryTable struct {
	mu   sync.RWMutex
	rows map[string]json.RawMessage
}

// NewMemoryTable returns an empty MemoryTable.
func NewMemoryTable() *MemoryTable { return &MemoryTable{rows: map[string]json.RawMessage{}} }

func (m *MemoryTable) Get(_ context.Context, key string) (json.RawMessage, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.rows[key]
	return slices.Clone(v), ok, nil
}

func (m *MemoryTable) Set(_ context.Context, key string, value json.RawMessage) error {
	if !json.Valid(value) {
		return fmt.Errorf("kv: value for %q is not valid JSON", key)
	}
	m.mu.Lock()
	m.rows[key] = slices.Clone(value)
	m.mu.Unlock()
	return nil
}

func (m *MemoryTable) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	delete(m.rows, key)
	m.mu.Unlock()
	return nil
}

func (m *MemoryTable) List(_ context.Context, prefix string) ([]Row, error) {
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
func (m *MemoryTable) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.rows)
}
