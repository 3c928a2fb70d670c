package registry

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// timestampByFormat is Timestamp as it was written with time.Format: the
// reference the hand-written digits must match byte for byte.
func timestampByFormat(t time.Time) string {
	t = t.UTC()
	ns := t.Nanosecond()
	pad := func(v, width int) string {
		s := strconv.Itoa(v)
		return strings.Repeat("0", max(0, width-len(s))) + s
	}
	var frac string
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		frac = "." + pad(ns/1_000_000, 3)
	case ns%1_000 == 0:
		frac = "." + pad(ns/1_000, 6)
	default:
		frac = "." + pad(ns, 9)
	}
	return t.Format("2006-01-02T15:04:05") + frac + "+00:00"
}

func TestTimestampMatchesFormat(t *testing.T) {
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.Date(2026, 11, 25, 22, 30, 1, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6_000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("x", 5*3600+1800)),
		time.Date(999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 100, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)))
		times = append(times, time.Unix(r.Int64N(4e9), r.Int64N(1000)*1e6))
	}
	for _, tm := range times {
		if got, want := Timestamp(tm), timestampByFormat(tm); got != want {
			t.Fatalf("Timestamp(%v) = %q, want %q", tm, got, want)
		}
	}
}

func BenchmarkTimestamp(b *testing.B) {
	now := time.Now()
	for range b.N {
		_ = Timestamp(now)
	}
}
