// Command fetchload measures skill::fetch under concurrent callers against a
// registry behind any engine: how many calls get no answer (lost) and the
// latency of those that do. `make interop-upstream` runs it against our
// worker on the real iii engine, whose invocation race loses about one call
// in 10 000 to a worker that answers within microseconds.
//
//	fetchload --url ws://127.0.0.1:49200 --callers 64 --duration 20s \
//	          --attempt-timeout 5s [--retry]
//
// --url takes several engines separated by commas (engines sharing one
// Redis, a registry on each): the callers are spread over them in turn.
//
// Without --retry an attempt that gets no answer within --attempt-timeout is
// counted lost. With --retry the caller re-sends the (idempotent) read after
// --attempt-timeout, the caller-side mitigation: it reports how many retries
// were needed and how many calls were still lost after --attempts tries.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

func main() {
	url := flag.String("url", "ws://127.0.0.1:49134", "engine URL, or several separated by commas (callers spread over them)")
	callers := flag.Int("callers", 64, "concurrent callers, one connection each")
	duration := flag.Duration("duration", 20*time.Second, "how long to call")
	attemptTimeout := flag.Duration("attempt-timeout", 5*time.Second, "how long one attempt waits for its answer")
	retry := flag.Bool("retry", false, "re-send a read that got no answer within --attempt-timeout")
	attempts := flag.Int("attempts", 3, "with --retry: tries per call")
	fn := flag.String("function-id", rules.FnSkillFetch, "function to call")
	payload := flag.String("payload", `{"uri":"iii://skills"}`, "JSON payload of every call")
	flag.Parse()
	if err := run(*url, *callers, *duration, *attemptTimeout, *retry, *attempts, *fn, json.RawMessage(*payload)); err != nil {
		fmt.Fprintln(os.Stderr, "fetchload:", err)
		os.Exit(1)
	}
}

type result struct {
	calls, lostAttempts, lostCalls, retries, errs atomic.Int64
	mu                                            sync.Mutex
	lat                                           []time.Duration
}

func run(url string, callers int, duration, attemptTimeout time.Duration, retry bool, attempts int, fn string, payload json.RawMessage) error {
	if !retry {
		attempts = 1
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	urls := strings.Split(url, ",")
	clients := make([]*iii.Client, callers)
	for i := range clients {
		u := urls[i%len(urls)]
		c := iii.RegisterWorker(u, iii.WithName(fmt.Sprintf("fetchload-%d", i)), iii.WithLogger(quiet))
		if err := c.Connect(ctx); err != nil {
			return fmt.Errorf("connect %s: %w", u, err)
		}
		defer c.Close()
		clients[i] = c
	}
	// One warm-up call per engine proves the function answers at all.
	for i := range min(len(urls), len(clients)) {
		if _, err := clients[i].Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: payload, Timeout: 10 * time.Second}); err != nil {
			return fmt.Errorf("warm-up %s through %s: %w", fn, urls[i], err)
		}
	}
	var r result
	stop := time.Now().Add(duration)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			for time.Now().Before(stop) {
				start := time.Now()
				ok := false
				for a := 0; a < attempts; a++ {
					if a > 0 {
						r.retries.Add(1)
					}
					_, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: payload, Timeout: attemptTimeout})
					if err == nil {
						ok = true
						break
					}
					if !errors.Is(err, iii.ErrTimeout) {
						r.errs.Add(1)
						break
					}
					r.lostAttempts.Add(1)
				}
				r.calls.Add(1)
				if ok {
					lat = append(lat, time.Since(start))
				} else {
					r.lostCalls.Add(1)
				}
			}
			r.mu.Lock()
			r.lat = append(r.lat, lat...)
			r.mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(r.lat)
	q := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
	}
	calls := r.calls.Load()
	fmt.Printf("fetchload: %s x%d through %d engine(s) for %s (retry=%v, attempt timeout %s)\n", fn, callers, len(urls), duration, retry, attemptTimeout)
	fmt.Printf("  calls %d (%.0f/s), unanswered attempts %d (1 in %s), lost calls %d, retries %d, errors %d\n",
		calls, float64(calls)/duration.Seconds(), r.lostAttempts.Load(), oneIn(calls, r.lostAttempts.Load()),
		r.lostCalls.Load(), r.retries.Load(), r.errs.Load())
	fmt.Printf("  latency p50 %s  p99 %s  p99.99 %s  max %s\n", q(0.50), q(0.99), q(0.9999), q(1))
	if r.lostCalls.Load() > 0 || r.errs.Load() > 0 {
		return fmt.Errorf("%d calls lost, %d failed", r.lostCalls.Load(), r.errs.Load())
	}
	return nil
}

func oneIn(calls, lost int64) string {
	if lost == 0 {
		return "none"
	}
	return fmt.Sprintf("%d", calls/lost)
}
