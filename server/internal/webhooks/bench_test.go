package webhooks_test

import (
	"path/filepath"
	"testing"
)

// BenchmarkBurst1000: 1 000 changes over 50 skills published at once into a
// store file, the receiver refusing or dropping its first 300 requests;
// every change arrives once, in order per skill (checked each run). It
// reports deliveries per second from the first publish to the last
// acknowledgement.
func BenchmarkBurst1000(b *testing.B) {
	var total float64
	for b.Loop() {
		took := burst(b, filepath.Join(b.TempDir(), "state.db"))
		total += took.Seconds()
	}
	b.ReportMetric(1000*float64(b.N)/total, "deliveries/s")
}
