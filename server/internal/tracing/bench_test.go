package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
)

// BenchmarkCall is what a traced call adds: continuing the caller's
// context, starting and ending a span (exported in batches to a real
// OTLP/HTTP receiver on loopback), and the context of one outgoing call.
// "off" is the default configuration.
func BenchmarkCall(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	for _, c := range []struct {
		name string
		cfg  tracing.Config
	}{{"off", tracing.Config{}}, {"on", tracing.Config{Endpoint: sink.URL}}} {
		b.Run(c.name, func(b *testing.B) {
			tr, err := tracing.New(context.Background(), c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			tc := tracing.TraceContext{Traceparent: callerTP}
			b.ReportAllocs()
			for b.Loop() {
				ctx, call := tr.StartCall(context.Background(), rules.FnSkillFetch, surface.MCP, tc)
				_ = tr.Outgoing(ctx)
				call.End("ok", nil)
			}
		})
	}
}
