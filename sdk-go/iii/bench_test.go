package iii

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkTrigger measures an awaited call round trip through the fake
// engine (caller → engine → owner's handler → engine → caller) over real
// loopback sockets, one caller at a time and with parallel callers.
func BenchmarkTrigger(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			e := newFakeEngine(b)
			owner := newTestClient(b, e)
			if _, err := owner.RegisterFunction("bench::echo", echo); err != nil {
				b.Fatal(err)
			}
			connect(b, e, owner)
			caller := newTestClient(b, e)
			connect(b, e, caller)
			payload := json.RawMessage(`{"id":"x","skill":"# X"}`)
			call := func() error {
				_, err := caller.Trigger(context.Background(), TriggerRequest{FunctionID: "bench::echo", Data: payload})
				return err
			}
			if err := call(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for range b.N {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}
