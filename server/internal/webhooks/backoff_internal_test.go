package webhooks

import (
	"testing"
	"time"
)

// The default retry schedule: 5 s, ×3 each time, capped at 2 h, ±20 %.
func TestRetrySchedule(t *testing.T) {
	o := Options{}
	setDefaults(&o)
	d := &Dispatcher{opts: o}
	var total time.Duration
	for n, want := range []time.Duration{5 * time.Second, 15 * time.Second, 45 * time.Second, 135 * time.Second, 405 * time.Second,
		1215 * time.Second, 3645 * time.Second, 2 * time.Hour, 2 * time.Hour, 2 * time.Hour, 2 * time.Hour} {
		got := d.retryAfter(n + 1)
		if lo, hi := want*8/10, want*12/10; got < lo || got > hi {
			t.Errorf("wait after %d failed attempts = %v; want %v ± 20 %%", n+1, got, want)
		}
		total += got
	}
	if total < 7*time.Hour || total > 12*time.Hour {
		t.Errorf("the 11 waits of the default 12 attempts add up to %v; want about 9½ hours", total)
	}
}
