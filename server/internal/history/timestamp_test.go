package history

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The hand-written stamp matches time.Format's byte for byte.
func TestTimestampMatchesFormat(t *testing.T) {
	times := []time.Time{{}, time.Unix(0, 0), time.Now(),
		time.Date(999, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", -7*3600))}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)))
	}
	for _, tm := range times {
		want := tm.UTC().Format("2006-01-02T15:04:05.000000000") + "+00:00"
		if got := timestamp(tm); got != want {
			t.Fatalf("timestamp(%v) = %q, want %q", tm, got, want)
		}
	}
}
