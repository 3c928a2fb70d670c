package core

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/published"
	"github.com/iii-skills/skills/server/internal/registry"
)

// The registry's two scopes in package cluster: skills and prompts, each
// applied by re-reading one key and re-listed whole when changes were
// missed. Other parts of the server add theirs (Local.Cluster().Add).

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
type skillsScope struct{ l *Local }

// Apply re-reads skill id and brings the catalog and the history summary
// in step, announcing what a read now serves differently.
func (s skillsScope) Apply(ctx context.Context, id string) error {
	l := s.l
	if registry.ValidateID(id) != nil {
		return cluster.ErrNotAKey
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	before := l.hist.skills.Served(id, l.hist.serveLabel)
	marks := l.marksOf(KindSkill, id)
	if err := l.hist.skills.Refresh(id); err != nil {
		return err
	}
	defer l.announceMarks(KindSkill, id, marks)
	raw, ok, err := l.state.Get(ctx, l.cfg.Scopes.Skills, id)
	if err != nil {
		return fmt.Errorf("%s %s/%s after a change on another node: %w", iii.StateGet, l.cfg.Scopes.Skills, id, sdkError(err))
	}
	changed := false
	if !ok {
		if _, ok := l.skills.Row(id); ok {
			l.skills.Remove(id)
			l.skillChanged(registry.OpUnregister, id)
			return nil
		}
	} else if row, err := registry.DecodeStoredSkill(raw); err == nil && row.ID == id {
		prev, had := l.skills.Row(id)
		put := l.skills.PutIfChanged(row)
		// A row that is the same, served differently (a yank), is
		// announced as the yank below.
		changed = put && (!had || prev.RegisteredAt != row.RegisteredAt || prev.Skill != row.Skill)
	}
	marksChanged := l.marksOf(KindSkill, id) != marks
	if !changed && l.hist.skills.Served(id, l.hist.serveLabel) != before {
		// A label move or a yank: rebuild what the mirror serves.
		l.hist.skills.Locked(id, func() { l.skills.Repin(id) })
		l.index.Store(nil) // the index lists what is served
		changed = !marksChanged
	}
	if changed {
		l.skillChanged(registry.OpRegister, id)
	}
	return nil
}

// Relist lists the skills scope into the published mirror. After the
// first load (a reconnect, or changes that were missed) it also re-reads
// history and announces what differs from before.
func (s skillsScope) Relist(ctx context.Context) error {
	l := s.l
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	again := l.skillsLoaded.Load()
	var before map[string]published.Mark
	if again {
		before = l.skills.Snapshot()
	}
	l.skills.BeginLoad()
	rows, err := l.state.List(ctx, l.cfg.Scopes.Skills)
	if err != nil {
		l.skills.AbortLoad()
		return sdkError(err)
	}
	l.skills.Load(rows)
	if again {
		l.hist.skills.Reload()
		l.index.Store(nil)
		l.announceDiff(before, l.skills.Snapshot())
	}
	l.skillsLoaded.Store(true)
	return nil
}

// promptsScope is the prompts scope in package cluster.
type promptsScope struct{ l *Local }

// Apply re-reads prompt name (prompts are read from state on every call:
// only history and the announcement need it).
func (s promptsScope) Apply(ctx context.Context, name string) error {
	l := s.l
	if registry.ValidateName(name) != nil {
		return cluster.ErrNotAKey
	}
	before := l.hist.prompts.Served(name, l.hist.serveLabel)
	marks := l.marksOf(KindPrompt, name)
	if err := l.hist.prompts.Refresh(name); err != nil {
		return err
	}
	defer l.announceMarks(KindPrompt, name, marks)
	raw, _, err := l.state.Get(ctx, l.cfg.Scopes.Prompts, name)
	if err != nil {
		return fmt.Errorf("%s %s/%s after a change on another node: %w", iii.StateGet, l.cfg.Scopes.Prompts, name, sdkError(err))
	}
	row := storedPromptOf(raw)
	if row != nil {
		l.reach.Expect(row.FunctionID)
	}
	changed := l.prompts.changed(name, row)
	switch {
	case row == nil && changed:
		l.promptChanged(registry.OpUnregister, name)
	case changed || l.hist.prompts.Served(name, l.hist.serveLabel) != before:
		l.promptChanged(registry.OpRegister, name)
	}
	return nil
}

// Relist re-lists the prompts scope into the digests, announcing
// differences after the first load, then (once) settles history against
// what is served.
func (s promptsScope) Relist(ctx context.Context) error {
	l := s.l
	again := l.promptsLoaded.Load()
	rows, err := l.state.List(ctx, l.cfg.Scopes.Prompts)
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
		if l.prompts.changed(p.Name, p) && again {
			l.promptChanged(registry.OpRegister, p.Name)
		}
	}
	gone := l.prompts.keepOnly(seen)
	if again {
		for _, name := range gone {
			l.promptChanged(registry.OpUnregister, name)
		}
		l.hist.prompts.Reload()
	}
	l.promptsLoaded.Store(true)
	if l.skillsLoaded.Load() {
		l.repairHistory(l.ctx())
	}
	return nil
}

// marks are an id's yanks and deprecation as history holds them.
type marks struct {
	yanks            int
	key, deprecation string
}

func (l *Local) marksOf(k Kind, id string) marks {
	n, key, dep := l.histOf(k).Marks(id)
	return marks{n, key, dep}
}

// announceMarks announces a yank, unyank or deprecation another instance
// made (its head was re-read since before was taken).
func (l *Local) announceMarks(k Kind, id string, before marks) {
	after := l.marksOf(k, id)
	if after.deprecation != before.deprecation {
		l.announce(k, registry.OpDeprecate, id)
	}
	if after.key != before.key {
		op := registry.OpYank
		if after.yanks < before.yanks {
			op = registry.OpUnyank
		}
		l.announce(k, op, id)
	}
}

// announceDiff fires on-change for every id whose row differs between two
// snapshots of the published source.
func (l *Local) announceDiff(before, after map[string]published.Mark) {
	for id, row := range after {
		if old, ok := before[id]; !ok || old != row {
			l.skillChanged(registry.OpRegister, id)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			l.skillChanged(registry.OpUnregister, id)
		}
	}
}

// reloadSkills re-lists the skills scope until it succeeds or ctx ends
// (after a state event whose key could not be read: the mirror may be
// behind state, and reads are served from state meanwhile).
func (l *Local) reloadSkills(ctx context.Context) {
	delay := 500 * time.Millisecond
	for {
		err := skillsScope{l}.Relist(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		l.log.Warn("skills index not reloaded yet; serving reads from state", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}
