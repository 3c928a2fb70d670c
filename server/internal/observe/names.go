package observe

import (
	"context"
	"log/slog"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/usage"
)

// Bounds of the naming of iii readers.
const (
	// maxWaitingReads is how many reads by workers not named yet wait for
	// the next read of the worker list; past it a read counts as by
	// usage.UnknownClient at once.
	maxWaitingReads = 1024
	// maxNamedWorkers bounds the worker names held; past it they are all
	// forgotten and read again (workers come and go: a new connection id
	// per connection).
	maxNamedWorkers = 4096
	// listEvery is the least time between two reads of the worker list.
	listEvery = time.Second
	// listTimeout bounds one read of it.
	listTimeout = 5 * time.Second
)

// workerNames names the worker behind an iii read: connection id → the
// name it registered with the engine ("" unnamed), read from
// engine::workers::list off the read path.
type workerNames struct {
	engine  invoke.Trigger
	counter *usage.Counter
	log     *slog.Logger

	mu      sync.RWMutex
	names   map[string]string
	waiting []waitingRead
	wake    chan struct{}
}

type waitingRead struct{ id, version, worker string }

func newWorkerNames(engine invoke.Trigger, counter *usage.Counter, log *slog.Logger) *workerNames {
	return &workerNames{engine: engine, counter: counter, log: log, names: map[string]string{}, wake: make(chan struct{}, 1)}
}

// read counts a read by worker (a connection id): at once when its name is
// known, else once the next read of the worker list names it.
func (n *workerNames) read(id, version, worker string) {
	if worker == "" || n.engine == nil {
		n.counter.Read(id, version, surface.III, usage.UnknownClient)
		return
	}
	n.mu.RLock()
	name, ok := n.names[worker]
	n.mu.RUnlock()
	if ok {
		n.counter.Read(id, version, surface.III, clientName(name))
		return
	}
	queued := false
	n.mu.Lock()
	if name, ok = n.names[worker]; !ok && len(n.waiting) < maxWaitingReads {
		n.waiting = append(n.waiting, waitingRead{id, version, worker})
		queued = true
	}
	n.mu.Unlock()
	switch {
	case ok:
		n.counter.Read(id, version, surface.III, clientName(name))
	case queued:
		select {
		case n.wake <- struct{}{}:
		default:
		}
	default:
		n.counter.Read(id, version, surface.III, usage.UnknownClient)
	}
}

// clientName is the client a worker's name counts as.
func clientName(name string) string {
	if name == "" {
		return usage.UnknownClient
	}
	return name
}

// run reads the worker list when reads wait for it, at most once per
// listEvery, until ctx ends; the reads waiting then are counted as by
// their worker's name, or by "unknown" (a worker that left, or an engine
// that does not list it).
func (n *workerNames) run(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		if wait := listEvery - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		listed, err := n.list(ctx)
		if err != nil && ctx.Err() == nil {
			n.log.Warn("usage: the engine's worker list could not be read; iii reads waiting for a worker's name count as by \"unknown\"", "err", err)
		}
		n.mu.Lock()
		if len(n.names)+len(listed) > maxNamedWorkers {
			clear(n.names)
		}
		for id, name := range listed {
			n.names[id] = name
		}
		waiting := n.waiting
		n.waiting = nil
		for _, w := range waiting {
			if _, ok := n.names[w.worker]; !ok {
				n.names[w.worker] = "" // unknown to the engine: do not ask again for it
			}
		}
		names := make([]string, len(waiting))
		for i, w := range waiting {
			names[i] = clientName(n.names[w.worker])
		}
		n.mu.Unlock()
		for i, w := range waiting {
			n.counter.Read(w.id, w.version, surface.III, names[i])
		}
	}
}

// list reads engine::workers::list: connection id → name.
func (n *workerNames) list(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var out struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	err := invoke.Caller{Client: n.engine, Timeout: listTimeout}.Call(ctx, iii.FnListWorkers, nil, &out)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(out.Workers))
	for _, w := range out.Workers {
		names[w.StringID()] = iii.ShowName(w.StringName())
	}
	return names, nil
}
