package usage

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/surface"
)

// Defaults of Options.
const (
	DefaultFlushInterval = 10 * time.Second
	DefaultMaxPending    = 20000
	DefaultMaxClients    = 16
	DefaultDays          = 30
	// MaxClientBytes is the longest client name kept; longer ones are cut.
	MaxClientBytes = 64
)

// Client names with a meaning of their own.
const (
	// OtherClient counts the reads of clients past MaxClients.
	OtherClient = "other"
	// UnknownClient is the client of a read that named none.
	UnknownClient = "unknown"
)

const shardCount = 64 // a power of two

// Options configures a Counter.
type Options struct {
	// KV is where the counts are kept (required).
	KV kv.Table
	// Node names this node in the rows it writes; nodes sharing a KV must
	// have different names (default "local").
	Node string
	// FlushInterval is how often Run writes the pending counts (default
	// 10 s).
	FlushInterval time.Duration
	// MaxPending bounds the distinct (skill, version, day) entries counted
	// between two flushes (default 20 000).
	MaxPending int
	// MaxClients bounds the clients named per entry and per row (default
	// 16); the others are counted as "other".
	MaxClients int
	// Days is how many day buckets a row keeps (default 30).
	Days int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives flush failures (default slog.Default()).
	Logger *slog.Logger
}

// Counter counts reads. Read is safe for concurrent use and never blocks
// on I/O; Flush, Run and Usage may be called from any goroutine.
type Counter struct {
	opts Options
	seed maphash.Seed

	// clock is the time of reads (unix nanoseconds), kept by Run to the
	// second: reading the system clock on every read cost a third of
	// Read. 0 while Run is not running: Read then asks Options.Now.
	clock atomic.Int64

	shards  [shardCount]shard
	pending atomic.Int64  // entries in the shards
	full    chan struct{} // a flush is wanted now (the table is full)

	flushMu sync.Mutex // one flush at a time; Usage waits for it

	names names // client names, each kept once

	overflowed  atomic.Uint64 // reads counted as "other" because the table was full
	flushErrors atomic.Uint64
	flushes     atomic.Uint64
}

type shard struct {
	mu sync.Mutex
	m  map[entryKey]*counts
	_  [48]byte // one shard per cache line
}

// entryKey is one pending entry: a skill version's reads on one day. The
// id "" is the "other" entry of reads past MaxPending.
type entryKey struct {
	id, version string
	day         int32 // days since 1970-01-01 UTC
}

// counts are the reads of one entry (pending) or one day of a row.
type counts struct {
	reads     uint64
	bySurface [surface.Count]uint64
	clients   []clientCount // at most MaxClients
	other     uint64        // reads of clients past MaxClients
	last      int64         // unix nanoseconds of the last read
}

type clientCount struct {
	name string
	n    uint64
}

