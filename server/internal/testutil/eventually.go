package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds and fails the test, naming what it
// waited for, when timeout passes first. The timeout only bounds a broken
// setup (an event that never comes); it is not a timing assertion, so
// give it room. cond is polled about a thousand times over the timeout,
// every 5 to 50 ms.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	interval := min(max(timeout/1000, 5*time.Millisecond), 50*time.Millisecond)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(interval)
	}
}
