package worker

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Coherence across engines. Registry instances on engines that share
// state (the real engine's `redis` adapters) each keep the skills catalog
// and the history summaries in memory, and a `state` trigger fires only on
// the engine that did the write. So every mutation is also announced:
//
//  1. the write goes to state;
//  2. the generation counter (state scope <skills>.cluster, key
//     "generation", {"n": N}) is incremented atomically (state::update);
//  3. {node, scope, op, key, from, to} is published on ChangesTopic.
//
// Every instance subscribes to the topic and applies a message of another
// node by re-reading the key (never by trusting a payload that may arrive
// out of order), then fires skills::on-change / prompts::on-change to its
// own subscribers once if what it serves changed; its MCP sessions follow.
//
// Pub/sub is at-most-once. Each instance remembers the generation up to
// which it has applied every change: its own bumps and the from→to of
// every message applied advance it. A periodic reconcile reads the
// counter (one state::get, whatever the catalog's size); only when it is
// ahead of what was applied, a message was lost (or the instance was
// away) and the scopes are re-listed and diffed. Connects and reconnects
// re-list too (the cache load).
const (
	// ChangesTopic is the pubsub topic of registry mutations.
	ChangesTopic = "skills::changes"
	// DefaultReconcileInterval is how often the generation is checked.
	DefaultReconcileInterval = time.Second

	fnClusterSync  = "skills::cluster-sync"
	generationKey  = "generation"
	opSet          = "set"
	opDelete       = "delete"
	opLabel        = "label"
	generationPath = "n"
)

// ClusterScope is data kept outside the registry's own scopes that every
// registry instance must serve alike (the Skills Protocol's published
// bundles): its owner writes it to shared state and calls Announce; other
// instances get Apply for each announced key and Relist when changes were
// missed (at connect, and when the reconcile finds a gap).
type ClusterScope struct {
	Scope  string
	Apply  func(ctx context.Context, key string) error
	Relist func(ctx context.Context) error
}

// AddClusterScope adds s to what this instance keeps coherent. Call it
// before Start.
func (w *Worker) AddClusterScope(s ClusterScope) {
	if w.extraScopes == nil {
		w.extraScopes = map[string]ClusterScope{}
	}
	w.extraScopes[s.Scope] = s
}

// SharesState reports whether other registry instances may share this
// one's engine state (false on the embedded engine of --standalone).
func (w *Worker) SharesState() bool { return !w.opts.SingleNode }

// Announce tells the other registry instances that key of a ClusterScope
// changed (nothing on a single node).
func (w *Worker) Announce(ctx context.Context, scope, key string) {
	w.broadcast(ctx, scope, opSet, key)
}

// relistExtraScopes runs every ClusterScope's Relist; a failure is logged
// (the next reconcile that finds a gap tries again).
func (w *Worker) relistExtraScopes(ctx context.Context) {
	for _, s := range w.extraScopes {
		if err := s.Relist(ctx); err != nil {
			w.log.Warn("cluster: re-listing failed", "scope", s.Scope, "err", err)
		}
	}
}

// changeMessage is what a mutation publishes on ChangesTopic.
type changeMessage struct {
	Node  string `json:"node"`
	Scope string `json:"scope"`
	Op    string `json:"op"` // set, delete or label (history only)
	Key   string `json:"key"`
	// From and To are the generation before and after this change's bump
	// (both 0 when the bump failed).
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
}

// coherence is what an instance knows about the shared generation.
type coherence struct {
	node string

	mu sync.Mutex
	// known: applied is meaningful (a load read the counter).
	known   bool
	applied int64
	// hops are changes applied out of order: from → to, waiting for
	// applied to reach from.
	hops map[int64]int64
	// suspect is a generation a check found not yet applied (0: none).
	suspect int64
	// prompts holds a digest of each stored prompt row, so a change that
	// arrives twice (a message and a reconcile) is announced once.
	prompts map[string][sha256.Size]byte
	// loaded: a load filled the cache once, so later loads announce what
	// they find changed.
	loaded bool
}

func newCoherence() *coherence {
	return &coherence{node: uuid.NewString(), hops: map[int64]int64{}, prompts: map[string][sha256.Size]byte{}}
}

// advance records that the change from → to has been applied.
func (c *coherence) advance(from, to int64) {
	if to <= from {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return
	}
	c.hops[from] = to
	for {
		next, ok := c.hops[c.applied]
		if !ok {
			break
		}
		delete(c.hops, c.applied)
		c.applied = next
	}
	for f := range c.hops {
		if f < c.applied {
			delete(c.hops, f) // covered by a re-list
		}
	}
}

// upToDate reports whether every change up to gen has been applied. A
// counter behind what was applied means state was reset (a Redis that
// restarted empty): that is a difference too.
func (c *coherence) upToDate(gen int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known && c.applied == gen
}

