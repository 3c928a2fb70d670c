package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
)

// benchServer is a whole server (app.Start, standalone, HTTP listener)
// with metrics and usage counting on, or both off, a skill registered and
// a client of each surface measured.
type benchServer struct {
	fetch func() error
	read  func() error
}

func startBenchServer(b *testing.B, observed bool) benchServer {
	b.Helper()
	cfg := appstack.Config(b)
	cfg.HTTP.Addr = "127.0.0.1:0"
	if !observed {
		cfg.Observability.MetricsAddr = app.MetricsAddr{Given: true}
		cfg.Observability.Usage.Disabled = true
	}
	srv := appstack.Start(b, cfg)
	ctx := context.Background()
	c := iii.New(srv.EngineURL, iii.WithName("bench-reader"), iii.WithLogger(quiet))
	if err := c.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	body := "# Deploy\n\nShip it: build, test, roll out, watch the dashboards, roll back on errors.\n"
	if _, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsRegister,
		Data: json.RawMessage(fmt.Sprintf(`{"id":"bench/deploy","skill":%q}`, body))}); err != nil {
		b.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench-agent", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.HTTPURL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	payload := json.RawMessage(`{"uri":"iii://bench/deploy"}`)
	return benchServer{
		fetch: func() error {
			_, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Data: payload})
			return err
		},
		read: func() error {
			_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://bench/deploy"})
			return err
		},
	}
}

// BenchmarkReadsObservedBesideNot measures skill::fetch over iii and MCP
// resources/read on two servers in the same process, one counting every
// call (metrics) and read (usage), the other with both off, in blocks of
// 50 calls taken in turn so that both see the same machine. It reports
// each one's p50 and their ratio (target: at most 1.05).
func BenchmarkReadsObservedBesideNot(b *testing.B) {
	on, off := startBenchServer(b, true), startBenchServer(b, false)
	for _, c := range []struct {
		name    string
		on, off func() error
	}{{"fetch-iii", on.fetch, off.fetch}, {"read-mcp", on.read, off.read}} {
		b.Run(c.name, func(b *testing.B) {
			for range 200 { // warm both
				_, _ = c.on(), c.off()
			}
			const block = 50
			var tOn, tOff []time.Duration
			measure := func(f func() error, into *[]time.Duration) {
				for range block {
					start := time.Now()
					if err := f(); err != nil {
						b.Fatal(err)
					}
					*into = append(*into, time.Since(start))
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i += block {
				if i/block%2 == 0 {
					measure(c.on, &tOn)
					measure(c.off, &tOff)
				} else {
					measure(c.off, &tOff)
					measure(c.on, &tOn)
				}
			}
			b.StopTimer()
			pOn, pOff := p50(tOn), p50(tOff)
			b.ReportMetric(float64(pOn.Nanoseconds())/1e3, "p50-on-µs")
			b.ReportMetric(float64(pOff.Nanoseconds())/1e3, "p50-off-µs")
			b.ReportMetric(float64(pOn)/float64(pOff), "on/off-p50")
		})
	}
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
