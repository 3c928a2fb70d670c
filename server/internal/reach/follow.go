package reach

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// DefaultBackstop is how often a Follower lists its sets again without
// being told of a change (a lost event, a function that came or went on
// the engine across the bridge, whose events this engine never sees).
const DefaultBackstop = 30 * time.Second

// Client is what a Follower needs of an iii client (*iii.Client).
type Client interface {
	Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error)
	RegisterFunction(id string, h iii.Handler, opts ...iii.RegisterFunctionOptions) (*iii.FunctionRef, error)
	RegisterTrigger(id, triggerType, functionID string, config json.RawMessage, metadata ...json.RawMessage) error
	OnConnect(f func(ctx context.Context)) (remove func())
	Connected() bool
}

// Options tune a Follower.
type Options struct {
	// Node names this registry instance to the other nodes; it appears in
	// their errors ("node \"host-a (ws://10.0.0.5:49134)\" has it").
	Node string
	// Shared, when set, is the state every node shares: the Follower
	// writes this node's row into Scope and keeps the others' in memory
	// (Scope returns the cluster scope that follows them). Nil on one node.
	Shared kv.Store
	// Scope is the state scope of the nodes' rows (required with Shared).
	Scope string
	// Announce tells the other nodes that this node's row (its key)
	// changed (cluster.Cluster.Announce); nil: they find it when they
	// re-list.
	Announce func(ctx context.Context, key string)
	// UseBridge lets the Follower reach the engine across this engine's
	// iii-bridge worker, when it runs one. Only a deployment of several
	// engines has a use for it; on one engine a worker that registers
	// iii.FnBridgeInvoke under the bridge's name would otherwise receive
	// every call of a function that is not there.
	UseBridge bool
	// Timeout bounds each listing and state call (default 10 s).
	Timeout time.Duration
	// Backstop is how often the sets are listed again unprompted (default
	// DefaultBackstop).
	Backstop time.Duration
	// OnChange is called (on the Follower's goroutine) after what this
	// registry can reach changed: a function came or went on its engine or
	// across its bridge, or the bridge itself did.
	OnChange func()
	Logger   *slog.Logger
}

// Follower follows which functions this registry reaches (package doc).
type Follower struct {
	client Client
	opts   Options
	log    *slog.Logger
	key    string // this node's row key
	wake   chan struct{}
	// lastNudge is when a miss last woke the Follower (Unix ns).
	lastNudge atomic.Int64

	mu sync.Mutex
	// known: this engine's functions were listed at least once.
	known bool
	// local are this engine's functions that may back a prompt or a
	// section (hidden namespaces left out).
	local map[string]bool
	// bridge: this engine runs the iii-bridge worker; bridged are the
	// functions of the engine it connects to (nil: not listed), bridgeErr
	// why they could not be listed.
	bridge    bool
	bridged   map[string]bool
	bridgeErr string
	// nodes are the other nodes' rows, by key.
	nodes map[string]node
	// written is the set last written into this node's row (nil: write
	// it again).
	written []string
}

// New returns a Follower calling through client. Register binds it to the
// engine's events (before the client connects); Start follows.
func New(client Client, o Options) *Follower {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Backstop <= 0 {
		o.Backstop = DefaultBackstop
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Follower{client: client, opts: o, log: o.Logger, key: nodeKey(o.Node), wake: make(chan struct{}, 1),
		nodes: map[string]node{}}
}

// Register binds rules.FnFunctionsSync to the engine's
// engine::functions-available trigger type (replayed by the client on
// every connect). Without it the Follower still lists at every connect and
// every Backstop.
func (f *Follower) Register() error {
	_, err := f.client.RegisterFunction(rules.FnFunctionsSync, func(context.Context, json.RawMessage) (any, error) {
		f.Wake()
		return nil, nil
	}, iii.RegisterFunctionOptions{
		Description: "Internal: keeps the skills registry's view of which prompt handlers and section functions it can reach in step with the engine's functions.",
		Metadata:    iii.InternalMetadata,
	})
	if err != nil {
		return err
	}
	return f.client.RegisterTrigger(uuid.NewString(), iii.TriggerFunctionsAvailable, rules.FnFunctionsSync, nil)
}

// Start lists the sets now and again at every connect, event and
// Backstop, until ctx ends; it returns at once.
func (f *Follower) Start(ctx context.Context) {
	remove := f.client.OnConnect(func(context.Context) {
		f.mu.Lock()
		f.written = nil // the engine (or Redis) may have restarted: write this node's row again
		f.mu.Unlock()
		f.Wake()
	})
	context.AfterFunc(ctx, remove)
	f.Wake()
	go f.run(ctx)
}

// Wake asks for the sets to be listed again soon (calls coalesce).
func (f *Follower) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Expect wakes the Follower when functionID is not among what it reaches:
// a prompt registered a moment ago may name a handler its sets do not hold
// yet (the real engine reports new functions every 5 s).
func (f *Follower) Expect(functionID string) {
	if p := f.Where(functionID); p.Known && !p.Local && !p.Bridge {
		f.nudge()
	}
}

// minNudge is the least time between two listings asked for by a miss (a
// call or a registration naming a function the sets lack): a client that
// renders a prompt whose handler is gone, again and again, costs one
// listing a second at most.
const minNudge = time.Second

// nudge is Wake for misses, at most once per minNudge.
func (f *Follower) nudge() {
	now := time.Now().UnixNano()
	last := f.lastNudge.Load()
	if now-last < int64(minNudge) || !f.lastNudge.CompareAndSwap(last, now) {
		return
	}
	f.Wake()
}

func (f *Follower) run(ctx context.Context) {
	tick := time.NewTicker(f.opts.Backstop)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-tick.C:
		}
		f.refresh(ctx)
	}
}

