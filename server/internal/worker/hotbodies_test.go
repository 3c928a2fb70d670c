package worker

import (
	"strings"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
)

func TestHotBodies(t *testing.T) {
	h := newHotBodies(100)
	d1, d2 := catalog.DigestOfString("one"), catalog.DigestOfString("two")
	h.put("a", d1, strings.Repeat("a", 20))
	h.put("b", d1, strings.Repeat("b", 20))
	if _, ok := h.get("a", d2); ok {
		t.Fatal("a body kept for another entry's digest was served")
	}
	if got, ok := h.get("a", d1); !ok || got != strings.Repeat("a", 20) {
		t.Fatalf("get a = %q, %v", got, ok)
	}
	// a was read last: adding 80 bytes evicts b, not a.
	h.put("c", d1, strings.Repeat("c", 20))
	h.put("d", d1, strings.Repeat("d", 20))
	h.put("e", d1, strings.Repeat("e", 20))
	h.put("f", d1, strings.Repeat("f", 20))
	if _, ok := h.get("b", d1); ok {
		t.Fatal("the least recently read body was not evicted")
	}
	if _, ok := h.get("a", d1); !ok {
		t.Fatal("a recently read body was evicted")
	}
	if h.bytes > h.max {
		t.Fatalf("%d bytes kept; at most %d", h.bytes, h.max)
	}
	h.put("big", d1, strings.Repeat("x", 26)) // more than a quarter of max
	if _, ok := h.get("big", d1); ok {
		t.Fatal("a body larger than a quarter of the bound was kept")
	}
	h.drop("a")
	if _, ok := h.get("a", d1); ok {
		t.Fatal("a dropped body was served")
	}
}

// On a store nobody else shares (the standalone process) published bodies
// stay in the store: the catalog holds none, reads fetch the current row,
// and a skill read again is served from the hot bodies.
func TestPublishedBodiesStayInTheStore(t *testing.T) {
	s := startStack(t, t.TempDir(), standalone)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "stored/one", "skill": "# One\n\nFirst body.\n"}, nil)
	e, ok := s.worker.cat.Get("stored/one")
	if !ok {
		t.Fatal("stored/one is not in the catalog")
	}
	if e.Body.InMemory() {
		t.Fatal("the published body is held in memory; want it read from the store")
	}
	if e.Title != "One" || e.Description != "First body." {
		t.Fatalf("summary %q / %q", e.Title, e.Description)
	}
	for range 3 { // the index takes the first read; the second store read keeps it hot
		if got, err := s.fetch(t, "iii://stored/one"); err != nil || !strings.Contains(got, "First body.") {
			t.Fatalf("fetch: %q, %v", got, err)
		}
	}
	if _, ok := s.worker.skills.hot.get("stored/one", e.BodyDigest); !ok {
		t.Fatal("a skill read again is not kept hot")
	}

	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "stored/one", "skill": "# One\n\nSecond body.\n"}, nil)
	if got, err := s.fetch(t, "iii://stored/one"); err != nil || !strings.Contains(got, "Second body.") {
		t.Fatalf("fetch after a new version: %q, %v", got, err)
	}
	s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "stored/one"}, nil)
	if got, err := s.fetch(t, "iii://stored/one"); err == nil {
		t.Fatalf("fetch after unregister answered %q", got)
	}
	if _, ok := s.worker.skills.hot.get("stored/one", e.BodyDigest); ok {
		t.Fatal("an unregistered skill's body is still kept hot")
	}

	// A restart loads every row without holding a body.
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "stored/two", "skill": "# Two\n\nKept in the store.\n"}, nil)
	if err := s.worker.cl.Relist(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e, ok := s.worker.cat.Get("stored/two"); !ok || e.Body.InMemory() {
		t.Fatalf("after a reload stored/two is %+v (ok %v); want its body in the store", e, ok)
	}
	if got, err := s.fetch(t, "iii://stored/two"); err != nil || !strings.Contains(got, "Kept in the store.") {
		t.Fatalf("fetch after a reload: %q, %v", got, err)
	}
}
