package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// benchClient is a minimal multiplexing caller over one raw WebSocket, the
// way an SDK client shares one connection between concurrent calls.
type benchClient struct {
	ws      *websocket.Conn
	wmu     sync.Mutex
	mu      sync.Mutex
	waiting map[string]chan []byte
}

func newBenchClient(b *testing.B, url string) *benchClient {
	b.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil { // workerregistered
		b.Fatal(err)
	}
	c := &benchClient{ws: ws, waiting: make(map[string]chan []byte)}
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			id := invocationID(data)
			c.mu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- data
			}
		}
	}()
	b.Cleanup(func() { _ = ws.Close() })
	return c
}

// call sends invokefunction with the given data and waits for the result.
func (c *benchClient) call(functionID string, data []byte, ch chan []byte) []byte {
	id := uuid.NewString()
	frame := make([]byte, 0, 100+len(functionID)+len(data))
	frame = append(frame, `{"type":"invokefunction","invocation_id":"`...)
	frame = append(frame, id...)
	frame = append(frame, `","function_id":"`...)
	frame = append(frame, functionID...)
	frame = append(frame, `","data":`...)
	frame = append(frame, data...)
	frame = append(frame, '}')
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, frame)
	c.wmu.Unlock()
	if err != nil {
		return nil
	}
	return <-ch
}

// invocationID finds the invocation_id of a frame without decoding it, so
// that the benchmark's own clients cost as little CPU as possible (they
// share the machine with the engine being measured).
func invocationID(frame []byte) string {
	const key = `"invocation_id":"`
	i := bytes.Index(frame, []byte(key))
	if i < 0 {
		return ""
	}
	rest := frame[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// startEchoWorker registers bench::echo on a raw worker that answers every
// invocation with {"ok":true} from a single goroutine.
func startEchoWorker(b *testing.B, url string) {
	b.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	if _, _, err := ws.ReadMessage(); err != nil {
		b.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"registerfunction","id":"bench::echo"}`)); err != nil {
		b.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping"}`)); err != nil {
		b.Fatal(err)
	}
	if _, msg, err := ws.ReadMessage(); err != nil || !bytes.Contains(msg, []byte("pong")) {
		b.Fatalf("echo worker sync: %s %v", msg, err)
	}
	go func() {
		var out []byte
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			id := invocationID(data)
			if id == "" {
				continue
			}
			out = append(out[:0], `{"type":"invocationresult","invocation_id":"`...)
			out = append(out, id...)
			out = append(out, `","function_id":"bench::echo","result":{"ok":true}}`...)
			if ws.WriteMessage(websocket.TextMessage, out) != nil {
				return
			}
		}
	}()
}

// runCalls spreads b.N calls over `callers` goroutines sharing `conns`
// connections and reports throughput and latency percentiles.
func runCalls(b *testing.B, url string, callers, conns int, call func(c *benchClient, i int64, ch chan []byte)) {
	clients := make([]*benchClient, conns)
	for i := range clients {
		clients[i] = newBenchClient(b, url)
	}
	var next atomic.Int64
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%conns]
			ch := make(chan []byte, 1)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t0 := time.Now()
				call(c, i, ch)
				lat[g] = append(lat[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

func benchEngine(b *testing.B, dataDir string) *Engine {
	b.Helper()
	e, err := New(Config{Addr: "127.0.0.1:0", DataDir: dataDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e
}

// BenchmarkInvokeRoundTrip measures caller → engine → worker → engine →
// caller for a worker-served function.
func BenchmarkInvokeRoundTrip(b *testing.B) {
	for _, tc := range []struct{ callers, conns int }{{1, 1}, {64, 4}, {64, 64}} {
		b.Run(fmt.Sprintf("callers=%d/conns=%d", tc.callers, tc.conns), func(b *testing.B) {
			e := benchEngine(b, "")
			startEchoWorker(b, e.URL())
			data := []byte(`{"id":"x","skill":"# X"}`)
			runCalls(b, e.URL(), tc.callers, tc.conns, func(c *benchClient, _ int64, ch chan []byte) {
				c.call("bench::echo", data, ch)
			})
		})
	}
}

// BenchmarkStateSet measures durable state::set (fsync'd, group-committed)
// from 64 concurrent writers over 4 connections.
func BenchmarkStateSet(b *testing.B) {
	e := benchEngine(b, b.TempDir())
	runCalls(b, e.URL(), 64, 4, func(c *benchClient, i int64, ch chan []byte) {
		c.call("state::set", fmt.Appendf(nil, `{"scope":"bench","key":"k%d","value":{"id":"x","n":%d}}`, i%4096, i), ch)
	})
}

// BenchmarkStateGet measures state::get from 64 concurrent callers over 4
// connections.
func BenchmarkStateGet(b *testing.B) {
	e := benchEngine(b, b.TempDir())
	for i := range 1024 {
		if _, err := e.store.Set("bench", fmt.Sprintf("k%d", i), json.RawMessage(`{"id":"x","skill":"# X"}`)); err != nil {
			b.Fatal(err)
		}
	}
	runCalls(b, e.URL(), 64, 4, func(c *benchClient, i int64, ch chan []byte) {
		c.call("state::get", fmt.Appendf(nil, `{"scope":"bench","key":"k%d"}`, i%1024), ch)
	})
}
