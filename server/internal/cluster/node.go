package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/kv"
)

// node is an instance on a store other instances share.
type node struct {
	client *iii.Client
	call   invoke.Caller // state::update and publish, each bounded by Options.Timeout
	st     kv.Store
	opts   Options
	log    *slog.Logger
	id     string // this instance, in its messages
	scopes scopes

	gen     *generation
	pending *pendingKeys
	wake    chan struct{}

	// relistMu runs one re-list at a time; lastRelist (under it) limits
	// the ones that are not a connect's.
	relistMu   sync.Mutex
	lastRelist time.Time

	relists, applied, dropped atomic.Int64
}

func (n *node) Add(name string, s Scope) { n.scopes.add(name, s) }

func (n *node) Stats() Stats {
	return Stats{Relists: n.relists.Load(), Applied: n.applied.Load(), Dropped: n.dropped.Load()}
}

// Register declares the subscriber function and its subscribe binding.
func (n *node) Register() error {
	_, err := n.client.RegisterFunction(rules.FnClusterSync, n.receive, iii.RegisterFunctionOptions{
		Description: "Internal: applies registry changes other registry instances publish on " + rules.TopicChanges + ".",
		Metadata:    iii.InternalMetadata,
	})
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(map[string]string{"topic": rules.TopicChanges})
	if err != nil {
		return err
	}
	return n.client.RegisterTrigger(uuid.NewString(), iii.Subscribe, rules.FnClusterSync, cfg)
}

// Start re-lists at every connect (the engine may have restarted with
// other state), runs the appliers and checks the generation every
// ReconcileInterval.
func (n *node) Start(ctx context.Context) {
	first := make(chan struct{})
	var once sync.Once
	attempted := func() { once.Do(func() { close(first) }) }
	n.client.OnConnect(func(context.Context) {
		go untilLoaded(ctx, n.log, func(ctx context.Context) error { return n.relist(ctx, true) }, attempted)
	})
	if !n.client.Connected() {
		attempted()
	}
	go n.applyLoop(ctx)
	go n.reconcileLoop(ctx)
	<-first
}

// ---- announcing ----

func (n *node) generationScope() string { return n.opts.GenerationScope }

