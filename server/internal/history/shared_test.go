package history

import (
	"testing"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
)

// Two registry instances on one backend (engines sharing Redis): each
// allocates content keys in its own range, so neither overwrites the
// other's versions, and Refresh / Reload make one see what the other did.
func TestSharedBackendInstancesKeepEachOthersVersions(t *testing.T) {
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	cfg := Config{Scope: "skills", Noun: "skill"}
	a, b := New(sharedStore{kv.Local(st)}, cfg), New(sharedStore{kv.Local(st)}, cfg)
	mustRecord(t, a, "x", "from a")
	mustRecord(t, b, "y", "from b") // b loaded after a wrote: sees x
	mustRecord(t, a, "x", "from a, again")
	mustRecord(t, b, "y", "from b, again")
	// Each learns of the other's writes through Refresh (the broadcast).
	if a.Refresh("y") != nil || b.Refresh("x") != nil {
		t.Fatal("refresh failed")
	}
	for _, c := range []struct {
		h       *History
		id, cur string
	}{{a, "x", "from a, again"}, {b, "y", "from b, again"}, {a, "y", "from b, again"}, {b, "x", "from a, again"}} {
		got, _, err := c.h.Select(c.id, "latest")
		if err != nil {
			t.Fatalf("select %s: %v", c.id, err)
		}
		if got != c.cur {
			t.Fatalf("%s reads %q; want %q (a key collision overwrote a version?)", c.id, got, c.cur)
		}
	}
	for _, id := range []string{"x", "y"} {
		first, _, err := a.Select(id, "1")
		if err != nil || first == "" {
			t.Fatalf("%s@1: %q, %v", id, first, err)
		}
	}

	// A label moved through a is served by b after Refresh (not before).
	if _, err := a.Label("x", "stable", 1, ""); err != nil {
		t.Fatal(err)
	}
	if n := b.Served("x", "stable"); n != 0 {
		t.Fatalf("b serves %d before refreshing; the test needs a stale summary", n)
	}
	if err := b.Refresh("x"); err != nil {
		t.Fatal(err)
	}
	if n := b.Served("x", "stable"); n != 1 {
		t.Fatalf("after Refresh b serves version %d of x under stable; want 1", n)
	}
	// A new id written through a shows in b's listing after Reload.
	mustRecord(t, a, "z", "new")
	b.Reload()
	ids, err := b.IDs()
	if err != nil || len(ids) != 3 {
		t.Fatalf("b's ids after Reload: %v, %v; want x, y, z", ids, err)
	}
}

func TestUnsharedBackendKeysStayInTheFirstRange(t *testing.T) {
	h, _ := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	if k := h.nextKey.Load(); k>>sharedKeyBits != 0 {
		t.Fatalf("unshared next key %x left range 0", k)
	}
}
