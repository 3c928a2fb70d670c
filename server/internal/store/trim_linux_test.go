package store

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mappedRSS is the resident size of this process's mappings of path
// (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	match := false
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			match = len(f) >= 6 && f[5] == path // a mapping's header line
		case match && len(f) == 3 && f[0] == "Rss:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}

// TestIdleStoreDropsMappedPages: writes under dropMappedEvery leave the
// pages they touched resident only until the store has been idle for
// dropMappedIdle.
func TestIdleStoreDropsMappedPages(t *testing.T) {
	s, path := openTemp(t)
	body, _ := json.Marshal(strings.Repeat("x", 2000))
	for i := range 100 { // ~200 KiB: under dropMappedEvery
		if _, err := s.Set("skills", "s"+strconv.Itoa(i), body); err != nil {
			t.Fatal(err)
		}
	}
	// Read every value back through the map: its pages are resident.
	for i := range 100 {
		if _, ok, err := s.Get("skills", "s"+strconv.Itoa(i)); err != nil || !ok {
			t.Fatalf("get s%d: %v %v", i, ok, err)
		}
	}
	if mappedRSS(t, path) == 0 {
		t.Skip("the state file's pages are not reported resident here")
	}
	// Reads do not count as writes, so a write re-arms the idle drop.
	if _, err := s.Set("skills", "last", body); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); mappedRSS(t, path) > 64<<10; {
		if time.Now().After(deadline) {
			t.Fatalf("the state file's pages are still resident (%d bytes) 30 s after the last write", mappedRSS(t, path))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
