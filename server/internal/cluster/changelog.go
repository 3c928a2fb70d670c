package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/iii-skills/skills/server/internal/kv"
)

// The change log: beside the generation counter, each bump writes which
// key it was for, in a ring of logSize entries (state scope
// Options.GenerationScope, keys "change-<n mod logSize>", {n, scope, key}).
// Pub/sub may lose a message (an engine reconnecting to Redis, a node
// restarting); the reconcile then reads the entries of the generations it
// has not applied and re-reads their keys alone, as a message would have
// made it do. Only a gap the ring no longer covers (more than logSize
// changes missed, or entries overwritten or never written) re-lists, and
// those stay limited to one per MinRelistInterval.
//
// An entry is a hint like a message: its key is re-read, never trusted,
// and a forger with state access can only make an instance re-read keys,
// one per generation it bumps.

// logSize is how many changes the ring remembers.
const logSize = 256

type logEntry struct {
	N     int64  `json:"n"`
	Scope string `json:"scope"`
	Key   string `json:"key"`
	At    int64  `json:"at,omitempty"` // when it was announced (Unix nanoseconds)
}

func logKey(gen int64) string { return "change-" + strconv.FormatInt(gen%logSize, 10) }

// record writes the log entry of generation gen.
func (n *node) record(ctx context.Context, gen int64, scope, key string, at int64) error {
	return kv.Put(ctx, n.st, n.generationScope(), logKey(gen), logEntry{N: gen, Scope: scope, Key: key, At: at})
}

// catchUp applies the changes after what this instance applied up to gen
// from the change log. It reports false when the log cannot close the gap
// (too far behind, an entry missing, overwritten or naming a scope nobody
// holds here): then only a re-list can.
func (n *node) catchUp(ctx context.Context, gen int64) (bool, error) {
	applied, known := n.gen.appliedUpTo()
	if !known || gen < applied || gen-applied > logSize {
		return false, nil
	}
	for m := applied + 1; m <= gen; m++ {
		if n.gen.credited(m - 1) {
			continue // its message arrived and was applied
		}
		raw, ok, err := n.st.Get(ctx, n.generationScope(), logKey(m))
		if err != nil {
			return false, fmt.Errorf("read the change log at %d: %w", m, err)
		}
		var e logEntry
		if !ok || json.Unmarshal(raw, &e) != nil || e.N != m || len(e.Key) > maxKeyBytes {
			return false, nil
		}
		s, ok := n.scopes.byName[e.Scope]
		if !ok {
			return false, nil
		}
		if err := s.Apply(ctx, e.Key); err != nil {
			return false, nil
		}
		n.applied.Add(1)
		n.lagged(e.At)
		n.gen.credit(m-1, m)
	}
	return n.gen.upToDate(gen), nil
}
