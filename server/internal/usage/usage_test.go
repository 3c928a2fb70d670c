package usage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/kv/kvtest"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/usage"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var day0 = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

func newCounter(t testing.TB, o usage.Options) *usage.Counter {
	t.Helper()
	c, err := usage.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func report(t testing.TB, c *usage.Counter, q usage.Query) usage.Report {
	t.Helper()
	r, err := c.Usage(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func flush(t testing.TB, c *usage.Counter) {
	t.Helper()
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Reads are counted per skill version, by surface and by client, with the
// last read time; the report is the same before and after a flush.
func TestCountsBySurfaceClientAndVersion(t *testing.T) {
	clk := &clock{t: day0}
	c := newCounter(t, usage.Options{KV: kv.NewMemoryTable(), Now: clk.Now})
	for range 3 {
		c.Read("acme/deploy", "2", surface.MCP, "claude-code")
	}
	c.Read("acme/deploy", "2", surface.III, "billing-worker")
	clk.Add(time.Minute)
	c.Read("acme/deploy", "2", surface.RPC, "rpc")
	c.Read("acme/deploy", "1", surface.Web, "web")
	c.Read("acme/other", "", surface.MCP, "cursor")
	c.Read("acme/deploy", "2", surface.Surface(9), "nobody") // not a surface: not counted

	want := usage.SkillUsage{ID: "acme/deploy", Version: "2", Totals: usage.Totals{
		Reads:      5,
		BySurface:  map[string]uint64{"mcp": 3, "iii": 1, "rpc": 1},
		ByClient:   map[string]uint64{"claude-code": 3, "billing-worker": 1, "rpc": 1},
		LastReadAt: day0.Add(time.Minute),
	}, Days: []usage.DayUsage{{Date: "2026-11-20", Reads: 5, ByClient: map[string]uint64{"claude-code": 3, "billing-worker": 1, "rpc": 1}}}}
	for _, when := range []string{"before the flush", "after the flush"} {
		r := report(t, c, usage.Query{ID: "acme/deploy"})
		if len(r.Skills) != 2 || r.Other != nil {
			t.Fatalf("%s: %+v; want the two versions of acme/deploy", when, r)
		}
		if !reflect.DeepEqual(r.Skills[0], want) {
			t.Fatalf("%s: %+v\nwant %+v", when, r.Skills[0], want)
		}
		if v1 := r.Skills[1]; v1.Version != "1" || v1.Reads != 1 || v1.BySurface["web"] != 1 {
			t.Fatalf("%s: version 1 = %+v", when, v1)
		}
		flush(t, c)
	}
	all := report(t, c, usage.Query{})
	if len(all.Skills) != 3 || all.Skills[0].ID != "acme/deploy" || all.Skills[2].ID != "acme/other" || all.Skills[0].Days != nil {
		t.Fatalf("every skill: %+v; want 3 entries, most read first, without days", all.Skills)
	}
	if r := report(t, c, usage.Query{Limit: 1}); len(r.Skills) != 1 || r.Skills[0].Reads != 5 {
		t.Fatalf("limit 1: %+v", r.Skills)
	}
	// Another id sharing a prefix is not mixed in.
	c.Read("acme/deploy-2", "", surface.MCP, "x")
	if r := report(t, c, usage.Query{ID: "acme/deploy"}); len(r.Skills) != 2 {
		t.Fatalf("acme/deploy after a read of acme/deploy-2: %+v", r.Skills)
	}
	if _, err := c.Usage(context.Background(), usage.Query{Limit: -1}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("negative limit: %v", err)
	}
}

// The JSON names are the ones skills::usage answers with.
func TestReportJSON(t *testing.T) {
	clk := &clock{t: day0}
	c := newCounter(t, usage.Options{KV: kv.NewMemoryTable(), Now: clk.Now})
	c.Read("a/b", "3", surface.III, "w")
	b, err := json.Marshal(report(t, c, usage.Query{ID: "a/b"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"skills":[{"id":"a/b","version":"3","reads":1,"by_surface":{"iii":1},"by_client":{"w":1},"last_read_at":"2026-11-20T09:30:00Z","days":[{"date":"2026-11-20","reads":1,"by_client":{"w":1}}]}]}`
	if string(b) != want {
		t.Fatalf("JSON\n%s\nwant\n%s", b, want)
	}
}

// Counts survive a restart: a counter on a reopened store file sees what
// the last one flushed and adds to it.
func TestCountsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	clk := &clock{t: day0}
	open := func() (*store.Store, *usage.Counter) {
		st, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return st, newCounter(t, usage.Options{KV: kv.TableOf(kv.Local(st), "usage"), Node: "n1", Now: clk.Now})
	}
	st, c := open()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	for i := range 40 {
		c.Read("team/skill", "1", surface.MCP, fmt.Sprintf("client-%d", i%4))
	}
	cancel() // a clean stop flushes
	<-done
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	clk.Add(24 * time.Hour)
	st, c = open()
	defer st.Close()
	c.Read("team/skill", "1", surface.III, "client-0")
	r := report(t, c, usage.Query{ID: "team/skill"})
	if len(r.Skills) != 1 || r.Skills[0].Reads != 41 || r.Skills[0].ByClient["client-0"] != 11 || len(r.Skills[0].Days) != 2 {
		t.Fatalf("after a restart: %+v; want 41 reads (11 by client-0) over 2 days", r.Skills)
	}
	flush(t, c)
	if r2 := report(t, c, usage.Query{ID: "team/skill"}); !reflect.DeepEqual(r, r2) {
		t.Fatalf("flushing changed the report:\n%+v\n%+v", r, r2)
	}
}

// Nodes sharing one store each write their own rows; every node's report
// sums them all, plus its own unflushed reads.
func TestNodesSumTheirCounts(t *testing.T) {
	shared := kv.NewMemoryTable()
	clk := &clock{t: day0}
	a := newCounter(t, usage.Options{KV: shared, Node: "node-a", Now: clk.Now})
	b := newCounter(t, usage.Options{KV: shared, Node: "node-b", Now: clk.Now})
	var wg sync.WaitGroup
	for _, c := range []*usage.Counter{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				c.Read("x/y", "7", surface.Surface(i%surface.Count), "agent")
				if i%100 == 99 {
					flush(t, c)
				}
			}
		}()
	}
	wg.Wait()
	flush(t, a) // b keeps its last reads pending... it flushed at 500 too; add some pending
	b.Read("x/y", "7", surface.Web, "late")
	for name, c := range map[string]*usage.Counter{"a": a, "b": b} {
		r := report(t, c, usage.Query{ID: "x/y"})
		want := uint64(1000)
		if name == "b" {
			want = 1001 // its own pending read
		}
		if len(r.Skills) != 1 || r.Skills[0].Reads != want || r.Skills[0].ByClient["agent"] != 1000 {
			t.Fatalf("node %s: %+v; want %d reads, 1000 by agent", name, r.Skills, want)
		}
		// 1 000 reads over the surfaces in turn (2 nodes × 500), b's late one on the web.
		for _, sf := range surface.All() {
			want := uint64(1000 / surface.Count)
			if sf == surface.Web && name == "b" {
				want++
			}
			if got := r.Skills[0].BySurface[sf.String()]; got != want {
				t.Fatalf("node %s by surface %v: %s has %d; want %d", name, r.Skills[0].BySurface, sf, got, want)
			}
		}
	}
	if n := shared.Len(); n != 2 {
		t.Fatalf("%d rows; want one per node", n)
	}
}

// Past MaxClients a skill's clients are counted as "other"; the total is
// kept.
func TestClientsPerSkillAreBounded(t *testing.T) {
	c := newCounter(t, usage.Options{KV: kv.NewMemoryTable(), MaxClients: 4})
	for i := range 100 {
		c.Read("a/b", "", surface.MCP, fmt.Sprintf("client-%03d", i))
	}
	check := func(when string) {
		r := report(t, c, usage.Query{ID: "a/b"})
		u := r.Skills[0]
		if u.Reads != 100 || len(u.ByClient) != 5 || u.ByClient["other"] != 96 {
			t.Fatalf("%s: %d reads by %v; want 100, 4 clients named and 96 as other", when, u.Reads, u.ByClient)
		}
	}
	check("pending")
	flush(t, c)
	check("flushed")
	// New clients after the flush join "other" in the stored row too.
	c.Read("a/b", "", surface.MCP, "client-new")
	flush(t, c)
	if u := report(t, c, usage.Query{ID: "a/b"}).Skills[0]; len(u.ByClient) != 5 || u.ByClient["other"] != 97 {
		t.Fatalf("after a new client: %v", u.ByClient)
	}
}

// Client names are bounded and cleaned: user input never grows a name past
// 64 bytes nor carries control characters.
func TestClientNamesAreCleaned(t *testing.T) {
	c := newCounter(t, usage.Options{KV: kv.NewMemoryTable()})
	long := strings.Repeat("é", 100)
	for _, name := range []string{"", "  ", "evil\x1b[31m\nname", long, "\xff\xfe", "ok-name"} {
		c.Read("a/b", "", surface.MCP, name)
	}
	got := report(t, c, usage.Query{ID: "a/b"}).Skills[0].ByClient
	want := map[string]uint64{"unknown": 2, "evil?[31m?name": 1, strings.Repeat("é", 32): 1, "??": 1, "ok-name": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("clients %q; want %q", got, want)
	}
}

// When the table of pending entries is full, reads of new skills are
// counted as "other" and a flush starts at once; after it, new skills are
// counted by name again. No read is lost.
func TestPendingTableIsBounded(t *testing.T) {
	mem := kv.NewMemoryTable()
	c := newCounter(t, usage.Options{KV: mem, MaxPending: 10, FlushInterval: time.Hour})
	for i := range 50 {
		c.Read(fmt.Sprintf("s/%d", i), "", surface.III, "w")
	}
	if st := c.Stats(); st.Pending > 10+64 || st.Overflowed != 40 {
		t.Fatalf("stats %+v; want at most 10 entries (+ an other entry per shard) and 40 reads overflowed", st)
	}
	r := report(t, c, usage.Query{})
	if len(r.Skills) != 10 || r.Other == nil || r.Other.Reads != 40 || r.Other.ByClient["w"] != 40 {
		t.Fatalf("report %d skills, other %+v; want 10 and 40 other reads", len(r.Skills), r.Other)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx) // the full table asked for a flush: it runs at once, not in an hour
	testutil.Eventually(t, 10*time.Second, "the full table to be flushed", func() bool { return c.Stats().Pending == 0 })
	c.Read("s/late", "", surface.III, "w")
	r = report(t, c, usage.Query{})
	total := r.Other.Reads
	for _, s := range r.Skills {
		total += s.Reads
	}
	if total != 51 || r.Skills[len(r.Skills)-1].ID == "" {
		t.Fatalf("after the flush: %d reads counted; want 51", total)
	}
	if r := report(t, c, usage.Query{ID: "s/late"}); len(r.Skills) != 1 {
		t.Fatalf("a skill read after the flush is not counted by name: %+v", r)
	}
}

// Since counts the days from that day on (within the days kept); day
// buckets older than Days are dropped at the next flush.
func TestSinceAndDayBuckets(t *testing.T) {
	clk := &clock{t: day0}
	c := newCounter(t, usage.Options{KV: kv.NewMemoryTable(), Now: clk.Now, Days: 3})
	for d := range 5 {
		for range d + 1 {
			c.Read("a/b", "", surface.MCP, fmt.Sprintf("day-%d", d))
		}
		flush(t, c)
		clk.Add(24 * time.Hour)
	}
	clk.Add(-24 * time.Hour) // back to the last day read: 2026-11-24
	r := report(t, c, usage.Query{ID: "a/b"})
	u := r.Skills[0]
	if u.Reads != 15 {
		t.Fatalf("all-time reads %d; want 15", u.Reads)
	}
	var dates []string
	for _, d := range u.Days {
		dates = append(dates, d.Date)
	}
	if !reflect.DeepEqual(dates, []string{"2026-11-22", "2026-11-23", "2026-11-24"}) {
		t.Fatalf("days kept %v; want the last 3", dates)
	}
	if d := u.Days[2]; d.Reads != 5 || d.ByClient["day-4"] != 5 {
		t.Fatalf("last day %+v", d)
	}
	r = report(t, c, usage.Query{ID: "a/b", Since: time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC)})
	if r.Since != "2026-11-23" || r.Skills[0].Reads != 9 || len(r.Skills[0].Days) != 2 || r.Skills[0].ByClient["day-2"] != 0 {
		t.Fatalf("since the 23rd: %+v", r)
	}
	r = report(t, c, usage.Query{Since: day0.AddDate(-1, 0, 0)})
	if r.Since != "2026-11-22" || r.Skills[0].Reads != 12 {
		t.Fatalf("since a year ago (clamped to the days kept): since %s, %d reads; want 2026-11-22 and 12", r.Since, r.Skills[0].Reads)
	}
	if r := report(t, c, usage.Query{Since: day0.AddDate(0, 0, 10)}); len(r.Skills) != 0 {
		t.Fatalf("since a future day: %+v; want nothing", r.Skills)
	}
}

// A flush that cannot write keeps the counts and the next one writes them,
// once.
func TestFailedFlushKeepsCounts(t *testing.T) {
	flaky := &kvtest.Flaky{Table: kv.NewMemoryTable()}
	c := newCounter(t, usage.Options{KV: flaky})
	for range 10 {
		c.Read("a/b", "", surface.MCP, "x")
	}
	flaky.Down.Store(true)
	if err := c.Flush(context.Background()); err == nil || !strings.Contains(err.Error(), "kept for the next flush") {
		t.Fatalf("flush with the store down: %v", err)
	}
	if st := c.Stats(); st.Pending != 1 || st.FlushErrors != 1 {
		t.Fatalf("stats after a failed flush %+v", st)
	}
	c.Read("a/b", "", surface.MCP, "x")
	flaky.Down.Store(false)
	flush(t, c)
	flush(t, c)
	if r := report(t, c, usage.Query{ID: "a/b"}); r.Skills[0].Reads != 11 {
		t.Fatalf("after recovering: %d reads; want 11", r.Skills[0].Reads)
	}
	if flaky.Writes.Load() != 1 {
		t.Fatalf("%d writes; want 1 (the empty flush writes nothing)", flaky.Writes.Load())
	}
}

// Concurrent readers, flushes and reports lose and double nothing.
func TestConcurrentReadsAndFlushes(t *testing.T) {
	c := newCounter(t, usage.Options{KV: kv.NewMemoryTable(), MaxPending: 50})
	const readers, each = 8, 3000
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c.Read(fmt.Sprintf("s/%d", (i*7+r)%200), "", surface.Surface(i%surface.Count), fmt.Sprintf("c%d", r))
			}
		}()
	}
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				_ = c.Flush(context.Background())
				_ = report(t, c, usage.Query{})
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-flushed
	flush(t, c)
	r := report(t, c, usage.Query{})
	total := uint64(0)
	for _, s := range r.Skills {
		total += s.Reads
	}
	if r.Other != nil {
		total += r.Other.Reads
	}
	if total != readers*each {
		t.Fatalf("%d reads counted; want %d", total, readers*each)
	}
}

func TestNewNeedsAStore(t *testing.T) {
	if _, err := usage.New(usage.Options{}); err == nil || !strings.Contains(err.Error(), "KV is required") {
		t.Fatalf("New without a store: %v", err)
	}
}
