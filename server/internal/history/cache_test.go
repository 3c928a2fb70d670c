package history

import (
	"strconv"
	"strings"
	"testing"
)

// The content cache answers only for the id and version it was given,
// stays within its byte bound, and forgets dropped rows.
func TestContentCacheBoundAndChecks(t *testing.T) {
	var c contentCache
	c.put(1, "a", 1, "one")
	if got, ok := c.get(1, "a", 1); !ok || got != "one" {
		t.Fatalf("get(1, a, 1) = %q, %v; want one, true", got, ok)
	}
	if _, ok := c.get(1, "b", 1); ok {
		t.Fatal("a hit for another id")
	}
	if _, ok := c.get(1, "a", 2); ok {
		t.Fatal("a hit for another version")
	}
	c.forget(1)
	if _, ok := c.get(1, "a", 1); ok || c.bytes != 0 {
		t.Fatalf("after forget: hit %v, bytes %d", ok, c.bytes)
	}
	body := strings.Repeat("x", 64<<10)
	for k := range uint64(1000) {
		c.put(k, "s"+strconv.Itoa(int(k)), 1, body)
		if c.bytes > contentCacheBytes {
			t.Fatalf("cache holds %d bytes, bound %d", c.bytes, contentCacheBytes)
		}
	}
	if _, ok := c.get(999, "s999", 1); !ok {
		t.Fatal("the newest entry was evicted")
	}
	if _, ok := c.get(0, "s0", 1); ok {
		t.Fatal("the oldest entry outlived the bound")
	}
	c.put(5000, "big", 1, strings.Repeat("y", contentCacheBytes))
	if _, ok := c.get(5000, "big", 1); ok {
		t.Fatal("a body larger than a sixteenth of the cache was cached")
	}
}
