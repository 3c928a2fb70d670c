package history

import (
	"encoding/json"

	"github.com/iii-skills/skills/server/internal/store"
)

// StoreBackend keeps history straight in a store.Store: the standalone
// process passes its engine's store, so history writes join the engine's
// group commit without crossing the worker protocol.
func StoreBackend(s *store.Store) Backend { return storeBackend{s} }

type storeBackend struct{ s *store.Store }

func (b storeBackend) Get(scope, key string) (json.RawMessage, bool, error) {
	return b.s.Get(scope, key)
}

// Set hands value over without a second validation and copy (history
// builds every value itself and never touches it again).
func (b storeBackend) Set(scope, key string, value json.RawMessage) error {
	done := make(chan error, 1)
	b.s.SetAsyncOwned(scope, key, value, func(_ json.RawMessage, err error) { done <- err })
	return <-done
}

func (b storeBackend) Delete(scope, key string) error {
	_, _, err := b.s.Delete(scope, key)
	return err
}

func (b storeBackend) List(scope string) ([]json.RawMessage, error) { return b.s.List(scope) }

// DropMapped releases the store's mapped pages after a pass that read
// many rows (the start-up repair), so they do not stay resident.
func (b storeBackend) DropMapped() { b.s.DropMapped() }
