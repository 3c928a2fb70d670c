package history

import (
	"context"

	"github.com/iii-skills/skills/server/internal/kv"
)

// sharedStore is a store that other registry instances share (as engine
// state on one Redis is).
type sharedStore struct{ kv.Store }

func (sharedStore) Shared() bool { return true }

// countingStore counts commits.
type countingStore struct {
	kv.Store
	commits int
}

func (c *countingStore) Commit(ctx context.Context, writes ...kv.Write) ([]bool, error) {
	c.commits++
	return c.Store.Commit(ctx, writes...)
}
