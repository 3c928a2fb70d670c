package worker

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/registry"
)

// The registry's two scopes in package cluster: skills and prompts, each
// applied by re-reading one key and re-listed whole when changes were
// missed. Other parts of the server add theirs (AddClusterScope).

// SharesState reports whether other registry instances may share this
// one's state (false on the embedded engine of --standalone).
func (w *Worker) SharesState() bool { return w.state.Shared() }

// AddClusterScope adds a scope of another part of the server (the Skills
// Protocol's shared bundles) to what this instance keeps coherent. Call it
// before Register.
func (w *Worker) AddClusterScope(name string, s cluster.Scope) { w.cl.Add(name, s) }

// Announce tells the other registry instances that key of a scope added
// with AddClusterScope changed (nothing on a single node).
func (w *Worker) Announce(ctx context.Context, scope, key string) {
	w.cl.Announce(ctx, scope, cluster.OpSet, key)
}

// Cluster is the instance's coherence with others sharing its state.
func (w *Worker) Cluster() cluster.Cluster { return w.cl }

// promptDigests holds a digest of each stored prompt row, so a change
// that arrives twice (a message and a re-list) is announced once.
type promptDigests struct {
	mu sync.Mutex
	m  map[string][sha256.Size]byte
}

// changed records prompt row p (nil: absent) for name and reports whether
// it differs from the one held. Rows are compared decoded, since engines
// may store a value with its keys in another order.
func (d *promptDigests) changed(name string, p *registry.StoredPrompt) bool {
	var sum [sha256.Size]byte
	if p != nil {
		canon, _ := json.Marshal(p) // plain strings and slices: never fails
		sum = sha256.Sum256(canon)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string][sha256.Size]byte{}
	}
	old, had := d.m[name]
	if p == nil {
		delete(d.m, name)
		return had
	}
	d.m[name] = sum
	return !had || old != sum
}

// keepOnly forgets every name not in seen and returns them.
func (d *promptDigests) keepOnly(seen map[string]bool) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var gone []string
	for name := range d.m {
		if !seen[name] {
			gone = append(gone, name)
			delete(d.m, name)
		}
	}
	return gone
}

// storedPromptOf decodes a prompts row; nil when absent or undecodable
// (which reads treat as absent).
func storedPromptOf(raw json.RawMessage) *registry.StoredPrompt {
	if raw == nil {
		return nil
	}
	p, err := registry.DecodeStoredPrompt(raw)
	if err != nil {
		return nil
	}
	return &p
}

// skillsScope is the skills scope in package cluster.
type skillsScope struct{ w *Worker }

// Apply re-reads skill id and brings the catalog and the history summary
// in step, announcing what a read now serves differently.
func (s skillsScope) Apply(ctx context.Context, id string) error {
	w := s.w
	if registry.ValidateID(id) != nil {
		return cluster.ErrNotAKey
	}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	before := w.hist.skills.Served(id, w.hist.serveLabel)
	if err := w.hist.skills.Refresh(id); err != nil {
		return err
	}
	raw, ok, err := w.state.Get(ctx, w.cfg.Scopes.Skills, id)
	if err != nil {
		return fmt.Errorf("state::get %s/%s after a change on another node: %w", w.cfg.Scopes.Skills, id, sdkError(err))
	}
	changed := false
	if !ok {
		if cur, ok := w.skills.src.Get(id, ""); ok && cur != nil {
			w.skills.remove(id)
			w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpUnregister, ID: id})
			return nil
		}
	} else if row, err := registry.DecodeStoredSkill(raw); err == nil && row.ID == id {
		changed = w.skills.putIfChanged(row)
	}
	if !changed && w.hist.skills.Served(id, w.hist.serveLabel) != before {
		w.index.Store(nil) // a label move: the index lists what is served
		changed = true
	}
	if changed {
		w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpRegister, ID: id})
	}
	return nil
}

