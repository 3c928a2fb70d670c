package history

import (
	"context"
	"encoding/json"

	"github.com/iii-skills/skills/server/internal/kv"
)

// sharedStore is a store that other registry instances share (as engine
// state on one Redis is), with atomic updates (state::update).
type sharedStore struct{ kv.Store }

func (sharedStore) Shared() bool { return true }

func (s sharedStore) Update(ctx context.Context, scope, key string, ops ...kv.Op) (json.RawMessage, error) {
	return s.Store.(kv.Updater).Update(ctx, scope, key, ops...)
}

// countingStore counts commits.
type countingStore struct {
	kv.Store
	commits int
}

func (c *countingStore) Commit(ctx context.Context, writes ...kv.Write) ([]bool, error) {
	c.commits++
	return c.Store.Commit(ctx, writes...)
}
