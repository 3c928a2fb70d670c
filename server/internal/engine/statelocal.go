package engine

import (
	"encoding/json"
	"fmt"

	"github.com/iii-skills/skills/server/internal/store"
)

// ListState returns every value of a state scope in insertion order,
// exactly what state::list answers, read straight from the store.
//
// It is for a worker in the same process (the standalone registry's cold
// load): the whole scope then crosses no frame, so it is not encoded to
// JSON, framed, decoded and split again (with 10 000 skills of 2 KiB that
// is five transient copies of ~25 MiB each).
func (e *Engine) ListState(scope string) ([]json.RawMessage, error) {
	return e.store.List(scope)
}

// StateStore is the store behind state::*, for a worker in the same
// process that keeps data of its own there (the registry's history): its
// writes join the engine's group commit without crossing a frame. They
// fire no state triggers.
func (e *Engine) StateStore() *store.Store { return e.store }

// SetStateWith is state::set of scope/key = value made by the connection
// of worker writerID, with extra records committed in the same store
// transaction: the write and its extras become durable together (one
// fsync) or not at all. value's state triggers fire exactly as for
// state::set (after the commit, in commit order, skip_own_writes leaving
// out writerID's own bindings); the extras fire none, like StateStore's
// writes. value and the extras must be valid JSON and are handed over.
//
// It is for the registry worker in the same process: a registration that
// records a version stores the served row and its history at once,
// instead of a state::set frame plus history writes that meet in two
// group commits.
func (e *Engine) SetStateWith(writerID, scope, key string, value json.RawMessage, extra []store.Write) error {
	e.mu.RLock()
	writer := e.conns[writerID]
	e.mu.RUnlock()
	writes := make([]store.Write, 0, 1+len(extra))
	writes = append(writes, store.Write{Scope: scope, Key: key, Value: value})
	writes = append(writes, extra...)
	done := make(chan error, 1)
	e.store.SetGroupAsync(writes, func(olds []json.RawMessage, err error) {
		if err == nil {
			e.fireState(writer, scope, key, olds[0], value, olds[0] != nil, false)
		}
		done <- err
	})
	if err := <-done; err != nil {
		return fmt.Errorf("state::set %s/%s: %w", scope, key, err)
	}
	return nil
}