// New returns a Counter; call Run to flush it periodically.
func New(opts Options) (*Counter, error) {
	if opts.KV == nil {
		return nil, errors.New("usage: Options.KV is required: the store the counts are kept in")
	}
	if opts.Node == "" {
		opts.Node = "local"
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = DefaultMaxClients
	}
	if opts.Days <= 0 {
		opts.Days = DefaultDays
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Counter{opts: opts, seed: maphash.MakeSeed(), full: make(chan struct{}, 1)}
	for i := range c.shards {
		c.shards[i].m = make(map[entryKey]*counts)
	}
	return c, nil
}

// Read counts one read of skill id at version (empty for a skill without
// versions) on surface s by client. It takes a shard's lock for a map
// look-up and a few increments, never I/O.
func (c *Counter) Read(id, version string, s surface.Surface, client string) {
	if !s.Valid() {
		return
	}
	now := c.clock.Load()
	if now == 0 {
		now = c.opts.Now().UnixNano()
	}
	k := entryKey{id: id, version: version, day: dayOfNanos(now)}
	client = cleanClient(client)
	sh := c.shardOf(id)
	sh.mu.Lock()
	e := sh.m[k]
	if e == nil {
		e = c.newEntry(sh, k)
	}
	e.add(s, client, now, c.opts.MaxClients, &c.names)
	sh.mu.Unlock()
}

func (c *Counter) shardOf(id string) *shard {
	return &c.shards[maphash.String(c.seed, id)&(shardCount-1)]
}

// newEntry adds k to sh (locked), or returns the shard's "other" entry of
// that day when the table is full.
func (c *Counter) newEntry(sh *shard, k entryKey) *counts {
	if k.id != "" && c.pending.Load() >= int64(c.opts.MaxPending) {
		c.overflowed.Add(1)
		k = entryKey{day: k.day}
		if e := sh.m[k]; e != nil {
			return e
		}
	} else {
		// The caller's strings may point into a larger buffer: keep
		// copies, made once per entry.
		k.id, k.version = strings.Clone(k.id), strings.Clone(k.version)
	}
	e := &counts{}
	sh.m[k] = e
	if c.pending.Add(1) >= int64(c.opts.MaxPending) {
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
	return e
}

// add counts one read; a client new to the entry is kept through names.
func (e *counts) add(s surface.Surface, client string, at int64, maxClients int, names *names) {
	e.reads++
	e.bySurface[s]++
	e.addClient(client, 1, maxClients, names)
	if at > e.last {
		e.last = at
	}
}

// addClient adds n reads of client, as "other" once maxClients are named.
// A client new to the entry is kept through names (nil: client is kept as
// it is, it belongs to the counter already).
func (e *counts) addClient(client string, n uint64, maxClients int, names *names) {
	if client == OtherClient {
		e.other += n
		return
	}
	for i := range e.clients {
		if e.clients[i].name == client {
			e.clients[i].n += n
			return
		}
	}
	if len(e.clients) >= maxClients {
		e.other += n
		return
	}
	if names != nil {
		client = names.keep(client)
	}
	e.clients = append(e.clients, clientCount{name: client, n: n})
}

// merge adds o into e.
func (e *counts) merge(o *counts, maxClients int) {
	e.reads += o.reads
	for i, n := range o.bySurface {
		e.bySurface[i] += n
	}
	for _, cc := range o.clients {
		e.addClient(cc.name, cc.n, maxClients, nil)
	}
	e.other += o.other
	e.last = max(e.last, o.last)
}

// maxNames bounds the names table: past it a name is copied per entry
// instead of shared (a client inventing names costs memory per entry, still
// bounded by MaxPending × MaxClients).
const maxNames = 4096

// names keeps one copy of each client name for every entry that counts
// it: 20 000 entries naming 16 clients each would otherwise hold 320 000
// copies. It is consulted only when a client is new to an entry.
type names struct {
	m sync.Map // string → string
	n atomic.Int64
}

func (t *names) keep(name string) string {
	if v, ok := t.m.Load(name); ok {
		return v.(string)
	}
	own := strings.Clone(name)
	if t.n.Load() >= maxNames {
		return own
	}
	if v, loaded := t.m.LoadOrStore(own, own); loaded {
		return v.(string)
	}
	t.n.Add(1)
	return own
}

// Run flushes the pending counts every FlushInterval, and at once when the
// table of pending entries is full, until ctx ends; then it flushes one
// last time (bounded by 10 s) and returns.
//
// While it runs it also keeps the time reads are stamped with, to the
// second (clockTick).
func (c *Counter) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.FlushInterval)
	defer t.Stop()
	tick := time.NewTicker(clockTick)
	defer tick.Stop()
	c.clock.Store(c.opts.Now().UnixNano())
	defer c.clock.Store(0)
	for {
		select {
		case <-ctx.Done():
			c.clock.Store(0)
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = c.flushLogged(final)
			cancel()
			return
		case <-tick.C:
			c.clock.Store(c.opts.Now().UnixNano())
			continue
		case <-t.C:
		case <-c.full:
		}
		c.clock.Store(c.opts.Now().UnixNano())
		_ = c.flushLogged(ctx)
	}
}

// clockTick is how often Run updates the time reads are stamped with.
const clockTick = time.Second

func (c *Counter) flushLogged(ctx context.Context) error {
	err := c.Flush(ctx)
	if err != nil {
		c.opts.Logger.Warn("usage: flushing read counts failed; they are kept and tried again at the next flush", "error", err)
	}
	return err
}

// Stats describe the counter, for metrics.
type Stats struct {
	Pending     int    // entries waiting for the next flush
	Overflowed  uint64 // reads counted as "other" because the table was full
	Flushes     uint64 // flushes that wrote everything
	FlushErrors uint64 // flushes that failed (their counts were kept)
}

// Stats returns the counter's figures.
func (c *Counter) Stats() Stats {
	return Stats{Pending: int(c.pending.Load()), Overflowed: c.overflowed.Load(),
		Flushes: c.flushes.Load(), FlushErrors: c.flushErrors.Load()}
}

// dayOf is t's day number since 1970-01-01 UTC.
func dayOf(t time.Time) int32 { return dayOfNanos(t.UnixNano()) }

func dayOfNanos(ns int64) int32 {
	const day = int64(24 * time.Hour)
	if ns < 0 {
		return int32((ns - day + 1) / day)
	}
	return int32(ns / day)
}

// dayString is the date of day n, YYYY-MM-DD.
func dayString(n int32) string { return time.Unix(int64(n)*86400, 0).UTC().Format(time.DateOnly) }

// cleanClient bounds a client name: at most MaxClientBytes of valid UTF-8,
// no control characters or surrounding spaces, "unknown" when empty. A
// name that needs no change is returned as it is, without allocating.
func cleanClient(name string) string {
	if clientOK(name) {
		return name
	}
	var b strings.Builder
	for _, r := range strings.TrimSpace(name) {
		if isControl(r) || r == utf8.RuneError {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > MaxClientBytes {
			break
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return UnknownClient
	}
	return b.String()
}

func clientOK(name string) bool {
	n := len(name)
	if n == 0 || n > MaxClientBytes || name[0] == ' ' || name[n-1] == ' ' {
		return false
	}
	for i := 0; i < n; i++ {
		b := name[i]
		if b < 0x20 || b == 0x7f {
			return false
		}
		if b >= utf8.RuneSelf {
			return nonASCIIClientOK(name)
		}
	}
	return true
}

func nonASCIIClientOK(name string) bool {
	if !utf8.ValidString(name) || strings.TrimSpace(name) != name {
		return false
	}
	for _, r := range name {
		if isControl(r) {
			return false
		}
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }
