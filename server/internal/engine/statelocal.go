package engine

import (
	"encoding/json"
	"fmt"

	"github.com/iii-skills/skills/server/internal/store"
)

// StateStore is the store behind state::*, for a worker in the same
// process: its reads cross no frame (a cold load of a large registry is
// not encoded to JSON, framed, decoded and split again). Writes go through
// CommitState, which fires the state triggers a state::set would.
func (e *Engine) StateStore() *store.Store { return e.store }

// CommitState stores writes (removing every Delete) in one store
// transaction, made by the connection of worker writerID: they become
// durable together (one fsync) or not at all, and the call returns once
// they are. Each write then fires the state triggers its state::set or
// state::delete would (after the commit, in commit order, skip_own_writes
// leaving out writerID's own bindings). It returns the previous value of
// each write (nil: the key held none). Values must be valid JSON and are
// handed over.
//
// It is the registry's own state path in the standalone process: a
// registration that records a version stores the served row and its
// history at once, instead of a state::set frame plus history writes that
// meet in two group commits.
func (e *Engine) CommitState(writerID string, writes []store.Write) ([]json.RawMessage, error) {
	e.mu.RLock()
	writer := e.conns[writerID]
	e.mu.RUnlock()
	type result struct {
		olds []json.RawMessage
		err  error
	}
	done := make(chan result, 1)
	e.store.SetGroupAsync(writes, func(olds []json.RawMessage, err error) {
		if err == nil {
			for i, w := range writes {
				if w.Delete {
					if olds[i] != nil {
						e.fireState(writer, w.Scope, w.Key, olds[i], nil, true, true)
					}
					continue
				}
				e.fireState(writer, w.Scope, w.Key, olds[i], w.Value, olds[i] != nil, false)
			}
		}
		done <- result{olds, err}
	})
	r := <-done
	if r.err != nil {
		if len(writes) == 1 {
			return nil, fmt.Errorf("state %s/%s: %w", writes[0].Scope, writes[0].Key, r.err)
		}
		return nil, fmt.Errorf("state (%d writes, %s/%s first): %w", len(writes), writes[0].Scope, writes[0].Key, r.err)
	}
	return r.olds, nil
}