// reset starts from gen, read before a full re-list.
func (c *coherence) reset(gen int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known, c.applied, c.suspect = ok, gen, 0
	clear(c.hops)
}

// gapPersists reports whether changes up to gen are missing and were
// already missing at the previous check (or state was reset, or nothing
// is known yet); otherwise it remembers gen for the next check.
func (c *coherence) gapPersists(gen int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.known || gen < c.applied:
		return true
	case gen == c.applied:
		c.suspect = 0
		return false
	case c.suspect != 0 && c.applied < c.suspect:
		return true
	default:
		c.suspect = gen
		return false
	}
}

func (c *coherence) forget() {
	c.mu.Lock()
	c.known = false
	c.mu.Unlock()
}

// promptChanged records prompt row p (nil: absent) for name and reports
// whether it differs from the one held. Rows are compared decoded, since
// engines may store a value with its keys in another order.
func (c *coherence) promptChanged(name string, p *registry.StoredPrompt) bool {
	var d [sha256.Size]byte
	if p != nil {
		canon, _ := json.Marshal(p) // plain strings and slices: never fails
		d = sha256.Sum256(canon)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.prompts[name]
	if p == nil {
		delete(c.prompts, name)
		return had
	}
	c.prompts[name] = d
	return !had || old != d
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

func (w *Worker) generationScope() string { return generationScope(w.cfg.Scopes) }

// readGeneration reads the shared counter (0 when it was never bumped).
func (w *Worker) readGeneration(ctx context.Context) (int64, error) {
	raw, err := w.state.get(ctx, w.generationScope(), generationKey)
	if err != nil || raw == nil {
		return 0, err
	}
	var g struct {
		N int64 `json:"n"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return 0, fmt.Errorf("state %s/%s holds %s; want {\"n\": <count>}", w.generationScope(), generationKey, clip(raw))
	}
	return g.N, nil
}

// bumpGeneration increments the shared counter and returns its value
// before and after.
func (w *Worker) bumpGeneration(ctx context.Context) (from, to int64, err error) {
	out, err := w.state.call(ctx, iii.StateUpdate, map[string]any{
		"scope": w.generationScope(), "key": generationKey,
		"ops": []map[string]any{{"type": "increment", "path": generationPath, "by": 1}},
	})
	if err != nil {
		return 0, 0, sdkError(err)
	}
	var res struct {
		Old *struct {
			N int64 `json:"n"`
		} `json:"old_value"`
		New *struct {
			N int64 `json:"n"`
		} `json:"new_value"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.New == nil {
		return 0, 0, fmt.Errorf("state::update of the generation answered %s", clip(out))
	}
	if res.Old != nil {
		from = res.Old.N
	}
	return from, res.New.N, nil
}

// broadcast announces one of this instance's mutations to the others:
// generation bump, then a publish. Failures are logged: the write is
// durable already, and the others' reconcile finds it (or, when the bump
// failed too, their next reload does).
func (w *Worker) broadcast(ctx context.Context, scope, op, key string) {
	if w.opts.SingleNode {
		return
	}
	msg := changeMessage{Node: w.coh.node, Scope: scope, Op: op, Key: key}
	from, to, err := w.bumpGeneration(ctx)
	if err != nil {
		w.log.Warn("cluster: generation bump failed; other registry instances learn of this change at their next reload",
			"scope", scope, "key", key, "err", err)
	} else {
		msg.From, msg.To = from, to
		w.coh.advance(from, to)
	}
	data, err := json.Marshal(map[string]any{"topic": ChangesTopic, "data": msg})
	if err != nil {
		return
	}
	if _, err := w.client.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.Publish, Data: data, Action: iii.VoidAction(),
		Timeout: w.cfg.StateTimeout()}); err != nil {
		w.log.Warn("cluster: publishing a change failed", "scope", scope, "key", key, "err", err)
	}
}

// registerCluster declares the subscriber function and its subscribe
// binding (replayed on every reconnect by the client).
func (w *Worker) registerCluster() error {
	_, err := w.client.RegisterFunction(fnClusterSync, w.clusterSync, iii.RegisterFunctionOptions{
		Description: "Internal: applies registry changes other registry instances publish on " + ChangesTopic + ".",
		Metadata:    iii.InternalMetadata,
	})
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(map[string]string{"topic": ChangesTopic})
	if err != nil {
		return err
	}
	return w.client.RegisterTrigger(uuid.NewString(), iii.Subscribe, fnClusterSync, cfg)
}

// clusterSync applies a change another instance published.
func (w *Worker) clusterSync(ctx context.Context, data json.RawMessage) (any, error) {
	var msg changeMessage
	if err := json.Unmarshal(data, &msg); err != nil || msg.Node == "" || msg.Key == "" {
		return nil, fmt.Errorf("%s: want {node, scope, op, key, from?, to?} from a registry instance, got %s", ChangesTopic, clip(data))
	}
	if msg.Node == w.coh.node {
		return nil, nil // applied when it was made
	}
	var err error
	switch msg.Scope {
	case w.cfg.Scopes.Skills:
		err = w.applyRemoteSkill(ctx, msg.Key)
	case w.cfg.Scopes.Prompts:
		err = w.applyRemotePrompt(ctx, msg.Key)
	default:
		s, ok := w.extraScopes[msg.Scope]
		if !ok {
			return nil, nil // another registry's scopes on the same engines
		}
		err = s.Apply(ctx, msg.Key)
	}
	if err != nil {
		// Not applied: leave the generation behind so the reconcile re-lists.
		return nil, err
	}
	w.coh.advance(msg.From, msg.To)
	return nil, nil
}

// applyRemoteSkill re-reads skill id and brings the catalog and the
// history summary in step, announcing what a read now serves differently.
func (w *Worker) applyRemoteSkill(ctx context.Context, id string) error {
	if registry.ValidateID(id) != nil {
		return nil
	}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	before := w.hist.skills.Served(id, w.hist.serveLabel)
	if err := w.hist.skills.Refresh(id); err != nil {
		return err
	}
	raw, err := w.state.get(ctx, w.cfg.Scopes.Skills, id)
	if err != nil {
		return fmt.Errorf("state::get %s/%s after a change on another node: %w", w.cfg.Scopes.Skills, id, sdkError(err))
	}
	changed := false
	if raw == nil {
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

// applyRemotePrompt re-reads prompt name (prompts are read from state on
// every call: only history and the announcement need it).
func (w *Worker) applyRemotePrompt(ctx context.Context, name string) error {
	before := w.hist.prompts.Served(name, w.hist.serveLabel)
	if err := w.hist.prompts.Refresh(name); err != nil {
		return err
	}
	raw, err := w.state.get(ctx, w.cfg.Scopes.Prompts, name)
	if err != nil {
		return fmt.Errorf("state::get %s/%s after a change on another node: %w", w.cfg.Scopes.Prompts, name, sdkError(err))
	}
	row := storedPromptOf(raw)
	changed := w.coh.promptChanged(name, row)
	switch {
	case row == nil && changed:
		w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpUnregister, Name: name})
	case changed || w.hist.prompts.Served(name, w.hist.serveLabel) != before:
		w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpRegister, Name: name})
	}
	return nil
}

