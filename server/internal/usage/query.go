package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Query selects what Usage reports.
type Query struct {
	// ID limits the report to one skill (its versions); "" reports every
	// skill read. With an ID each entry carries its day buckets.
	ID string
	// Since counts only the reads from that day on (UTC days, within the
	// last Days days: an earlier Since starts at the oldest day kept).
	// Zero counts every read since counting began.
	Since time.Time
	// Limit keeps the first Limit entries (most read first); 0 keeps all.
	Limit int
}

// Report is the answer of skills::usage.
type Report struct {
	// Skills are the skill versions read, most read first (then by id
	// and version).
	Skills []SkillUsage `json:"skills"`
	// Other counts the reads made while the table of pending counts was
	// full (see the package doc), when there were any.
	Other *Totals `json:"other,omitempty"`
	// Since is the first day counted (YYYY-MM-DD) when Query.Since was
	// given.
	Since string `json:"since,omitempty"`
}

// SkillUsage is the usage of one skill version, summed over every node.
type SkillUsage struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
	Totals
	// Days are the day buckets, oldest first, only when Query.ID was set.
	Days []DayUsage `json:"days,omitempty"`
}

// Totals are counts of reads.
type Totals struct {
	Reads      uint64            `json:"reads"`
	BySurface  map[string]uint64 `json:"by_surface"`
	ByClient   map[string]uint64 `json:"by_client"`
	LastReadAt time.Time         `json:"last_read_at"`
}

// DayUsage is one day of a skill version's reads, by client.
type DayUsage struct {
	Date     string            `json:"date"`
	Reads    uint64            `json:"reads"`
	ByClient map[string]uint64 `json:"by_client"`
}

// Usage reports the reads counted by every node (the rows in the KV) plus
// this node's pending counts. It waits for a flush in progress, so that
// nothing is counted twice or missed.
func (c *Counter) Usage(ctx context.Context, q Query) (Report, error) {
	if q.Limit < 0 {
		return Report{}, fmt.Errorf("usage: limit %d is negative; give 0 for every skill or a positive number", q.Limit)
	}
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	prefix := ""
	if q.ID != "" {
		prefix = idPrefix(q.ID)
	}
	rows, err := c.opts.KV.List(ctx, prefix)
	if err != nil {
		return Report{}, fmt.Errorf("usage: list the stored counts: %w", err)
	}
	sum := make(map[rowID]*row)
	at := func(id rowID) *row {
		r := sum[id]
		if r == nil {
			r = &row{ID: id.id, Version: id.version}
			sum[id] = r
		}
		return r
	}
	// An unlimited number of clients while summing: the nodes' rows were
	// bounded each.
	const unbounded = int(^uint(0) >> 1)
	for _, kr := range rows {
		var r row
		if err := json.Unmarshal(kr.Value, &r); err != nil || (q.ID != "" && r.ID != q.ID) {
			continue // not a usage row (a bad row is left for its node's next flush to replace)
		}
		at(rowID{r.ID, r.Version}).addRow(&r)
	}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if q.ID == "" || k.id == q.ID {
				at(rowID{k.id, k.version}).add(dayString(k.day), e, unbounded)
			}
		}
		sh.mu.Unlock()
	}

	var rep Report
	sinceDay := ""
	if !q.Since.IsZero() {
		first := dayOf(c.opts.Now()) - int32(c.opts.Days) + 1
		sinceDay = dayString(max(dayOf(q.Since), first))
		rep.Since = sinceDay
	}
	rep.Skills = make([]SkillUsage, 0, len(sum))
	for id, r := range sum {
		u := SkillUsage{ID: id.id, Version: id.version, Totals: r.totals(sinceDay)}
		if u.Reads == 0 {
			continue
		}
		if id.id == "" {
			t := u.Totals
			rep.Other = &t
			continue
		}
		if q.ID != "" {
			u.Days = r.dayList(sinceDay)
		}
		rep.Skills = append(rep.Skills, u)
	}
	slices.SortFunc(rep.Skills, func(a, b SkillUsage) int {
		switch {
		case a.Reads != b.Reads:
			if a.Reads > b.Reads {
				return -1
			}
			return 1
		case a.ID != b.ID:
			return strings.Compare(a.ID, b.ID)
		}
		return strings.Compare(a.Version, b.Version)
	})
	if q.Limit > 0 && len(rep.Skills) > q.Limit {
		rep.Skills = rep.Skills[:q.Limit]
	}
	return rep, nil
}

// addRow adds another node's row into r.
func (r *row) addRow(o *row) {
	r.Reads += o.Reads
	r.BySurface = addMap(r.BySurface, o.BySurface)
	r.ByClient = addMap(r.ByClient, o.ByClient)
	if o.LastReadAt.After(r.LastReadAt) {
		r.LastReadAt = o.LastReadAt
	}
	for day, d := range o.Days {
		if r.Days == nil {
			r.Days = make(map[string]*dayTotal)
		}
		t := r.Days[day]
		if t == nil {
			t = &dayTotal{}
			r.Days[day] = t
		}
		t.Reads += d.Reads
		t.BySurface = addMap(t.BySurface, d.BySurface)
		t.ByClient = addMap(t.ByClient, d.ByClient)
	}
}

func addMap(m, o map[string]uint64) map[string]uint64 {
	for k, v := range o {
		if m == nil {
			m = make(map[string]uint64, len(o))
		}
		m[k] += v
	}
	return m
}

// totals are the row's counts: all of them, or those of the days from
// sinceDay on.
func (r *row) totals(sinceDay string) Totals {
	t := Totals{BySurface: map[string]uint64{}, ByClient: map[string]uint64{}, LastReadAt: r.LastReadAt}
	if sinceDay == "" {
		t.Reads = r.Reads
		t.BySurface = addMap(t.BySurface, r.BySurface)
		t.ByClient = addMap(t.ByClient, r.ByClient)
		return t
	}
	for day, d := range r.Days {
		if day >= sinceDay {
			t.Reads += d.Reads
			t.BySurface = addMap(t.BySurface, d.BySurface)
			t.ByClient = addMap(t.ByClient, d.ByClient)
		}
	}
	return t
}

// dayList is the row's day buckets from sinceDay on, oldest first.
func (r *row) dayList(sinceDay string) []DayUsage {
	days := slices.Sorted(maps.Keys(r.Days))
	out := make([]DayUsage, 0, len(days))
	for _, day := range days {
		if day < sinceDay {
			continue
		}
		d := r.Days[day]
		out = append(out, DayUsage{Date: day, Reads: d.Reads, ByClient: addMap(map[string]uint64{}, d.ByClient)})
	}
	return out
}