// readGeneration reads the shared counter (0 when it was never bumped).
func (n *node) readGeneration(ctx context.Context) (int64, error) {
	raw, ok, err := n.st.Get(ctx, n.generationScope(), generationKey)
	if err != nil || !ok {
		return 0, err
	}
	var g struct {
		N int64 `json:"n"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return 0, fmt.Errorf("state %s/%s holds %s; want {\"n\": <count>}", n.generationScope(), generationKey, clip(raw))
	}
	return g.N, nil
}

// bump increments the shared counter and returns its value before and
// after.
func (n *node) bump(ctx context.Context) (from, to int64, err error) {
	var out json.RawMessage
	if err := n.call.Call(ctx, iii.StateUpdate, map[string]any{
		"scope": n.generationScope(), "key": generationKey,
		"ops": []map[string]any{{"type": "increment", "path": "n", "by": 1}},
	}, &out); err != nil {
		return 0, 0, iii.RustDisplay(err)
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
		return 0, 0, fmt.Errorf("%s of the generation answered %s", iii.StateUpdate, clip(out))
	}
	if res.Old != nil {
		from = res.Old.N
	}
	return from, res.New.N, nil
}

func (n *node) Announce(ctx context.Context, scope, op, key string) {
	msg := changeMessage{Node: n.id, Scope: scope, Op: op, Key: key, At: time.Now().UnixNano()}
	from, to, err := n.bump(ctx)
	if err != nil {
		n.log.Warn("cluster: generation bump failed; other registry instances learn of this change at their next reload",
			"scope", scope, "key", key, "err", err)
	} else {
		msg.From, msg.To = from, to
		n.gen.own(from, to)
		if err := n.record(ctx, to, scope, key, msg.At); err != nil {
			n.log.Warn("cluster: writing the change log failed; an instance that misses this change's message re-lists",
				"scope", scope, "key", key, "err", err)
		}
	}
	if err := n.call.Fire(ctx, iii.Publish, map[string]any{"topic": rules.TopicChanges, "data": msg}); err != nil {
		n.log.Warn("cluster: publishing a change failed", "scope", scope, "key", key, "err", err)
	}
}

// ---- receiving ----

// receive takes one message off Topic: it queues the key it names for a
// re-read and returns at once. Nothing in a message is trusted beyond
// which key to look at.
func (n *node) receive(_ context.Context, data json.RawMessage) (any, error) {
	var msg changeMessage
	if err := json.Unmarshal(data, &msg); err != nil || msg.Node == "" || msg.Key == "" {
		n.dropped.Add(1)
		return nil, fmt.Errorf("%s: want {node, scope, op, key, from?, to?} from a registry instance, got %s", rules.TopicChanges, clip(data))
	}
	switch {
	case msg.Node == n.id: // applied when it was made
		n.dropped.Add(1)
		return nil, nil
	case len(msg.Key) > maxKeyBytes:
		n.dropped.Add(1)
		return nil, fmt.Errorf("%s: a key of %d bytes (max %d)", rules.TopicChanges, len(msg.Key), maxKeyBytes)
	}
	if _, ok := n.scopes.byName[msg.Scope]; !ok {
		n.dropped.Add(1) // another registry's scopes on the same engines, or made up
		return nil, nil
	}
	if !n.pending.push(scopeKey{msg.Scope, msg.Key}, hop{msg.From, msg.To, msg.At}) {
		// Full: an honest change dropped here leaves a gap in the
		// generation, which the reconcile finds; a forged one costs nothing.
		n.dropped.Add(1)
		return nil, nil
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return nil, nil
}

// applyLoop re-reads waiting keys, a batch at a time, until ctx ends.
// Each batch first reads the shared counter (one small state::get): a
// writer bumps it before it publishes, so when every change up to it is
// applied here, no message waiting can name an unapplied change, and the
// batch is dropped unread (a forged message costs nothing more). Otherwise
// the keys are re-read, at most rereadsPerChange per unapplied change,
// until the counter is reached.
func (n *node) applyLoop(ctx context.Context) {
	var last time.Time
	for {
		if n.pending.len() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-n.wake:
			}
			continue
		}
		if wait := batchInterval - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		gen, err := n.readGeneration(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("cluster: reading the generation for waiting changes failed; retrying", "err", err)
			}
			continue
		}
		missing := n.gen.observe(gen)
		if missing <= 0 {
			// Nothing unapplied (or the counter went back: the reconcile
			// re-lists): whatever waits was applied already or is made up.
			n.dropped.Add(int64(n.pending.clear()))
			continue
		}
		budget := max(minRereads, rereadsPerChange*missing)
		for ; budget > 0 && n.gen.missing(gen) > 0; budget-- {
			k, hops, ok := n.pending.pop()
			if !ok {
				break
			}
			n.apply(ctx, k, hops)
		}
	}
}

// apply re-reads one key and credits the hops of the messages that named it.
func (n *node) apply(ctx context.Context, k scopeKey, hops []hop) {
	defer n.pending.done(k)
	err := n.scopes.byName[k.scope].Apply(ctx, k.key)
	switch {
	case errors.Is(err, ErrNotAKey):
		n.dropped.Add(1)
	case err != nil:
		// Not applied: the hops stay uncredited, so the reconcile finds
		// the gap and re-lists.
		n.log.Warn("cluster: applying a change failed", "scope", k.scope, "key", k.key, "err", err)
	default:
		n.applied.Add(1)
		for _, h := range hops {
			n.lagged(h.at)
			n.gen.credit(h.from, h.to)
		}
	}
}

// lagged tells OnApplied how long the change announced at (Unix
// nanoseconds; 0: unknown) took to be applied here.
func (n *node) lagged(at int64) {
	if at > 0 && n.opts.OnApplied != nil {
		n.opts.OnApplied(time.Duration(time.Now().UnixNano() - at))
	}
}

// ---- reconciling ----

func (n *node) Reconcile(ctx context.Context) (bool, error) { return n.reconcile(ctx) }

func (n *node) Relist(ctx context.Context) error { return n.relist(ctx, true) }

func (n *node) Missing(ctx context.Context) (int64, error) {
	gen, err := n.readGeneration(ctx)
	if err != nil {
		return 0, err
	}
	return n.gen.missing(gen), nil
}

func (n *node) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(n.opts.ReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !n.client.Connected() {
			continue // the connect re-lists
		}
		if _, err := n.reconcile(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("cluster: reconcile failed; retrying at the next tick", "err", err)
		}
	}
}

// reconcile reads the shared generation and re-lists when changes this
// instance has not applied stay missing; with nothing missed it costs one
// state::get. It reports whether it re-listed.
func (n *node) reconcile(ctx context.Context) (bool, error) {
	gen, err := n.readGeneration(ctx)
	if err != nil {
		return false, fmt.Errorf("read the generation: %w", err)
	}
	if !n.gen.gapPersists(gen) {
		return false, nil
	}
	// A lost message: the change log names its key.
	if closed, err := n.catchUp(ctx, gen); err != nil {
		return false, err
	} else if closed {
		return false, nil
	}
	if err := n.relist(ctx, false); errors.Is(err, errRelistLimited) {
		return false, nil
	} else if err != nil {
		return true, err
	}
	return true, nil
}

var errRelistLimited = errors.New("re-listed less than MinRelistInterval ago")

// relist re-reads every scope, once at a time. Unless connect, it runs at
// most once per MinRelistInterval (errRelistLimited otherwise).
func (n *node) relist(ctx context.Context, connect bool) error {
	n.relistMu.Lock()
	defer n.relistMu.Unlock()
	if !connect && !n.lastRelist.IsZero() && time.Since(n.lastRelist) < n.opts.MinRelistInterval {
		return errRelistLimited
	}
	if !connect {
		n.log.Info("cluster: changes were missed; re-listing")
	}
	n.lastRelist = time.Now()
	n.relists.Add(1)
	if n.opts.OnRelist != nil {
		n.opts.OnRelist()
	}
	// The generation is read first: a change made during the listing
	// bumps it again, and the next reconcile looks once more.
	gen, genErr := n.readGeneration(ctx)
	if err := n.scopes.relist(ctx); err != nil {
		n.gen.forget()
		return err
	}
	n.gen.reset(gen, genErr == nil)
	return nil
}
