package core

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// What the registry tells observers (package observe, the change feed,
// webhooks): the reads it serves, by skill and version, and the changes
// this instance makes.

// ReadCounter counts the reads of skills and prompts the registry serves
// (usage per skill and version). CountRead must return at once: it is on
// the read path.
type ReadCounter interface {
	// CountRead counts one read of id at version ("" for a skill without
	// versions) made by the caller behind ctx.
	CountRead(ctx context.Context, id, version string)
}

// PromptUsageID is the id a prompt's gets are counted under: prompt: and
// its name (no skill id has a ':').
func PromptUsageID(name string) string { return "prompt:" + name }

// observed is the registry's observers.
type observed struct {
	reads atomic.Pointer[readCounter]

	mu     sync.Mutex
	next   int
	events map[int]func(context.Context, Event)
}

type readCounter struct{ ReadCounter }

// SetReadCounter makes the registry count every read it serves with c
// (nil: none).
func (l *Local) SetReadCounter(c ReadCounter) {
	if c == nil {
		l.obs.reads.Store(nil)
		return
	}
	l.obs.reads.Store(&readCounter{c})
}

// counted counts a read of id at version.
func (l *Local) counted(ctx context.Context, id, version string) {
	if c := l.obs.reads.Load(); c != nil {
		c.CountRead(ctx, id, version)
	}
}

// countedEntry counts a read of what e serves: the served version of a
// published skill, a bundle's version, nothing for a folder skill.
func (l *Local) countedEntry(ctx context.Context, e *catalog.Entry) {
	if l.obs.reads.Load() == nil {
		return
	}
	l.counted(ctx, e.ID, l.entryVersion(e))
}

