package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/kv"
)

const (
	// Defaults of Options.
	DefaultReconcileInterval = time.Second
	DefaultMinRelistInterval = 30 * time.Second
	DefaultMaxPendingKeys    = 4096
	// rereadsPerChange bounds the keys re-read for each change the
	// counter shows unapplied (a batch of messages may name more keys than
	// changes happened: forged ones); the rest waits for the next change,
	// or the reconcile.
	rereadsPerChange = 4
	// minRereads is the least a batch with an unapplied change re-reads.
	minRereads = 8
	// batchInterval is the least time between two reads of the counter
	// for batches of messages.
	batchInterval = 10 * time.Millisecond

	// Ops of a change message (informative: every op re-reads the key).
	OpSet    = "set"
	OpDelete = "delete"
	OpLabel  = "label" // history only

	generationKey = "generation"
	// maxKeyBytes bounds the key of a message (skill ids and prompt names
	// are far shorter); a longer one is dropped unread.
	maxKeyBytes = 1024
)

// Scope is one kind of data every registry instance must serve alike.
type Scope interface {
	// Apply re-reads key (another instance changed it) and brings what
	// this instance serves in step, telling its own subscribers once if
	// that changed. A key that cannot be one of the scope's is refused
	// before any read, with ErrNotAKey.
	Apply(ctx context.Context, key string) error
	// Relist re-reads the whole scope: at the first load, after a
	// reconnect and when changes were missed.
	Relist(ctx context.Context) error
}

// ErrNotAKey is what Scope.Apply returns for a key the scope cannot hold:
// the message is dropped without a read.
var ErrNotAKey = fmt.Errorf("not a key of this scope")