// refresh lists this engine's functions and, when it runs the bridge,
// those across it; writes this node's row when its set changed; and calls
// OnChange when what is reachable changed.
func (f *Follower) refresh(ctx context.Context) {
	if !f.client.Connected() {
		return
	}
	local, bridge, err := f.list(ctx, f.client)
	if err != nil {
		f.log.Debug("reach: "+iii.FnListFunctions+" failed; keeping the last view", "err", err)
		return
	}
	var bridged map[string]bool
	bridgeErr := ""
	if bridge {
		if bridged, _, err = f.list(ctx, bridgeTrigger{f}); err != nil {
			bridged, bridgeErr = nil, iii.RustDisplay(err).Error()
		}
	}
	f.mu.Lock()
	changed := !f.known || !maps.Equal(local, f.local) || bridge != f.bridge || !maps.Equal(bridged, f.bridged)
	if bridgeErr != f.bridgeErr && bridgeErr != "" {
		f.log.Warn("reach: the engine across this engine's iii-bridge cannot be listed; prompts and sections of other nodes are not reached",
			"err", bridgeErr)
	}
	f.known, f.local, f.bridge, f.bridged, f.bridgeErr = true, local, bridge, bridged, bridgeErr
	ids := slices.Sorted(maps.Keys(local))
	write := f.opts.Shared != nil && !slices.Equal(ids, f.written)
	f.mu.Unlock()
	if write {
		f.writeRow(ctx, ids, bridge)
	}
	if changed && f.opts.OnChange != nil {
		f.opts.OnChange()
	}
}

// list lists the functions of the engine t reaches (internal ones
// included: publishers mark their handlers internal) that may back a
// prompt or a section, and whether that engine runs the iii-bridge.
func (f *Follower) list(ctx context.Context, t invoke.Trigger) (map[string]bool, bool, error) {
	var out struct {
		Functions []iii.FunctionInfo `json:"functions"`
	}
	call := invoke.Caller{Client: t, Timeout: f.opts.Timeout}
	if err := call.Call(ctx, iii.FnListFunctions, map[string]bool{"include_internal": true}, &out); err != nil {
		return nil, false, err
	}
	set := make(map[string]bool, len(out.Functions))
	bridge := false
	for _, fn := range out.Functions {
		if f.opts.UseBridge && fn.FunctionID == iii.FnBridgeInvoke && fn.WorkerName == iii.BridgeWorkerName {
			bridge = true
		}
		if !registry.IsHidden(fn.FunctionID) {
			set[fn.FunctionID] = true
		}
	}
	return set, bridge, nil
}

// Place is where a function is, as a Follower last saw it.
type Place struct {
	// Known: this engine's functions were listed at least once. Until
	// then every function counts as reachable.
	Known bool
	// Local: on this registry's engine.
	Local bool
	// Bridge: on the engine this engine's iii-bridge connects to.
	Bridge bool
	// Nodes are the other nodes whose engines hold it, as they last wrote
	// (shared state only), by name.
	Nodes []NodeSeen
}

// NodeSeen is a node that holds a function, and when it last said so.
type NodeSeen struct {
	Name string
	At   string // RFC 3339
}

// Reachable reports whether a call can find the function: on this engine,
// across the bridge, or not known yet.
func (p Place) Reachable() bool { return !p.Known || p.Local || p.Bridge }

// Where says where functionID is; a map lookup under a lock, no engine
// round trip.
func (f *Follower) Where(functionID string) Place {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := Place{Known: f.known, Local: f.local[functionID], Bridge: f.bridge && f.bridged[functionID]}
	for _, n := range f.nodes {
		if n.functions[functionID] {
			p.Nodes = append(p.Nodes, NodeSeen{Name: n.name, At: n.at})
		}
	}
	slices.SortFunc(p.Nodes, func(a, b NodeSeen) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// Bridge reports whether this engine runs the iii-bridge worker.
func (f *Follower) Bridge() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bridge
}