// Relist lists the skills scope into the published mirror. After the
// first load (a reconnect, or changes that were missed) it also re-reads
// history and announces what differs from before.
func (s skillsScope) Relist(ctx context.Context) error {
	w := s.w
	w.loadMu.Lock()
	defer w.loadMu.Unlock()
	again := w.skillsLoaded.Load()
	var before map[string]rowMark
	if again {
		before = w.snapshotPublished()
	}
	w.skills.beginLoad()
	rows, err := w.state.List(ctx, w.cfg.Scopes.Skills)
	if err != nil {
		w.skills.abortLoad()
		return sdkError(err)
	}
	w.skills.load(rows)
	if again {
		w.hist.skills.Reload()
		w.index.Store(nil)
		w.announceDiff(ctx, before, w.snapshotPublished())
	}
	w.skillsLoaded.Store(true)
	return nil
}

// promptsScope is the prompts scope in package cluster.
type promptsScope struct{ w *Worker }

// Apply re-reads prompt name (prompts are read from state on every call:
// only history and the announcement need it).
func (s promptsScope) Apply(ctx context.Context, name string) error {
	w := s.w
	if registry.ValidateName(name) != nil {
		return cluster.ErrNotAKey
	}
	before := w.hist.prompts.Served(name, w.hist.serveLabel)
	if err := w.hist.prompts.Refresh(name); err != nil {
		return err
	}
	raw, _, err := w.state.Get(ctx, w.cfg.Scopes.Prompts, name)
	if err != nil {
		return fmt.Errorf("state::get %s/%s after a change on another node: %w", w.cfg.Scopes.Prompts, name, sdkError(err))
	}
	row := storedPromptOf(raw)
	changed := w.prompts.changed(name, row)
	switch {
	case row == nil && changed:
		w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpUnregister, Name: name})
	case changed || w.hist.prompts.Served(name, w.hist.serveLabel) != before:
		w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpRegister, Name: name})
	}
	return nil
}

// Relist re-lists the prompts scope into the digests, announcing
// differences after the first load, then (once) settles history against
// what is served.
func (s promptsScope) Relist(ctx context.Context) error {
	w := s.w
	again := w.promptsLoaded.Load()
	rows, err := w.state.List(ctx, w.cfg.Scopes.Prompts)
	if err != nil {
		return sdkError(err)
	}
	seen := make(map[string]bool, len(rows))
	for _, raw := range rows {
		p := storedPromptOf(raw)
		if p == nil || p.Name == "" {
			continue
		}
		seen[p.Name] = true
		if w.prompts.changed(p.Name, p) && again {
			w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpRegister, Name: p.Name})
		}
	}
	gone := w.prompts.keepOnly(seen)
	if again {
		for _, name := range gone {
			w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpUnregister, Name: name})
		}
		w.hist.prompts.Reload()
	}
	w.promptsLoaded.Store(true)
	if w.skillsLoaded.Load() {
		w.repairHistory(w.ctx())
	}
	return nil
}

// snapshotPublished marks the published rows the catalog holds, by id.
func (w *Worker) snapshotPublished() map[string]rowMark {
	entries := w.skills.src.Entries()
	out := make(map[string]rowMark, len(entries))
	for _, e := range entries {
		out[e.ID] = markOf(e)
	}
	return out
}

// announceDiff fires on-change for every id whose row differs between two
// snapshots of the published source.
func (w *Worker) announceDiff(ctx context.Context, before, after map[string]rowMark) {
	for id, row := range after {
		if old, ok := before[id]; !ok || old != row {
			w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpRegister, ID: id})
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpUnregister, ID: id})
		}
	}
}

// reloadSkills re-lists the skills scope until it succeeds or ctx ends
// (after a state event whose key could not be read: the mirror may be
// behind state, and reads are served from state meanwhile).
func (w *Worker) reloadSkills(ctx context.Context) {
	delay := 500 * time.Millisecond
	for {
		err := skillsScope{w}.Relist(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		w.log.Warn("skills index not reloaded yet; serving reads from state", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}
