package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/iii-skills/skills/server/internal/surface"
)

// row is what one node stored for one skill version: its cumulative counts
// and the day buckets of the last Days days. Only that node writes it.
type row struct {
	ID         string               `json:"id"`
	Version    string               `json:"version,omitempty"`
	Node       string               `json:"node"`
	Reads      uint64               `json:"reads"`
	BySurface  map[string]uint64    `json:"by_surface,omitempty"`
	ByClient   map[string]uint64    `json:"by_client,omitempty"`
	LastReadAt time.Time            `json:"last_read_at"`
	Days       map[string]*dayTotal `json:"days,omitempty"` // YYYY-MM-DD → that day's counts
}

// dayTotal is one day of a row.
type dayTotal struct {
	Reads     uint64            `json:"reads"`
	BySurface map[string]uint64 `json:"by_surface,omitempty"`
	ByClient  map[string]uint64 `json:"by_client,omitempty"`
}

// rowID names a row's skill version; id "" is the "other" row.
type rowID struct{ id, version string }

// rowKey is the key of a node's row: <id>@<version>@<node>, each part with
// '%' and '@' escaped, so that idPrefix(id) matches that id's rows only.
func rowKey(id, version, node string) string {
	return escape(id) + "@" + escape(version) + "@" + escape(node)
}

func idPrefix(id string) string { return escape(id) + "@" }

var escaper = strings.NewReplacer("%", "%25", "@", "%40")

func escape(s string) string { return escaper.Replace(s) }

// add counts c (the reads of one day) into the row, naming at most
// maxClients clients and keeping the day buckets from oldest on.
func (r *row) add(day string, c *counts, maxClients int) {
	r.Reads += c.reads
	r.BySurface = addSurfaces(r.BySurface, c)
	r.ByClient = addClients(r.ByClient, c, maxClients)
	if last := time.Unix(0, c.last).UTC(); last.After(r.LastReadAt) {
		r.LastReadAt = last
	}
	if r.Days == nil {
		r.Days = make(map[string]*dayTotal)
	}
	d := r.Days[day]
	if d == nil {
		d = &dayTotal{}
		r.Days[day] = d
	}
	d.Reads += c.reads
	d.BySurface = addSurfaces(d.BySurface, c)
	d.ByClient = addClients(d.ByClient, c, maxClients)
}

// trim drops the day buckets before oldest (YYYY-MM-DD compares as text).
func (r *row) trim(oldest string) {
	for d := range r.Days {
		if d < oldest {
			delete(r.Days, d)
		}
	}
}

func addSurfaces(m map[string]uint64, c *counts) map[string]uint64 {
	for i, n := range c.bySurface {
		if n > 0 {
			if m == nil {
				m = make(map[string]uint64, surface.Count)
			}
			m[surface.Surface(i).String()] += n
		}
	}
	return m
}

func addClients(m map[string]uint64, c *counts, maxClients int) map[string]uint64 {
	if m == nil && (len(c.clients) > 0 || c.other > 0) {
		m = make(map[string]uint64, len(c.clients)+1)
	}
	named := len(m)
	if _, ok := m[OtherClient]; ok {
		named--
	}
	for _, cc := range c.clients {
		if _, ok := m[cc.name]; !ok {
			if named >= maxClients {
				m[OtherClient] += cc.n
				continue
			}
			named++
		}
		m[cc.name] += cc.n
	}
	if c.other > 0 {
		m[OtherClient] += c.other
	}
	return m
}

// take empties the pending table and returns its entries grouped by row.
func (c *Counter) take() map[rowID]map[int32]*counts {
	out := make(map[rowID]map[int32]*counts)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		m := sh.m
		if len(m) > 0 {
			sh.m = make(map[entryKey]*counts, len(m)/2)
		} else {
			m = nil // the shard keeps its empty map: never read it unlocked
		}
		sh.mu.Unlock()
		c.pending.Add(-int64(len(m)))
		for k, e := range m {
			id := rowID{k.id, k.version}
			days := out[id]
			if days == nil {
				days = make(map[int32]*counts, 1)
				out[id] = days
			}
			if prev := days[k.day]; prev != nil {
				// "other" entries of one day sit in several shards.
				prev.merge(e, c.opts.MaxClients)
				continue
			}
			days[k.day] = e
		}
	}
	return out
}

// restore puts back the counts of a row a flush could not write, so the
// next flush tries again; past MaxPending they go to "other".
func (c *Counter) restore(id rowID, days map[int32]*counts) {
	sh := c.shardOf(id.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for day, e := range days {
		k := entryKey{id: id.id, version: id.version, day: day}
		cur := sh.m[k]
		if cur == nil {
			if k.id != "" && c.pending.Load() >= int64(c.opts.MaxPending) {
				c.overflowed.Add(e.reads)
				k = entryKey{day: day}
				cur = sh.m[k]
			}
			if cur == nil {
				sh.m[k] = e
				c.pending.Add(1)
				continue
			}
		}
		cur.merge(e, c.opts.MaxClients)
	}
}

// flushWorkers is how many rows a flush writes at once: a store with group
// commit makes them durable together.
const flushWorkers = 8

// Flush writes every pending count into the node's rows. Counts of a row
// it could not write stay pending for the next flush, and Flush returns
// the first error. One flush runs at a time.
func (c *Counter) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	taken := c.take()
	if len(taken) == 0 {
		c.flushes.Add(1)
		return nil
	}
	today := dayOf(c.opts.Now())
	oldest := dayString(today - int32(c.opts.Days) + 1)

	type job struct {
		id   rowID
		days map[int32]*counts
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var errs []error
	failed := 0
	var wg sync.WaitGroup
	for range min(flushWorkers, len(taken)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := c.writeRow(ctx, j.id, j.days, oldest); err != nil {
					c.restore(j.id, j.days)
					mu.Lock()
					if len(errs) < 3 {
						errs = append(errs, err)
					}
					failed++
					mu.Unlock()
				}
			}
		}()
	}
	for id, days := range taken {
		jobs <- job{id, days}
	}
	close(jobs)
	wg.Wait()
	if failed > 0 {
		c.flushErrors.Add(1)
		return fmt.Errorf("usage: %d of %d rows not written (kept for the next flush): %w", failed, len(taken), errors.Join(errs...))
	}
	c.flushes.Add(1)
	return nil
}

// writeRow adds one row's pending days to what the node stored.
func (c *Counter) writeRow(ctx context.Context, id rowID, days map[int32]*counts, oldest string) error {
	key := rowKey(id.id, id.version, c.opts.Node)
	r := row{ID: id.id, Version: id.version, Node: c.opts.Node}
	raw, ok, err := c.opts.KV.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if ok {
		var stored row
		if err := json.Unmarshal(raw, &stored); err != nil || stored.ID != id.id || stored.Node != c.opts.Node {
			// Not a row this node wrote: counting starts again rather
			// than stopping every later flush of this skill.
			c.opts.Logger.Warn("usage: a stored row is unreadable; its counts start again", "key", key, "error", err)
		} else {
			r = stored
		}
	}
	for day, e := range days {
		r.add(dayString(day), e, c.opts.MaxClients)
	}
	r.trim(oldest)
	b, err := json.Marshal(&r)
	if err != nil {
		return err
	}
	if err := c.opts.KV.Set(ctx, key, b); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}
