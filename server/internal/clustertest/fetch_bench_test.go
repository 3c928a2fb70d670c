package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// BenchmarkRealEngineFetch measures reads of one 2 KiB skill through real
// iii engines on one Redis, with our registry on each engine and, in the
// same run when $UPSTREAM_SKILLS_BIN names upstream's skills worker,
// with upstream's worker on each engine instead:
//
//   - p50-µs / p99-µs: one caller, b.N sequential reads;
//   - ops/s: 64 callers (one connection each, spread over the engines)
//     for $FETCH_LOAD_DURATION (default 5 s), with lost (unanswered
//     within 5 s) and failed calls.
//
// The read is skills::resources-read of iii://bench-fetch, which both
// workers serve (skill::fetch is ours and upstream v0.2.2's; older
// upstream releases lack it). The callers run in this process, the
// engines and registries in their own.
//
//	III_BIN=… [UPSTREAM_SKILLS_BIN=…] go test -run '^$' -bench RealEngineFetch -benchtime 2000x ./internal/clustertest/
func BenchmarkRealEngineFetch(b *testing.B) {
	registries := []struct{ name, upstream string }{{"ours", ""}}
	if p := os.Getenv("UPSTREAM_SKILLS_BIN"); p != "" {
		registries = append(registries, struct{ name, upstream string }{"upstream", p})
	}
	loadFor := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("FETCH_LOAD_DURATION")); err == nil && d > 0 {
		loadFor = d
	}
	body := "# Fetch bench\n\n" + strings.Repeat("A skill body of two kibibytes, read by every caller. ", 38) + "\n"
	payload := json.RawMessage(`{"uri":"iii://bench-fetch"}`)
	for _, engines := range []int{1, 2} {
		for _, reg := range registries {
			b.Run(fmt.Sprintf("engines=%d/registry=%s", engines, reg.name), func(b *testing.B) {
				c := startCluster(b, &cluster{upstreamBin: reg.upstream}, engines)
				c.nodes[0].mustCall(b, "skills::register", map[string]string{"id": "bench-fetch", "skill": body}, nil)
				for _, n := range c.nodes {
					n := n
					testutil.Eventually(b, 20*time.Second, "engine "+n.name+" serves the skill", func() bool { return n.fetch("iii://bench-fetch") == body })
				}
				lat := make([]time.Duration, 0, b.N)
				cl := c.nodes[0].caller
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := cl.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skills::resources-read", Data: payload, Timeout: 5 * time.Second}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				r := callLoad(b, c.nodes, 64, loadFor, "skills::resources-read", payload)
				b.ReportMetric(float64(r.calls)/loadFor.Seconds(), "ops/s")
				b.ReportMetric(float64(r.lost), "lost")
				b.ReportMetric(float64(r.failed), "failed")
			})
		}
	}
}
