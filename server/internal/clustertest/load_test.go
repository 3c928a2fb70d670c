package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// loadResult counts the calls of a callLoad.
type loadResult struct {
	calls, lost, failed int64
	firstErr            string
}

// callLoad runs callers goroutines, one connection each, spread over
// nodes' engines in turn, calling fn with payload for d; a call with no
// answer within 5 s is lost.
func callLoad(tb testing.TB, nodes []*node, callers int, d time.Duration, fn string, payload json.RawMessage) loadResult {
	tb.Helper()
	clients := make([]*iii.Client, callers)
	for i := range clients {
		n := nodes[i%len(nodes)]
		clients[i] = iii.RegisterWorker(n.url(), iii.WithName(fmt.Sprintf("load-%s-%d", n.name, i)),
			iii.WithLogger(slog.New(slog.DiscardHandler)))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := clients[i].Connect(ctx)
		cancel()
		if err != nil {
			tb.Fatal(err)
		}
		defer clients[i].Close()
	}
	var nCalls, nLost, nFailed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				_, err := cl.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: payload, Timeout: 5 * time.Second})
				nCalls.Add(1)
				switch {
				case err == nil:
				case errors.Is(err, iii.ErrTimeout):
					nLost.Add(1)
				default:
					nFailed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	r := loadResult{calls: nCalls.Load(), lost: nLost.Load(), failed: nFailed.Load()}
	if e, ok := firstErr.Load().(string); ok {
		r.firstErr = e
	}
	return r
}