// Options tune a Cluster.
type Options struct {
	// GenerationScope is the state scope of the shared generation counter
	// (required on a shared store; the registry uses "<skills>.cluster").
	GenerationScope string
	// Timeout bounds each state::update and publish (default 10 s).
	Timeout time.Duration
	// ReconcileInterval is how often the generation is checked (default
	// DefaultReconcileInterval).
	ReconcileInterval time.Duration
	// MinRelistInterval is the least time between two re-lists that are
	// not a connect's (default DefaultMinRelistInterval).
	MinRelistInterval time.Duration
	// MaxPendingKeys bounds the keys waiting for a re-read (default
	// DefaultMaxPendingKeys).
	MaxPendingKeys int
	Logger         *slog.Logger
	// OnApplied, when set, is told how long each change another instance
	// made took to be applied here (from its announcement to the re-read
	// of its key; the clocks of both hosts count). OnRelist is told of
	// every re-list. Both must return at once (metrics).
	OnApplied func(lag time.Duration)
	OnRelist  func()
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.ReconcileInterval <= 0 {
		o.ReconcileInterval = DefaultReconcileInterval
	}
	if o.MinRelistInterval <= 0 {
		o.MinRelistInterval = DefaultMinRelistInterval
	}
	if o.MaxPendingKeys <= 0 {
		o.MaxPendingKeys = DefaultMaxPendingKeys
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Cluster keeps the scopes added to it coherent with other instances.
type Cluster interface {
	// Add registers scope under its state scope name. Call it before
	// Register and Start.
	Add(name string, s Scope)
	// Register declares the subscription to rules.TopicChanges on the client (replayed
	// on every connect); call it before the client connects.
	Register() error
	// Announce tells the other instances that key of scope changed: a
	// generation bump and a message. Failures are logged: the write is
	// durable already, and the others' reconcile finds it.
	Announce(ctx context.Context, scope, op, key string)
	// Start loads every scope (Relist) and keeps them coherent until ctx
	// ends. It returns once the first load was attempted (at once when
	// the client is not connected yet: the connect loads). A failed load
	// is retried with backoff.
	Start(ctx context.Context)
	// Reconcile checks the shared generation now, as the periodic check
	// does, and reports whether it re-listed.
	Reconcile(ctx context.Context) (relisted bool, err error)
	// Missing reads the shared generation and reports how many changes up
	// to it this instance has not applied (0: none; negative: the counter
	// went back). It changes nothing.
	Missing(ctx context.Context) (int64, error)
	// Relist re-lists every scope now, as a connect does.
	Relist(ctx context.Context) error
	// Stats counts what the cluster did.
	Stats() Stats
}

// Stats counts what a Cluster did since it started.
type Stats struct {
	// Relists is how many times every scope was re-listed.
	Relists int64
	// Applied is how many keys were re-read for messages.
	Applied int64
	// Dropped is how many messages were dropped unread (own, malformed,
	// an unknown scope, not a key, a full queue).
	Dropped int64
}

// New returns the Cluster of an instance keeping its state in st. On a
// store nobody else shares, it announces nothing and loads once.
func New(client *iii.Client, st kv.Store, opts Options) Cluster {
	opts = opts.withDefaults()
	if !st.Shared() {
		return &alone{log: opts.Logger, scopes: newScopes()}
	}
	n := &node{client: client, call: invoke.Caller{Client: client, Timeout: opts.Timeout}, st: st, opts: opts, log: opts.Logger,
		id: uuid.NewString(), scopes: newScopes(),
		gen: newGeneration(), pending: newPendingKeys(opts.MaxPendingKeys)}
	n.wake = make(chan struct{}, 1)
	return n
}

// scopes are the registered scopes, in registration order.
type scopes struct {
	order  []string
	byName map[string]Scope
}

func newScopes() scopes { return scopes{byName: map[string]Scope{}} }

func (s *scopes) add(name string, sc Scope) {
	if _, dup := s.byName[name]; !dup {
		s.order = append(s.order, name)
	}
	s.byName[name] = sc
}

// relist re-lists every scope; every failure is returned.
func (s *scopes) relist(ctx context.Context) error {
	var first error
	for _, name := range s.order {
		if err := s.byName[name].Relist(ctx); err != nil && first == nil {
			first = fmt.Errorf("re-list %s: %w", name, err)
		}
	}
	return first
}

// alone is an instance nobody shares state with.
type alone struct {
	log     *slog.Logger
	scopes  scopes
	relists atomic.Int64
}

func (a *alone) Add(name string, s Scope)                         { a.scopes.add(name, s) }
func (a *alone) Register() error                                  { return nil }
func (a *alone) Announce(context.Context, string, string, string) {}
func (a *alone) Stats() Stats                                     { return Stats{Relists: a.relists.Load()} }
func (a *alone) Reconcile(context.Context) (bool, error)          { return false, nil }
func (a *alone) Missing(context.Context) (int64, error)           { return 0, nil }

// Relist re-lists every scope.
func (a *alone) Relist(ctx context.Context) error {
	a.relists.Add(1)
	return a.scopes.relist(ctx)
}

// Start loads every scope once; state lives in this process, so a
// reconnect of the client changes nothing.
func (a *alone) Start(ctx context.Context) {
	first := make(chan struct{})
	go untilLoaded(ctx, a.log, a.Relist, func() { close(first) })
	<-first
}

// untilLoaded runs load until it succeeds or ctx ends, with backoff;
// attempted is called after the first try.
func untilLoaded(ctx context.Context, log *slog.Logger, load func(context.Context) error, attempted func()) {
	delay := 500 * time.Millisecond
	var once sync.Once
	defer once.Do(attempted)
	for {
		err := load(ctx)
		once.Do(attempted)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("registry not loaded from state yet; retrying", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

// changeMessage is what a mutation publishes on rules.TopicChanges.
type changeMessage struct {
	Node  string `json:"node"`
	Scope string `json:"scope"`
	Op    string `json:"op"`
	Key   string `json:"key"`
	// From and To are the generation before and after this change's bump
	// (both 0 when the bump failed).
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
	// At is when the change was announced (Unix nanoseconds), for the
	// propagation lag.
	At int64 `json:"at,omitempty"`
}

func clip(v []byte) string {
	if len(v) > 64 {
		return string(v[:64]) + "…"
	}
	return string(v)
}
