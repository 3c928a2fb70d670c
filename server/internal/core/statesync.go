package core

import (
	"context"
	"fmt"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/registry"
)

// SyncKey brings the registry in step with key of the skills scope after
// a write made straight into state by someone else (an operator cleaning
// up, another registry worker, a test harness): the engine's `state`
// trigger tells of it (package worker binds it). Other scopes are ignored.
//
// Events of one key may arrive in any order: the engine delivers each
// trigger invocation on its own (the real iii engine spawns one task per
// invocation). Applying an event's new_value could therefore resurrect a
// row: the `state:created` event of a register (a 256 KiB body is slow to
// encode and decode) lands after the `state:deleted` event of a direct
// state::delete that followed it, and the mirror lists a skill that state
// no longer has. So an event only says which key changed: the key is
// re-read from state, with events serialized, and the last re-read wins.
// It runs after the last write's event arrived, so it sees that write.
func (l *Local) SyncKey(ctx context.Context, scope, key string) error {
	if scope != l.cfg.Scopes.Skills {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	raw, ok, err := l.state.Get(ctx, scope, key)
	if err != nil {
		// The mirror may now be behind state: serve from state until a reload.
		l.skills.Invalidate()
		go l.reloadSkills(l.ctx())
		return fmt.Errorf("%s %s/%s after a state event: %w", iii.StateGet, scope, key, sdkError(err))
	}
	// A write this engine saw and the mirror did not hold yet came from
	// outside the registry (an echo of its own writes changes nothing):
	// the other registry instances hear of it from here.
	if !ok {
		if l.skills.Remove(key) {
			l.cl.Announce(ctx, scope, cluster.OpDelete, key)
		}
		return nil
	}
	row, err := registry.DecodeStoredSkill(raw)
	if err != nil || row.ID != key {
		if l.skills.Remove(key) { // upstream would not list an undecodable row
			l.cl.Announce(ctx, scope, cluster.OpDelete, key)
		}
		return nil
	}
	if !l.skills.PutIfChanged(row) {
		// The echo of a write the registry made (here, or applied from
		// another instance): history has it. Recording it again could
		// make a version of a body a newer register on another node has
		// already replaced.
		return nil
	}
	defer l.cl.Announce(ctx, scope, cluster.OpSet, key) // after the history repair below
	// A body written straight into state becomes a version too.
	// State is re-read under the id's history lock: a registration that
	// landed after this event's read is not undone by its older body.
	// A body a version already holds is not new content: on state other
	// instances share it is a served row caught between two registers of
	// the id on two nodes (each sets the row to its own version, then to
	// the newest), which must not become a version again.
	if err := l.hist.skills.Repair(row.ID, "recorded from a direct state write", func() (string, bool) {
		raw, ok, err := l.state.Get(ctx, scope, key)
		if err != nil || !ok {
			return "", false
		}
		cur, err := registry.DecodeStoredSkill(raw)
		if err != nil || l.hist.skills.HasContent(row.ID, cur.Skill) {
			return "", false
		}
		// This instance's summaries may lag a version another node just
		// recorded: ask the head in state too.
		if held, err := l.hist.skills.HasStoredContent(row.ID, cur.Skill); err != nil || held {
			return "", false
		}
		return cur.Skill, true
	}); err != nil {
		l.log.Warn("skill history: recording a direct state write failed", "id", row.ID, "err", err)
	}
	return nil
}
