package kv

import (
	"context"

	"github.com/iii-skills/skills/server/internal/engine"
)

// engineStore is the embedded engine's state, reached in-process.
type engineStore struct {
	local
	eng    *engine.Engine
	writer func() string
}

// Engine is a Store over the state of eng, the embedded engine of this
// process (nobody else shares it). Reads go straight to its store; a
// Commit is one store transaction (group commit, fsync before it returns)
// made as the connection of worker writer() (the registry's client), so
// every write fires the state triggers a state::set from that connection
// would, skip_own_writes included.
func Engine(eng *engine.Engine, writer func() string) Store {
	return engineStore{local: local{eng.StateStore()}, eng: eng, writer: writer}
}

func (s engineStore) Commit(_ context.Context, writes ...Write) ([]bool, error) {
	olds, err := s.eng.CommitState(s.writer(), writes)
	if err != nil {
		return nil, err
	}
	return existedOf(olds), nil
}
