package budget

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// granted fails t unless a lease was granted.
func granted(t *testing.T) func(*Lease, error) *Lease {
	return func(l *Lease, err error) *Lease {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

func TestShareAndCapacity(t *testing.T) {
	must := granted(t)
	p := New("sandboxes", 4, 2)
	a1 := must(p.TryAcquire("a", 1))
	a2 := must(p.TryAcquire("a", 1))
	_, err := p.TryAcquire("a", 1)
	var r *Refusal
	if !errors.As(err, &r) || !r.AtShare || r.Held != 2 || !strings.Contains(err.Error(), "already holds 2 of its share of 2 sandboxes") {
		t.Fatalf("third for a: %v", err)
	}
	b1 := must(p.TryAcquire("b", 1))
	must(p.TryAcquire("c", 1))
	_, err = p.TryAcquire("d", 1)
	if !errors.As(err, &r) || r.AtShare || r.Used != 4 || !strings.Contains(err.Error(), "4 of its 4 sandboxes are in use") {
		t.Fatalf("d on a full pool: %v", err)
	}
	a1.Release()
	a1.Release() // once only
	if p.Used() != 3 || p.Held("a") != 1 {
		t.Fatalf("after a release: used %d, a holds %d", p.Used(), p.Held("a"))
	}
	must(p.TryAcquire("d", 1))
	a2.Release()
	b1.Release()
	if p.Held("a") != 0 || p.Used() != 2 {
		t.Fatalf("used %d", p.Used())
	}
	// A request above the share takes the whole share.
	big := must(p.TryAcquire("e", 100))
	if big.N() != 2 {
		t.Fatalf("clamped to %d", big.N())
	}
}

func TestAcquireWaitsInOrder(t *testing.T) {
	must := granted(t)
	p := New("bytes", 10, 10)
	first := must(p.TryAcquire("a", 8))
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := make(chan *Lease, 2)
	for i, c := range []struct {
		client string
		n      int64
	}{{"b", 6}, {"c", 1}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := p.Acquire(context.Background(), c.client, c.n, Wait{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, c.client)
			mu.Unlock()
			got <- l
		}()
		// b queues first; c (which would fit now) must not overtake it.
		deadline := time.Now().Add(10 * time.Second)
		for func() int { p.mu.Lock(); defer p.mu.Unlock(); return p.waiters.Len() }() != i+1 {
			if time.Now().After(deadline) {
				t.Fatal("waiter never queued")
			}
			time.Sleep(time.Millisecond)
		}
	}
	first.Release()
	wg.Wait()
	if strings.Join(order, ",") != "b,c" && strings.Join(order, ",") != "c,b" || p.Used() != 7 {
		t.Fatalf("order %v used %d", order, p.Used())
	}
	(<-got).Release()
	(<-got).Release()
	if p.Used() != 0 {
		t.Fatalf("used %d after all releases", p.Used())
	}
}

func TestAcquireBoundedWaitAndShare(t *testing.T) {
	must := granted(t)
	p := New("bytes", 10, 5)
	p.SetRetryAfter(3 * time.Second)
	hold := must(p.TryAcquire("a", 5))
	must(p.TryAcquire("b", 5))
	// At its share, without ForShare: refused at once.
	if _, err := p.Acquire(context.Background(), "a", 1, Wait{Max: time.Hour}); !isShareRefusal(err) {
		t.Fatalf("a at its share: %v", err)
	}
	// A full pool: refused after the wait, with RetryAfter.
	_, err := p.Acquire(context.Background(), "c", 1, Wait{Max: 20 * time.Millisecond})
	var r *Refusal
	if !errors.As(err, &r) || r.AtShare || r.Waited < 20*time.Millisecond || r.RetryAfter != 3*time.Second || !strings.Contains(err.Error(), "retry after 3s") {
		t.Fatalf("c on a full pool: %v", err)
	}
	// A canceled wait returns ctx's error and leaves no waiter behind.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := p.Acquire(ctx, "c", 1, Wait{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	// ForShare waits for the client's own lease.
	done := make(chan error, 1)
	go func() {
		l, err := p.Acquire(context.Background(), "a", 2, Wait{ForShare: true})
		l.Release()
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	hold.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p.waiters.Len() != 0 {
		t.Fatalf("%d waiters left", p.waiters.Len())
	}
}

// A waiter held back by its own share does not hold others back.
func TestShareWaiterDoesNotBlockOthers(t *testing.T) {
	must := granted(t)
	p := New("bytes", 10, 4)
	must(p.TryAcquire("a", 4))
	go func() { _, _ = p.Acquire(context.Background(), "a", 1, Wait{ForShare: true, Max: time.Minute}) }()
	deadline := time.Now().Add(10 * time.Second)
	for func() int { p.mu.Lock(); defer p.mu.Unlock(); return p.waiters.Len() }() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("waiter never queued")
		}
		time.Sleep(time.Millisecond)
	}
	must(p.TryAcquire("b", 4))
}

func isShareRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r) && r.AtShare
}

func TestClientOf(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.2:4321"
	if got := ClientOf(r); got != "addr:127.0.0.2" {
		t.Fatalf("ClientOf = %q", got)
	}
	// Behind a reverse proxy on the same host: the address it appended.
	r.Header.Add("X-Forwarded-For", "10.9.9.9, 203.0.113.7")
	if got := ClientOf(r); got != "addr:203.0.113.7" {
		t.Fatalf("ClientOf behind a proxy = %q", got)
	}
	r.Header.Add("X-Forwarded-For", "not an address")
	if got := ClientOf(r); got != "addr:127.0.0.2" {
		t.Fatalf("ClientOf with a malformed X-Forwarded-For = %q", got)
	}
	// From a remote peer the header is the client's own word: ignored.
	r.RemoteAddr = "198.51.100.4:5555"
	if got := ClientOf(r); got != "addr:198.51.100.4" {
		t.Fatalf("ClientOf of a remote peer = %q", got)
	}
	ctx := WithClient(context.Background(), "addr:x")
	if ClientFrom(ctx) != "addr:x" || ClientFrom(context.Background()) != "" {
		t.Fatal("ClientFrom")
	}
}

// Max bounds waiting for other clients only; ShareMax bounds waiting at
// the client's own share.
func TestWaitBoundsByReason(t *testing.T) {
	must := granted(t)
	p := New("bytes", 10, 5)
	own := must(p.TryAcquire("a", 5))
	done := make(chan error, 1)
	go func() {
		l, err := p.Acquire(context.Background(), "a", 1, Wait{Max: 20 * time.Millisecond, ForShare: true})
		l.Release()
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // well past Max: still waiting at its share
	select {
	case err := <-done:
		t.Fatalf("a waiting at its share ended after Max: %v", err)
	default:
	}
	own.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	own = must(p.TryAcquire("a", 5))
	defer own.Release()
	_, err := p.Acquire(context.Background(), "a", 1, Wait{ForShare: true, ShareMax: 20 * time.Millisecond})
	if !isShareRefusal(err) {
		t.Fatalf("ShareMax: %v", err)
	}
}
