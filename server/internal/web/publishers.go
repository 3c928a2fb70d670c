package web

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// Publishers says who published a skill or prompt: the id of the worker
// connection that registered it and the scoped token it used ("" for
// none); ok is false when that is not known (core.Local does this).
type Publishers interface {
	PublisherOf(kind, id string) (workerID, token string, ok bool)
}

// Worker names come from engine::workers::list, cached so that a page of
// 100 published rows costs at most one call: the cache is re-read after
// namesMaxAge, after a catalog or versions change (a publish may come from
// a new worker), or when a page meets a worker id it does not hold, at most once
// per namesMinAge (a worker that has left stays missing).
const (
	namesMaxAge  = 3 * time.Second
	namesMinAge  = 500 * time.Millisecond
	namesTimeout = 2 * time.Second // a slow engine must not hold up every page
)

type workerNames struct {
	mu      sync.Mutex // held across the call: one refresh at a time
	names   map[string]string
	err     error
	fetched time.Time
	stale   atomic.Bool // set by the change feed
}

// workerNameTable returns the cached names, refreshing them when they are old or
// stale, or when missing is set and they are older than namesMinAge.
func (s *Server) workerNameTable(ctx context.Context, missing bool) (map[string]string, error) {
	n := &s.names
	n.mu.Lock()
	defer n.mu.Unlock()
	age := time.Since(n.fetched)
	if !n.fetched.IsZero() && age < namesMaxAge && !n.stale.Load() && (!missing || age < namesMinAge) {
		return n.names, n.err
	}
	n.stale.Store(false)
	ctx, cancel := context.WithTimeout(ctx, namesTimeout)
	defer cancel()
	var out struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	n.err = s.engineCall(ctx, iii.FnListWorkers, &out)
	if n.err == nil {
		n.names = make(map[string]string, len(out.Workers))
		for _, w := range out.Workers {
			n.names[w.StringID()] = iii.ShowName(w.StringName())
		}
	}
	n.fetched = time.Now()
	return n.names, n.err
}

// publisherLookup resolves publishers for one page render: the name table
// is fetched once, and only when a row has a known publisher.
type publisherLookup struct {
	s         *Server
	ctx       context.Context
	names     map[string]string
	err       error
	loaded    bool
	refetched bool
}

func (s *Server) publishers(ctx context.Context) *publisherLookup {
	if s.opts.Publishers == nil {
		return nil
	}
	return &publisherLookup{s: s, ctx: ctx}
}

// publishedBy says who published the kind's id ("" when not known, so
// the caller keeps its generic text) and the full worker id, for a tooltip.
func (p *publisherLookup) publishedBy(kind historyKind, id string) (text, workerID string) {
	if p == nil {
		return "", ""
	}
	workerID, token, ok := p.s.opts.Publishers.PublisherOf(string(kind), id)
	if !ok || workerID == "" {
		return "", ""
	}
	if !p.loaded {
		p.names, p.err = p.s.workerNameTable(p.ctx, false)
		p.loaded = true
	}
	name, present := p.names[workerID]
	if !present && p.err == nil && !p.refetched {
		// A worker that connected since the last read, or one that left.
		p.refetched = true
		p.names, p.err = p.s.workerNameTable(p.ctx, true)
		name, present = p.names[workerID]
	}
	short := shortID(workerID)
	switch {
	case p.err != nil:
		text = "published by worker " + short + " (its name could not be read)"
	case !present:
		text = "published by a worker that has left (" + short + ")"
	case name == "":
		text = "published by an unnamed worker (" + short + ")"
	default:
		text = "published by " + name + " (" + short + ")"
	}
	if token != "" {
		text += " with token " + iii.ShowName(token)
	}
	return text, workerID
}

// shortID is the first 8 characters of a worker id (a UUID for ours),
// enough to tell workers apart on a page; the full id is in the tooltip.
func shortID(id string) string {
	id = iii.ShowName(id) // from the engine, but an id is text like a name
	if r := []rune(id); len(r) > 8 {
		return string(r[:8])
	}
	return id
}
