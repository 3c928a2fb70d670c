// Package changefeed is the registry's ordered, durable feed of skill
// changes (skills::changes): each change the registry makes gets a cursor,
// a number that means the same on every registry instance sharing state,
// and clients that poll ask for the changes after the last cursor they saw.
//
// # Cursors
//
// A cursor comes from a sequence in the shared state: on state other
// instances share (engines on one Redis), an atomic state::update
// increment of one counter row, the operation package cluster's
// generation counter relies on; on state nobody shares (the embedded
// engine), a counter in this process, started at the highest cursor
// stored. An entry is written under its cursor after the cursor is taken,
// so a reader can meet a cursor whose entry is not written yet: it stops
// there and the next poll finds it. A cursor whose entry is still missing
// while an entry written Grace (30 s) after it exists belongs to a writer
// that stopped in between (a crash, a lost connection): it is skipped.
//
// # Why not the cluster's change log
//
// Package cluster keeps a 256-entry ring beside its generation counter.
// It is not this feed's log: it counts every write of every scope
// (prompts, bundles, history), carries keys and no event, its entries are
// hints any state client may rewrite, it is overwritten within 256 writes,
// and a registry alone on its store has none. The feed reuses its two
// ideas: a counter bumped with one atomic state::update, and a ring of
// entries keyed by the counter modulo its size whose entry names its own
// number, so an overwritten slot reads as gone, never as another change.
//
// # Bounds
//
// The ring keeps the last Retain (10 000) changes; a cursor older than
// that is answered from the oldest kept, with Truncated set: the client
// missed changes and re-lists. A read returns at most 1 000 changes.
package changefeed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/kv"
)

// Defaults of Options.
const (
	DefaultRetain = 10000
	DefaultGrace  = 30 * time.Second
	// lookAhead bounds the slots read past a missing entry to tell an
	// abandoned cursor from one being written.
	lookAhead = 64
)

// Entry is one change in the feed.
type Entry struct {
	Cursor  int64  `json:"cursor"`
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version int    `json:"version,omitempty"`
	Label   string `json:"label,omitempty"`
	// Previous is the version a moved label pointed at before.
	Previous int `json:"previous,omitempty"`
	// RolledBack is the version a rollback registered again.
	RolledBack int    `json:"rolled_back,omitempty"`
	Author     string `json:"author,omitempty"`
	// Reason is why a version was yanked; Message a deprecation's
	// message (none on a deprecate: it was removed).
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
	// Node is the registry instance that made the change.
	Node string `json:"node,omitempty"`
}

// Page is the answer of skills::changes.
type Page struct {
	Changes []Entry `json:"changes"`
	// Next is the cursor to ask after next time (the last one listed, or
	// after itself when nothing is new).
	Next int64 `json:"next"`
	// Truncated: changes after the cursor asked for were dropped from the
	// feed (older than the last Retain, or the state was reset); the
	// client missed some and should re-list what it mirrors.
	Truncated bool `json:"truncated,omitempty"`
}

// Sequence hands out cursors.
type Sequence interface {
	// Next takes the next cursor.
	Next(ctx context.Context) (int64, error)
	// Head is the last cursor taken (0: none).
	Head(ctx context.Context) (int64, error)
}

// Options configure a Feed.
type Options struct {
	// Store and Scope are where the entries live (required).
	Store kv.Store
	Scope string
	// Sequence hands out cursors. Nil: a counter in this process, for a
	// Store nobody else writes (Store.Shared() false; New refuses a nil
	// Sequence on a shared one).
	Sequence Sequence
	// Node names this instance in its entries.
	Node string
	// Retain is the size of the ring (default 10 000). Keep it the same
	// on every instance and across restarts: slots are cursor mod Retain.
	Retain int
	// Grace is how long a missing entry may lag behind a later one before
	// it is skipped (default 30 s).
	Grace time.Duration
	Now   func() time.Time
}

// Feed is the change feed.
type Feed struct {
	opts Options
	seq  Sequence
}