// reconcileLoop checks the generation every interval while connected and
// re-lists when changes were missed.
func (w *Worker) reconcileLoop(ctx context.Context) {
	interval := w.opts.ReconcileInterval
	if interval <= 0 {
		interval = DefaultReconcileInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.client.Connected() || !w.skills.isReady() {
			continue // the connect hook's load reconciles
		}
		if err := w.Reconcile(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("cluster: reconcile failed; retrying at the next tick", "err", err)
		}
	}
}

// Reconcile reads the shared generation and, when changes this instance
// has not applied exist, re-lists the skills and prompts scopes and
// announces what differs. With nothing missed it costs one state::get.
func (w *Worker) Reconcile(ctx context.Context) error {
	_, err := w.reconcile(ctx)
	return err
}

// reconcile is Reconcile, reporting whether it re-listed. A gap between
// the generation and what was applied is re-listed only when it is still
// open one check later: this instance's own writes and messages in flight
// close theirs within milliseconds, and a busy registry must not re-list
// the whole catalog every period because of them. A generation behind
// what was applied (state reset) is re-listed at once.
func (w *Worker) reconcile(ctx context.Context) (relisted bool, err error) {
	gen, err := w.readGeneration(ctx)
	if err != nil {
		return false, fmt.Errorf("read the generation: %w", sdkError(err))
	}
	if !w.coh.gapPersists(gen) {
		return false, nil
	}
	w.log.Info("cluster: changes were missed; re-listing", "generation", gen)
	return true, w.loadCache(ctx)
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

// syncPrompts re-lists the prompts scope into the digests, announcing
// differences when announce is set.
func (w *Worker) syncPrompts(ctx context.Context, announce bool) error {
	rows, err := w.state.list(ctx, w.cfg.Scopes.Prompts)
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
		if w.coh.promptChanged(p.Name, p) && announce {
			w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpRegister, Name: p.Name})
		}
	}
	w.coh.mu.Lock()
	var gone []string
	for name := range w.coh.prompts {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	for _, name := range gone {
		delete(w.coh.prompts, name)
	}
	w.coh.mu.Unlock()
	if announce {
		for _, name := range gone {
			w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpUnregister, Name: name})
		}
	}
	return nil
}
