package webhooks_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/webhooks"
)

func newSecret(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return webhooks.SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// delivery is one acknowledged delivery as the receiver saw it.
type delivery struct {
	ID        string
	Timestamp string
	Type      string
	Data      map[string]any
	Raw       []byte
}

// receiver is a real HTTP server that verifies every delivery and records
// the ones it acknowledged. answer, when set, decides the status of the
// n-th request (1-based) before verification; 0 means go on.
type receiver struct {
	t      testing.TB
	secret string
	srv    *httptest.Server

	mu       sync.Mutex
	requests int
	got      []delivery
	acked    map[string]int      // webhook-id → 2xx answers
	tries    map[string][]string // webhook-id → webhook-timestamp of each request
	bad      int                 // requests that failed verification
	answer   func(n int, w http.ResponseWriter, r *http.Request) bool
}

func newReceiver(t testing.TB, secret string) *receiver {
	rc := &receiver{t: t, secret: secret, acked: map[string]int{}, tries: map[string][]string{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests++
	n := rc.requests
	id := r.Header.Get(webhooks.HeaderID)
	rc.tries[id] = append(rc.tries[id], r.Header.Get(webhooks.HeaderTimestamp))
	answer := rc.answer
	rc.mu.Unlock()
	if answer != nil && answer(n, w, r) {
		return
	}
	if err := webhooks.Verify(rc.secret, r.Header, body, time.Now()); err != nil {
		rc.mu.Lock()
		rc.bad++
		rc.mu.Unlock()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var b struct {
		Type      string
		Timestamp string
		Data      map[string]any
	}
	if err := json.Unmarshal(body, &b); err != nil {
		rc.t.Errorf("delivery body is not the expected JSON: %v: %s", err, body)
	}
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{ID: id, Timestamp: b.Timestamp, Type: b.Type, Data: b.Data, Raw: body})
	rc.acked[id]++
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) setAnswer(f func(n int, w http.ResponseWriter, r *http.Request) bool) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// checkOnceInOrder checks that every acknowledged id was acknowledged
// once, and that each skill's changes (data.n) arrived in order.
func (rc *receiver) checkOnceInOrder(t testing.TB, want int) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != want {
		t.Fatalf("receiver acknowledged %d deliveries; want %d", len(rc.got), want)
	}
	for id, n := range rc.acked {
		if n != 1 {
			t.Fatalf("delivery %s acknowledged %d times; want once", id, n)
		}
	}
	last := map[string]float64{}
	for _, d := range rc.got {
		skill, _ := d.Data["id"].(string)
		n, _ := d.Data["n"].(float64)
		if prev, ok := last[skill]; ok && n <= prev {
			t.Fatalf("skill %s: change %v arrived after change %v", skill, n, prev)
		}
		last[skill] = n
	}
}

type testDispatcher struct {
	*webhooks.Dispatcher
	cancel context.CancelFunc
	done   chan struct{}
}

// stop ends Run and waits for it.
func (td *testDispatcher) stop() {
	td.cancel()
	<-td.done
}

// start creates a Dispatcher with quick retries and runs it until the test
// ends (or stop).
func start(t testing.TB, o webhooks.Options) *testDispatcher {
	t.Helper()
	if o.KV == nil {
		o.KV = kv.NewMemoryTable()
	}
	if o.InitialInterval == 0 {
		o.InitialInterval = 5 * time.Millisecond
	}
	if o.MaxInterval == 0 {
		o.MaxInterval = 50 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d, err := webhooks.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	td := &testDispatcher{Dispatcher: d, cancel: cancel, done: make(chan struct{})}
	go func() { d.Run(ctx); close(td.done) }()
	t.Cleanup(func() {
		select {
		case <-td.done:
		default:
			td.stop()
		}
	})
	return td
}

func publish(t testing.TB, d *webhooks.Dispatcher, c webhooks.Change) {
	t.Helper()
	if err := d.Publish(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}
