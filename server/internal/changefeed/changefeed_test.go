package changefeed_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/changefeed"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const scope = "skills.changes"

func newFeed(t *testing.T, st kv.Store, o changefeed.Options) *changefeed.Feed {
	t.Helper()
	o.Store, o.Scope = st, scope
	f, err := changefeed.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func appendN(t *testing.T, f *changefeed.Feed, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := f.Append(context.Background(), changefeed.Entry{Type: "version", ID: fmt.Sprintf("team/s%d", i), Version: i}); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, f *changefeed.Feed, after int64, limit int) changefeed.Page {
	t.Helper()
	p, err := f.Read(context.Background(), after, limit)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func cursors(p changefeed.Page) []int64 {
	out := make([]int64, len(p.Changes))
	for i, e := range p.Changes {
		out[i] = e.Cursor
	}
	return out
}

// Changes come back in order, a page at a time, each naming its cursor;
// next continues where a page ended, and stays put when nothing is new.
// A store file reopened keeps the cursors going.
func TestFeedPagesInOrderAndSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFeed(t, kv.Local(st), changefeed.Options{Node: "a"})
	appendN(t, f, 1, 5)
	p := read(t, f, 0, 3)
	if got := cursors(p); fmt.Sprint(got) != "[1 2 3]" || p.Next != 3 || p.Truncated {
		t.Fatalf("first page %v next %d truncated %v; want [1 2 3] next 3", got, p.Next, p.Truncated)
	}
	if e := p.Changes[1]; e.Type != "version" || e.ID != "team/s2" || e.Version != 2 || e.Node != "a" || e.At.IsZero() {
		t.Fatalf("entry %+v", e)
	}
	p = read(t, f, p.Next, 3)
	if got := cursors(p); fmt.Sprint(got) != "[4 5]" || p.Next != 5 {
		t.Fatalf("second page %v next %d; want [4 5] next 5", got, p.Next)
	}
	if p = read(t, f, 5, 3); len(p.Changes) != 0 || p.Next != 5 || p.Truncated {
		t.Fatalf("caught up: %+v; want no change, next 5", p)
	}
	_ = st.Close()

	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f = newFeed(t, kv.Local(st), changefeed.Options{Node: "a"})
	appendN(t, f, 6, 1)
	if p = read(t, f, 5, 10); fmt.Sprint(cursors(p)) != "[6]" || p.Changes[0].ID != "team/s6" {
		t.Fatalf("after a restart: %+v; want cursor 6 for team/s6", p)
	}
}

// The ring keeps the last Retain changes: a cursor older than that starts
// at the oldest kept, marked truncated, and so does a cursor from the
// future (state reset); no cursor starts at the oldest without the mark.
func TestFeedIsBoundedAndSaysWhenChangesWereDropped(t *testing.T) {
	st := store.OpenMemory()
	defer st.Close()
	f := newFeed(t, kv.Local(st), changefeed.Options{Retain: 5})
	appendN(t, f, 1, 12)
	p := read(t, f, 2, 100)
	if got := cursors(p); fmt.Sprint(got) != "[8 9 10 11 12]" || !p.Truncated || p.Next != 12 {
		t.Fatalf("an old cursor: %v truncated %v next %d; want [8 … 12] truncated", got, p.Truncated, p.Next)
	}
	if p = read(t, f, 0, 2); fmt.Sprint(cursors(p)) != "[8 9]" || p.Truncated {
		t.Fatalf("from the start: %v truncated %v; want [8 9], not truncated", cursors(p), p.Truncated)
	}
	if p = read(t, f, 99, 2); fmt.Sprint(cursors(p)) != "[8 9]" || !p.Truncated {
		t.Fatalf("a cursor from the future: %v truncated %v; want [8 9] truncated", cursors(p), p.Truncated)
	}
	if _, err := f.Read(context.Background(), -1, 5); err == nil {
		t.Fatal("a negative cursor was accepted")
	}
}

// A cursor whose entry is not written yet stops a read there (the next
// poll finds it); once a later entry is older than Grace, the missing
// one is taken for abandoned and skipped.
func TestFeedWaitsForAnEntryInFlightAndSkipsAnAbandonedOne(t *testing.T) {
	st := store.OpenMemory()
	defer st.Close()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newFeed(t, kv.Local(st), changefeed.Options{Grace: 30 * time.Second, Now: clock})
	appendN(t, f, 1, 2)
	// Cursor 3 taken by a writer that never wrote it: its entry removed.
	appendN(t, f, 3, 2)
	if _, err := kv.Delete(context.Background(), kv.Local(st), scope, "e-3"); err != nil {
		t.Fatal(err)
	}
	p := read(t, f, 0, 10)
	if got := cursors(p); fmt.Sprint(got) != "[1 2]" || p.Next != 2 {
		t.Fatalf("with 3 in flight: %v next %d; want [1 2] next 2", got, p.Next)
	}
	mu.Lock()
	now = now.Add(31 * time.Second)
	mu.Unlock()
	p = read(t, f, 2, 10)
	if got := cursors(p); fmt.Sprint(got) != "[4]" || p.Next != 4 {
		t.Fatalf("3 abandoned: %v next %d; want [4] next 4", got, p.Next)
	}
}

// Two registry instances on one engine's state through state::* (the
// shared store every instance of a cluster uses): cursors come from one
// sequence, so every change has its own, and both read the same feed.
func TestTwoInstancesShareOneFeed(t *testing.T) {
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	feed := func(name string) *changefeed.Feed {
		c := iii.RegisterWorker(eng.URL(), iii.WithName(name), iii.WithLogger(quiet))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		st := kv.III(c, 10*time.Second)
		return newFeed(t, st, changefeed.Options{Node: name,
			Sequence: changefeed.StateSequence(invoke.Caller{Client: c, Timeout: 10 * time.Second}, st, scope)})
	}
	a, b := feed("a"), feed("b")
	if _, err := changefeed.New(context.Background(), changefeed.Options{Store: kv.III(nil, time.Second), Scope: scope}); err == nil {
		t.Fatal("a shared store without a shared sequence was accepted")
	}
	var wg sync.WaitGroup
	for _, f := range []*changefeed.Feed{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); appendN(t, f, 1, 20) }()
	}
	wg.Wait()
	pa, pb := read(t, a, 0, 100), read(t, b, 0, 100)
	if len(pa.Changes) != 40 || pa.Next != 40 || fmt.Sprint(pa) != fmt.Sprint(pb) {
		t.Fatalf("a read %d changes (next %d), b %d; want the same 40", len(pa.Changes), pa.Next, len(pb.Changes))
	}
	nodes := map[string]int{}
	for i, e := range pa.Changes {
		if e.Cursor != int64(i+1) {
			t.Fatalf("change %d has cursor %d", i, e.Cursor)
		}
		nodes[e.Node]++
	}
	if nodes["a"] != 20 || nodes["b"] != 20 {
		t.Fatalf("changes by node %v; want 20 each", nodes)
	}
}
