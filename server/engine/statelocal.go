package engine

import (
	"encoding/json"

	"github.com/iii-skills/skills/server/store"
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