// New returns the feed of opts; on a store nobody shares it reads the
// stored entries once for the highest cursor.
func New(ctx context.Context, opts Options) (*Feed, error) {
	if opts.Store == nil || opts.Scope == "" {
		return nil, errors.New("changefeed: Options.Store and Options.Scope are required")
	}
	if opts.Retain <= 0 {
		opts.Retain = DefaultRetain
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Feed{opts: opts, seq: opts.Sequence}
	if f.seq == nil {
		if opts.Store.Shared() {
			return nil, errors.New("changefeed: a shared store needs a Sequence every instance shares (StateSequence)")
		}
		raws, err := opts.Store.List(ctx, opts.Scope)
		if err != nil {
			return nil, fmt.Errorf("changefeed: read the feed: %w", err)
		}
		var head int64
		for _, raw := range raws {
			var e Entry
			if json.Unmarshal(raw, &e) == nil {
				head = max(head, e.Cursor)
			}
		}
		ls := &localSequence{}
		ls.n.Store(head)
		f.seq = ls
	}
	return f, nil
}

func (f *Feed) slot(cursor int64) string {
	return "e-" + strconv.FormatInt(cursor%int64(f.opts.Retain), 10)
}

// Append takes the next cursor for e and stores it; it returns the entry
// as stored.
func (f *Feed) Append(ctx context.Context, e Entry) (Entry, error) {
	e, err := f.Reserve(ctx, e)
	if err != nil {
		return e, err
	}
	return e, f.Write(ctx, e)
}

// Reserve takes the next cursor for e (and fills in its node and time)
// without storing it: a caller that writes something else naming the
// cursor (a webhook) writes both at once, then Write.
func (f *Feed) Reserve(ctx context.Context, e Entry) (Entry, error) {
	n, err := f.seq.Next(ctx)
	if err != nil {
		return e, fmt.Errorf("changefeed: take a cursor: %w", err)
	}
	e.Cursor, e.Node = n, f.opts.Node
	if e.At.IsZero() {
		e.At = f.opts.Now()
	}
	e.At = e.At.UTC()
	return e, nil
}

// Write stores an entry Reserve returned.
func (f *Feed) Write(ctx context.Context, e Entry) error {
	if err := kv.Put(ctx, f.opts.Store, f.opts.Scope, f.slot(e.Cursor), e); err != nil {
		return fmt.Errorf("changefeed: store change %d: %w", e.Cursor, err)
	}
	return nil
}

// get reads the entry of cursor; ok is false when its slot holds no entry
// of that cursor.
func (f *Feed) get(ctx context.Context, cursor int64) (Entry, bool, error) {
	raw, ok, err := f.opts.Store.Get(ctx, f.opts.Scope, f.slot(cursor))
	if err != nil || !ok {
		return Entry{}, false, err
	}
	var e Entry
	if json.Unmarshal(raw, &e) != nil || e.Cursor != cursor {
		return Entry{}, false, nil
	}
	return e, true, nil
}

// Read returns at most limit changes after cursor after (0: from the
// oldest kept), oldest first.
func (f *Feed) Read(ctx context.Context, after int64, limit int) (Page, error) {
	if after < 0 || limit <= 0 {
		return Page{}, fmt.Errorf("changefeed: after %d and limit %d: expected a cursor of 0 or more and a positive limit", after, limit)
	}
	head, err := f.seq.Head(ctx)
	if err != nil {
		return Page{}, fmt.Errorf("changefeed: read the newest cursor: %w", err)
	}
	page := Page{Changes: []Entry{}, Next: after}
	oldest := max(1, head-int64(f.opts.Retain)+1)
	start := after + 1
	if after > head || (after > 0 && start < oldest) {
		page.Truncated = true // a reset state, or changes dropped from the ring
		start = oldest
		page.Next = oldest - 1
	} else if start < oldest {
		start = oldest
		page.Next = oldest - 1
	}
	for m := start; m <= head && len(page.Changes) < limit; m++ {
		e, ok, err := f.get(ctx, m)
		if err != nil {
			return Page{}, fmt.Errorf("changefeed: read change %d: %w", m, err)
		}
		if !ok {
			abandoned, err := f.abandoned(ctx, m, head)
			if err != nil {
				return Page{}, err
			}
			if !abandoned {
				break // being written: the next poll finds it
			}
			page.Next = m
			continue
		}
		page.Changes = append(page.Changes, e)
		page.Next = m
	}
	return page, nil
}

// abandoned reports whether the missing entry of cursor m will never be
// written: an entry after it, within lookAhead, was written more than
// Grace ago.
func (f *Feed) abandoned(ctx context.Context, m, head int64) (bool, error) {
	for k := m + 1; k <= min(head, m+lookAhead); k++ {
		e, ok, err := f.get(ctx, k)
		if err != nil {
			return false, fmt.Errorf("changefeed: read change %d: %w", k, err)
		}
		if ok {
			return f.opts.Now().Sub(e.At) > f.opts.Grace, nil
		}
	}
	return false, nil
}

// localSequence is a counter in this process, for a store nobody shares.
type localSequence struct{ n atomic.Int64 }

func (s *localSequence) Next(context.Context) (int64, error) { return s.n.Add(1), nil }
func (s *localSequence) Head(context.Context) (int64, error) { return s.n.Load(), nil }

// headKey is the counter row of a StateSequence: {"n": <last cursor>}.
const headKey = "head"

// stateSequence is a counter row in shared state, bumped with state::update.
type stateSequence struct {
	call  invoke.Caller
	store kv.Store
	scope string
}

// StateSequence is a counter in state every instance sharing it bumps
// atomically (state::update increment through call, read through store),
// in scope under key "head".
func StateSequence(call invoke.Caller, store kv.Store, scope string) Sequence {
	return stateSequence{call: call, store: store, scope: scope}
}

func (s stateSequence) Next(ctx context.Context) (int64, error) {
	var out json.RawMessage
	if err := s.call.Call(ctx, iii.StateUpdate, map[string]any{
		"scope": s.scope, "key": headKey,
		"ops": []map[string]any{{"type": "increment", "path": "n", "by": 1}},
	}, &out); err != nil {
		return 0, iii.RustDisplay(err)
	}
	var res struct {
		New *struct {
			N int64 `json:"n"`
		} `json:"new_value"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.New == nil || res.New.N <= 0 {
		return 0, fmt.Errorf(iii.StateUpdate+" of %s/%s answered %.64s", s.scope, headKey, out)
	}
	return res.New.N, nil
}

func (s stateSequence) Head(ctx context.Context) (int64, error) {
	raw, ok, err := s.store.Get(ctx, s.scope, headKey)
	if err != nil || !ok {
		return 0, err
	}
	var h struct {
		N int64 `json:"n"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return 0, fmt.Errorf("state %s/%s holds %.64s; want {\"n\": <count>}", s.scope, headKey, raw)
	}
	return h.N, nil
}
