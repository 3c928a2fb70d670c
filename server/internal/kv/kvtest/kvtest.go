// Package kvtest has what tests of kv users share: a Store that fails on
// demand.
package kvtest

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/iii-skills/skills/server/internal/kv"
)

// ErrDown is what a Flaky store answers while it is down.
var ErrDown = errors.New("kvtest: store down")

// Flaky wraps a Table; while Down is set every call fails with ErrDown.
// Writes counts the Sets and Deletes that went through.
type Flaky struct {
	kv.Table
	Down   atomic.Bool
	Writes atomic.Int64
}

func (f *Flaky) Get(ctx context.Context, key string) (json.RawMessage, bool, error) {
	if f.Down.Load() {
		return nil, false, ErrDown
	}
	return f.Table.Get(ctx, key)
}

func (f *Flaky) Set(ctx context.Context, key string, value json.RawMessage) error {
	if f.Down.Load() {
		return ErrDown
	}
	f.Writes.Add(1)
	return f.Table.Set(ctx, key, value)
}

func (f *Flaky) Delete(ctx context.Context, key string) error {
	if f.Down.Load() {
		return ErrDown
	}
	f.Writes.Add(1)
	return f.Table.Delete(ctx, key)
}

func (f *Flaky) List(ctx context.Context, prefix string) ([]kv.Row, error) {
	if f.Down.Load() {
		return nil, ErrDown
	}
	return f.Table.List(ctx, prefix)
}
