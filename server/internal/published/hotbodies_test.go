package published

import (
	"strings"
	"testing"

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