// entryVersion is the version a plain read of e serves.
func (l *Local) entryVersion(e *catalog.Entry) string {
	if !isPublished(e) {
		return e.Version
	}
	n := l.hist.skills.Served(e.ID, l.hist.serveLabel)
	if n == 0 {
		n = l.hist.skills.Latest(e.ID)
	}
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// ReadVersion is the version a read of skill id with selector (a version
// number, a label, or "" for a plain read) serves: a published skill's
// version number, a bundle's version, "" for a skill without versions.
// Surfaces that serve skills from their own caches count their reads
// with it.
func (l *Local) ReadVersion(id, selector string) string {
	e, ok := l.lookup(id)
	if selector == "" {
		if !ok {
			return ""
		}
		return l.entryVersion(e)
	}
	if ok && !isPublished(e) {
		if strings.HasPrefix(selector, registry.DigestSelectorPrefix) {
			return l.entryVersion(e) // a pin of what the folder serves now
		}
		return selector // a bundle's version
	}
	if p, err := l.hist.skills.Resolve(id, selector); err == nil {
		return strconv.Itoa(p.Version)
	}
	return selector
}

// countedSelected counts a read of id at a selector of the history.
func (l *Local) countedSelected(ctx context.Context, id string, n int) {
	if l.obs.reads.Load() != nil {
		l.counted(ctx, id, strconv.Itoa(n))
	}
}

// countedPrompt counts a get of prompt name, at its served version.
func (l *Local) countedPrompt(ctx context.Context, name string) {
	if l.obs.reads.Load() == nil {
		return
	}
	n := l.hist.prompts.Served(name, l.hist.serveLabel)
	if n == 0 {
		n = l.hist.prompts.Latest(name)
	}
	version := ""
	if n > 0 {
		version = strconv.Itoa(n)
	}
	l.counted(ctx, PromptUsageID(name), version)
}

// CountCatalogRead counts a read of the catalog skill at path
// (skill://<id>[@<version>]/…) when it reads the first bytes of its
// SKILL.md: reading a skill is reading its SKILL.md, whatever other files
// a reader fetches, and a file fetched in chunks is one read.
func (l *Local) CountCatalogRead(ctx context.Context, path, file string, offset int64) {
	if l.obs.reads.Load() == nil || offset != 0 || file != skillsext.FileName {
		return
	}
	id, sel, _ := strings.Cut(path, registry.SelectorSep)
	l.counted(ctx, id, l.ReadVersion(id, sel))
}

// The kinds of Event.
const (
	EventRegister   = "register"   // a skill id registered (for the first time, or again after an unregister)
	EventVersion    = "version"    // a new version of a registered skill
	EventLabel      = "label"      // a label moved to another version
	EventRollback   = "rollback"   // an earlier version's content registered again as the newest version
	EventUnregister = "unregister" // a skill removed
	EventYank       = "yank"       // a version withdrawn
	EventUnyank     = "unyank"     // a withdrawn version served again
	EventDeprecate  = "deprecate"  // a skill or version marked deprecated
)

// Event is one change of a skill this registry instance made: never one
// applied from another instance sharing its state, nor a folder's. It is
// told once the change is durable, on the instance that made it, so what
// it feeds (webhooks, the change feed) sees each change once.
type Event struct {
	Op      string    `json:"type"`
	ID      string    `json:"id"`
	Version int       `json:"version,omitempty"`
	Label   string    `json:"label,omitempty"`
	At      time.Time `json:"at"`
	// Previous is the version a moved label pointed at before (0: the
	// label is new).
	Previous int `json:"previous,omitempty"`
	// RolledBack is the version whose content a rollback registered again.
	RolledBack int    `json:"rolled_back,omitempty"`
	Author     string `json:"author,omitempty"`
	// Message is a version's message, or a deprecation's ("" with
	// EventDeprecate: the deprecation was removed).
	Message string `json:"message,omitempty"`
	// Reason is why a version was yanked.
	Reason string `json:"reason,omitempty"`
}

// OnEvent calls fn with every change this instance makes, in the writer's
// path once the change is durable, until cancel. fn may do I/O (a durable
// log, a webhook queue) but should be quick: the write waits for it.
func (l *Local) OnEvent(fn func(ctx context.Context, e Event)) (cancel func()) {
	l.obs.mu.Lock()
	defer l.obs.mu.Unlock()
	if l.obs.events == nil {
		l.obs.events = map[int]func(context.Context, Event){}
	}
	n := l.obs.next
	l.obs.next++
	l.obs.events[n] = fn
	return func() {
		l.obs.mu.Lock()
		defer l.obs.mu.Unlock()
		delete(l.obs.events, n)
	}
}

// emit tells OnEvent subscribers of e.
func (l *Local) emit(ctx context.Context, e Event) {
	l.obs.mu.Lock()
	fns := make([]func(context.Context, Event), 0, len(l.obs.events))
	for _, fn := range l.obs.events {
		fns = append(fns, fn)
	}
	l.obs.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	// The write is done: a caller that went away must not stop its
	// announcement half way.
	ctx = context.WithoutCancel(ctx)
	for _, fn := range fns {
		fn(ctx, e)
	}
}

// UsageInput is a decoded skills::usage request.
type UsageInput struct {
	// ID keeps one skill ("" for all); Since counts from that day on (zero:
	// all-time); Limit keeps the most read ones (0: all; DefaultUsageLimit
	// without an ID).
	ID    string
	Since time.Time
	Limit int
}

// Bounds of skills::usage's limit: without one an answer lists the 1 000
// most read skill versions (every one read, on a large catalog, would
// outgrow an engine frame); with an id it lists every version.
const (
	DefaultUsageLimit = 1000
	MaxUsageLimit     = 10000
)

const usageShape = `{"id": "<skill id>" (optional), "since": "YYYY-MM-DD" or an RFC 3339 time (optional), "limit": 1..10000 (optional)}`

// DecodeUsageInput decodes the input of skills::usage (fn).
func DecodeUsageInput(fn string, data json.RawMessage) (UsageInput, error) {
	var in UsageInput
	a, err := decodeArgs(fn, data, usageShape, false, "id", "since", "limit")
	if err != nil {
		return in, err
	}
	if in.ID, err = a.String("id", false, 0, "a skill id"); err != nil {
		return in, err
	}
	if in.ID != "" && !strings.HasPrefix(in.ID, "prompt:") {
		if err := registry.ValidateID(in.ID); err != nil {
			return in, a.Bad("id %q is not a skill id: %v", in.ID, err)
		}
	}
	since, err := a.String("since", false, 0, `a date ("2026-11-28") or an RFC 3339 time`)
	if err != nil {
		return in, err
	}
	if since != "" {
		if in.Since, err = time.Parse(time.DateOnly, since); err != nil {
			if in.Since, err = time.Parse(time.RFC3339, since); err != nil {
				return in, a.Bad(`since must be a date ("2026-11-28") or an RFC 3339 time ("2026-11-28T10:00:00Z"), got %q`, since)
			}
		}
	}
	def := int64(DefaultUsageLimit)
	if in.ID != "" {
		def = 0
	}
	limit, err := a.Integer("limit", 1, MaxUsageLimit, def)
	if err != nil {
		return in, err
	}
	in.Limit = int(limit)
	return in, nil
}

// ChangesInput is a decoded skills::changes request.
type ChangesInput struct {
	// After is the cursor the changes listed follow (0: from the oldest
	// kept); Limit how many at most.
	After int64
	Limit int
}

// Bounds of skills::changes.
const (
	DefaultChangesLimit = 100
	MaxChangesLimit     = 1000
)

const changesShape = `{"after": <cursor> (optional), "limit": 1..1000 (optional)}`

// DecodeChangesInput decodes the input of skills::changes (fn).
func DecodeChangesInput(fn string, data json.RawMessage) (ChangesInput, error) {
	in := ChangesInput{Limit: DefaultChangesLimit}
	a, err := decodeArgs(fn, data, changesShape, false, "after", "limit")
	if err != nil {
		return in, err
	}
	const maxCursor = 1 << 53 // exact in JSON numbers
	if in.After, err = a.Integer("after", 0, maxCursor, 0); err != nil {
		return in, err
	}
	limit, err := a.Integer("limit", 1, MaxChangesLimit, DefaultChangesLimit)
	if err != nil {
		return in, err
	}
	in.Limit = int(limit)
	return in, nil
}
