package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/webhooks"
)

// The Standard Webhooks specification's example: the signature must match
// it byte for byte.
func TestSignMatchesTheSpecificationExample(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := webhooks.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"test": 2432232314}`)
	got := webhooks.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s; want %s", got, want)
	}
	h := http.Header{}
	h.Set(webhooks.HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(webhooks.HeaderTimestamp, "1614265330")
	h.Set(webhooks.HeaderSignature, "v1,bm90IHRoaXMgb25l "+got) // several signatures, one right
	at := time.Unix(1614265330, 0).Add(time.Minute)
	if err := webhooks.Verify(secret, h, body, at); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if err := webhooks.Verify(secret, h, []byte(`{"test": 2432232315}`), at); err == nil {
		t.Fatal("Verify accepted a changed body")
	}
	if err := webhooks.Verify(secret, h, body, at.Add(time.Hour)); err == nil {
		t.Fatal("Verify accepted a timestamp an hour old")
	}
}

func TestEndpointValidation(t *testing.T) {
	secret := newSecret(t)
	for _, c := range []struct {
		ep   webhooks.Endpoint
		want string
	}{
		{webhooks.Endpoint{URL: "", Secret: secret}, "url is empty"},
		{webhooks.Endpoint{URL: "ftp://x.example/h", Secret: secret}, `scheme "ftp"`},
		{webhooks.Endpoint{URL: "/hooks", Secret: secret}, "scheme"},
		{webhooks.Endpoint{URL: "https:///hooks", Secret: secret}, "no host"},
		{webhooks.Endpoint{URL: "https://user:pw@x.example/h", Secret: secret}, "credentials in the URL"},
		{webhooks.Endpoint{URL: "https://x.example/h#frag", Secret: secret}, "fragment"},
		{webhooks.Endpoint{URL: "https://x.example/h", Secret: "abc"}, `start with "whsec_"`},
		{webhooks.Endpoint{URL: "https://x.example/h", Secret: "whsec_!!!"}, "not base64"},
		{webhooks.Endpoint{URL: "https://x.example/h", Secret: "whsec_c2hvcnQ="}, "5 bytes"},
		{webhooks.Endpoint{URL: "https://x.example/h", Secret: secret, Events: []webhooks.Event{"deploy"}}, `unknown event "deploy"`},
	} {
		err := c.ep.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want an error saying %q", c.ep, err, c.want)
		}
		if strings.Contains(fmt.Sprint(err), "pw@") {
			t.Errorf("the error repeats the URL's password: %v", err)
		}
	}
	if err := (webhooks.Endpoint{URL: "https://x.example/h", Secret: secret, Events: webhooks.Events}).Validate(); err != nil {
		t.Fatalf("a good endpoint: %v", err)
	}
	if _, err := webhooks.New(context.Background(), webhooks.Options{KV: kv.NewMemoryTable(), Endpoints: []webhooks.Endpoint{
		{URL: "https://x.example/h", Secret: secret}, {URL: "https://x.example/h", Secret: secret}}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("the same URL twice: %v", err)
	}
}

// secret_env reads the secret from the environment, checked like one
// written in the file; never both, never an unset variable.
func TestSecretFromTheEnvironment(t *testing.T) {
	secret := newSecret(t)
	t.Setenv("TEST_HOOK_SECRET", secret)
	t.Setenv("TEST_HOOK_BAD", "abc")
	for _, c := range []struct {
		ep   webhooks.Endpoint
		want string
	}{
		{webhooks.Endpoint{URL: "https://x.example/h", SecretEnv: "TEST_HOOK_UNSET"}, "secret_env TEST_HOOK_UNSET: the environment variable is empty or unset"},
		{webhooks.Endpoint{URL: "https://x.example/h", Secret: secret, SecretEnv: "TEST_HOOK_SECRET"}, "set secret or secret_env, not both"},
		{webhooks.Endpoint{URL: "https://x.example/h", SecretEnv: "TEST_HOOK_BAD"}, `start with "whsec_"`},
	} {
		if err := c.ep.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want an error saying %q", c.ep, err, c.want)
		}
	}
	// Deliveries are signed with it: the receiver checks with the same secret.
	rcv := newReceiver(t, secret)
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: rcv.srv.URL, SecretEnv: "TEST_HOOK_SECRET"}}})
	publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventRegister, ID: "team/env", At: time.Now()})
	testutil.Eventually(t, 10*time.Second, "the delivery", func() bool { return len(rcv.deliveries()) == 1 })
	rcv.checkOnceInOrder(t, 1)
}

// Changes reach a real HTTP receiver signed, with the body and headers
// Standard Webhooks names, each once, in order per skill, and only the
// events an endpoint asked for.
func TestDeliversSignedInOrderPerSkill(t *testing.T) {
	all := newReceiver(t, newSecret(t))
	labels := newReceiver(t, newSecret(t))
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{
		{URL: all.srv.URL + "/hooks", Secret: all.secret},
		{URL: labels.srv.URL, Secret: labels.secret, Events: []webhooks.Event{webhooks.EventLabel}},
	}})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for s := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 10 {
				ev := webhooks.EventVersion
				if n%5 == 4 {
					ev = webhooks.EventLabel
				}
				publish(t, d.Dispatcher, webhooks.Change{Type: ev, ID: fmt.Sprintf("team/s%d", s), Version: n + 1, Label: map[bool]string{true: "prod"}[ev == webhooks.EventLabel],
					At: at, Extra: map[string]any{"n": n, "id": "cannot-replace-the-id"}})
			}
		}()
	}
	wg.Wait()
	testutil.Eventually(t, 20*time.Second, "every delivery", func() bool { return len(all.deliveries()) == 30 && len(labels.deliveries()) == 6 })
	all.checkOnceInOrder(t, 30)
	labels.checkOnceInOrder(t, 6)
	for _, dl := range labels.deliveries() {
		if dl.Type != "label" || dl.Data["label"] != "prod" {
			t.Fatalf("label endpoint got %s", dl.Raw)
		}
	}
	first := all.deliveries()[0]
	if !strings.HasPrefix(first.ID, "msg_") {
		t.Fatalf("webhook-id %q", first.ID)
	}
	want := fmt.Sprintf(`{"type":"version","timestamp":"2026-11-28T10:00:00Z","data":{"id":%q,"n":0,"version":1}}`, first.Data["id"])
	if string(first.Raw) != want {
		t.Fatalf("body %s\nwant %s", first.Raw, want)
	}
	// One change to both endpoints carries one webhook-id.
	ids := map[string]bool{}
	for _, dl := range all.deliveries() {
		ids[dl.ID] = true
	}
	for _, dl := range labels.deliveries() {
		if !ids[dl.ID] {
			t.Fatalf("label delivery %s has an id the other endpoint never got", dl.ID)
		}
	}
	// The receiver answered before the dispatcher counted.
	testutil.Eventually(t, 10*time.Second, "the status to count every delivery", func() bool {
		st := d.Status()
		return st[0].Delivered == 30 && st[0].Queued == 0 && st[1].Delivered == 6 && st[1].Queued == 0
	})
}

// A failing receiver is tried again after a growing wait, with the same
// webhook-id and a fresh timestamp each time, until it answers 2xx.
func TestRetriesUntilDelivered(t *testing.T) {
	rc := newReceiver(t, newSecret(t))
	rc.setAnswer(func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n <= 3 {
			http.Error(w, "busy\x00\x1b[31m", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: rc.srv.URL, Secret: rc.secret}},
		InitialInterval: 20 * time.Millisecond, MaxInterval: time.Second, Multiplier: 2})
	publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventRegister, ID: "a/b"})
	testutil.Eventually(t, 20*time.Second, "the delivery", func() bool { return len(rc.deliveries()) == 1 })
	rc.checkOnceInOrder(t, 1)
	rc.mu.Lock()
	tries := rc.tries[rc.got[0].ID]
	rc.mu.Unlock()
	if len(tries) != 4 {
		t.Fatalf("%d requests with the delivery's id; want 4 (3 refused, then accepted)", len(tries))
	}
	testutil.Eventually(t, 10*time.Second, "the status to count the delivery", func() bool { return d.Status()[0].Delivered == 1 })
	st := d.Status()[0]
	if st.Delivered != 1 || st.FailedTries != 3 || !strings.Contains(st.LastError, "503") || strings.ContainsAny(st.LastError, "\x00\x1b") {
		t.Fatalf("status %+v; want 1 delivered after 3 failed tries, the last error naming 503 without control characters", st)
	}
}

// After its last attempt a delivery is a dead letter, with what went wrong;
// the list keeps the newest MaxDead; a resend delivers it.
func TestDeadLettersAreBoundedAndResent(t *testing.T) {
	rc := newReceiver(t, newSecret(t))
	var failing atomic.Bool
	failing.Store(true)
	rc.setAnswer(func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		if failing.Load() {
			http.Error(w, "receiver broken", http.StatusInternalServerError)
			return true
		}
		return false
	})
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: rc.srv.URL, Secret: rc.secret}}, MaxAttempts: 2, MaxDead: 3})
	for n := range 5 {
		publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventUnregister, ID: fmt.Sprintf("s/%d", n), Extra: map[string]any{"n": n}})
	}
	testutil.Eventually(t, 20*time.Second, "five dead letters (3 kept)", func() bool {
		st := d.Status()[0]
		return st.Queued == 0 && st.Dead == 3 && st.FailedTries == 10
	})
	dead, err := d.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 3 {
		t.Fatalf("%d dead letters listed; want the 3 newest", len(dead))
	}
	for _, dl := range dead {
		if dl.Attempts != 2 || dl.LastStatus != 500 || !strings.Contains(dl.LastError, "receiver broken") || dl.Key == "" || dl.DeadAt.IsZero() {
			t.Fatalf("dead letter %+v", dl)
		}
	}
	if dead[0].SkillID != "s/2" && dead[0].SkillID != "s/3" && dead[0].SkillID != "s/4" {
		t.Fatalf("oldest kept is %s; the two oldest should have gone", dead[0].SkillID)
	}
	failing.Store(false)
	if err := d.Resend(context.Background(), dead[1].Key); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the resent delivery", func() bool { return len(rc.deliveries()) == 1 })
	if got := rc.deliveries()[0]; got.ID != dead[1].ID || got.Data["id"] != dead[1].SkillID {
		t.Fatalf("resent %s (%v); want %s of %s with its webhook-id kept", got.ID, got.Data["id"], dead[1].ID, dead[1].SkillID)
	}
	testutil.Eventually(t, 10*time.Second, "the status to count the resent delivery", func() bool {
		st := d.Status()[0]
		return st.Dead == 2 && st.Delivered == 1
	})
	if err := d.Resend(context.Background(), dead[1].Key); err == nil || !strings.Contains(err.Error(), "no dead letter") {
		t.Fatalf("resending twice: %v", err)
	}
	for _, key := range []string{"nonsense", "0123456789abcdef/x", "ffffffffffffffff/12"} {
		if err := d.Resend(context.Background(), key); err == nil {
			t.Fatalf("Resend(%q) succeeded", key)
		}
	}
}

// A redirect is never followed: the other host gets nothing and the
// delivery fails saying why.
func TestRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	rc := newReceiver(t, newSecret(t))
	rc.setAnswer(func(_ int, w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
		return true
	})
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: rc.srv.URL, Secret: rc.secret}}, MaxAttempts: 2})
	publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventYank, ID: "a/b", Version: 2})
	testutil.Eventually(t, 20*time.Second, "the dead letter", func() bool { return d.Status()[0].Dead == 1 })
	dead, _ := d.DeadLetters(context.Background())
	if elsewhere.Load() != 0 || len(dead) != 1 || dead[0].LastStatus != 307 || !strings.Contains(dead[0].LastError, "not followed") {
		t.Fatalf("other host hit %d times; dead letters %+v", elsewhere.Load(), dead)
	}
}

// An endless answer is read only up to MaxResponseBytes; a receiver that
// never answers is given up after Timeout.
func TestAnswersAreBoundedInSizeAndTime(t *testing.T) {
	var written atomic.Int64
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 64<<10)
		for range 1024 { // 64 MiB
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer big.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: big.URL, Secret: newSecret(t)}, {URL: hang.URL, Secret: newSecret(t)}},
		MaxAttempts: 2, Timeout: 300 * time.Millisecond})
	publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventRegister, ID: "a/b"})
	testutil.Eventually(t, 20*time.Second, "both outcomes", func() bool {
		st := d.Status()
		return st[0].Delivered == 1 && st[1].Dead == 1
	})
	if n := written.Load(); n >= 64<<20 {
		t.Fatalf("the whole 64 MiB answer was read (%d bytes written)", n)
	}
	dead, _ := d.DeadLetters(context.Background())
	if len(dead) != 1 || !strings.Contains(dead[0].LastError, "deadline exceeded") {
		t.Fatalf("dead letters %+v; want the hanging receiver's timeout", dead)
	}
}

// Queued deliveries survive a restart (a real store file closed and
// opened again): the receiver, down while the first process ran, gets
// every change once, in order per skill, from the second.
func TestDeliveriesSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	rc := newReceiver(t, newSecret(t))
	var down atomic.Bool
	down.Store(true)
	rc.setAnswer(func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return true
		}
		return false
	})
	ep := []webhooks.Endpoint{{URL: rc.srv.URL, Secret: rc.secret}}
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, webhooks.Options{Endpoints: ep, KV: kv.TableOf(kv.Local(st), "webhooks"), MaxAttempts: 1000})
	for n := range 10 {
		for s := range 3 {
			publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventVersion, ID: fmt.Sprintf("s/%d", s), Version: n + 1, Extra: map[string]any{"n": n}})
		}
	}
	testutil.Eventually(t, 20*time.Second, "a few failed attempts", func() bool { return d.Status()[0].FailedTries >= 6 })
	d.stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	down.Store(false)
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d = start(t, webhooks.Options{Endpoints: ep, KV: kv.TableOf(kv.Local(st), "webhooks"), MaxAttempts: 1000})
	if q := d.Status()[0].Queued; q != 30 {
		t.Fatalf("%d deliveries queued after the restart; want 30", q)
	}
	testutil.Eventually(t, 20*time.Second, "every delivery after the restart", func() bool { return len(rc.deliveries()) == 30 })
	rc.checkOnceInOrder(t, 30)
	testutil.Eventually(t, 10*time.Second, "the queue to empty", func() bool { return d.Status()[0].Queued == 0 })
	d.stop()
	keys, _ := st.Keys("webhooks")
	if len(keys) != 0 {
		t.Fatalf("rows left after delivering everything: %v", keys)
	}
}

// Deliveries go only to URLs the operator configures now: what was queued
// for a URL since removed from the configuration is not sent, and a
// dead letter for it cannot be resent.
func TestOnlyConfiguredURLsReceive(t *testing.T) {
	old := newReceiver(t, newSecret(t))
	current := newReceiver(t, newSecret(t))
	store := kv.NewMemoryTable()
	first, err := webhooks.New(context.Background(), webhooks.Options{KV: store, Endpoints: []webhooks.Endpoint{{URL: old.srv.URL, Secret: old.secret}}})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, first, webhooks.Change{Type: webhooks.EventRegister, ID: "a/b"}) // queued, never run
	d := start(t, webhooks.Options{KV: store, Endpoints: []webhooks.Endpoint{{URL: current.srv.URL, Secret: current.secret}}})
	publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventRegister, ID: "c/d", Extra: map[string]any{"n": 1}})
	testutil.Eventually(t, 20*time.Second, "the current URL's delivery", func() bool { return d.Status()[0].Delivered == 1 })
	d.stop()
	old.mu.Lock()
	requests := old.requests
	old.mu.Unlock()
	if requests != 0 || current.deliveries()[0].Data["id"] != "c/d" {
		t.Fatalf("the removed URL got %d requests; the current one got %v", requests, current.deliveries())
	}
	rows, _ := store.List(context.Background(), "q/")
	if len(rows) != 1 {
		t.Fatalf("%d queued rows; want the removed URL's one kept (not sent, not lost)", len(rows))
	}
}

// A full queue turns new changes into dead letters at once instead of
// growing.
func TestQueueIsBounded(t *testing.T) {
	d, err := webhooks.New(context.Background(), webhooks.Options{KV: kv.NewMemoryTable(), MaxQueue: 3,
		Endpoints: []webhooks.Endpoint{{URL: "http://127.0.0.1:1/never-run", Secret: newSecret(t)}}})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 5 {
		publish(t, d, webhooks.Change{Type: webhooks.EventRegister, ID: fmt.Sprintf("s/%d", n)})
	}
	st := d.Status()[0]
	dead, _ := d.DeadLetters(context.Background())
	if st.Queued != 3 || st.Dead != 2 || len(dead) != 2 || !strings.Contains(dead[0].LastError, "queue for this URL is full") {
		t.Fatalf("status %+v, dead %+v", st, dead)
	}
	if err := d.Publish(context.Background(), webhooks.Change{Type: "deploy", ID: "a/b"}); err == nil {
		t.Fatal("an unknown event was published")
	}
	if err := d.Publish(context.Background(), webhooks.Change{Type: webhooks.EventRegister}); err == nil {
		t.Fatal("a change without an id was published")
	}
}

// 1 000 changes in a burst over 50 skills, the receiver down (errors and
// dropped connections) for the first part: every change arrives once, in
// order per skill.
func TestBurstWithReceiverDown(t *testing.T) {
	burst(t, filepath.Join(t.TempDir(), "state.db"))
}

// burst runs the 1 000-change burst and returns how long delivery took
// from the first publish.
func burst(t testing.TB, path string) time.Duration {
	rc := newReceiver(t, newSecret(t))
	var down atomic.Bool
	down.Store(true)
	var refused atomic.Int64
	rc.setAnswer(func(n int, w http.ResponseWriter, _ *http.Request) bool {
		if !down.Load() {
			return false
		}
		if refused.Add(1) >= 300 {
			down.Store(false)
		}
		if n%2 == 0 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		// A receiver crashing mid-request: the connection just closes.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			_ = conn.Close()
		}
		return true
	})
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := start(t, webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: rc.srv.URL, Secret: rc.secret}},
		KV: kv.TableOf(kv.Local(st), "webhooks"), MaxAttempts: 10000, Concurrency: 8})
	const skills, each = 50, 20
	began := time.Now()
	var wg sync.WaitGroup
	for s := range skills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventVersion, ID: fmt.Sprintf("team/skill-%d", s), Version: n + 1, Extra: map[string]any{"n": n}})
			}
		}()
	}
	wg.Wait()
	testutil.Eventually(t, 120*time.Second, "all 1 000 deliveries", func() bool { return len(rc.deliveries()) >= skills*each })
	took := time.Since(began)
	rc.checkOnceInOrder(t, skills*each)
	if refused.Load() < 300 {
		t.Fatalf("the receiver was down for %d requests; want 300", refused.Load())
	}
	testutil.Eventually(t, 20*time.Second, "the queue to empty", func() bool { return d.Status()[0].Queued == 0 })
	return took
}

// Stopping Run with deliveries in flight and running it again sends them:
// nothing is lost or stuck.
func TestRunAgainAfterAStop(t *testing.T) {
	rc := newReceiver(t, newSecret(t))
	release := make(chan struct{})
	var held atomic.Int64
	rc.setAnswer(func(_ int, w http.ResponseWriter, r *http.Request) bool {
		if held.Add(1) <= 2 {
			select { // the first two requests hang until Run stops
			case <-release:
			case <-r.Context().Done():
			}
			return true
		}
		return false
	})
	o := webhooks.Options{Endpoints: []webhooks.Endpoint{{URL: rc.srv.URL, Secret: rc.secret}}, KV: kv.NewMemoryTable(),
		InitialInterval: 5 * time.Millisecond, MaxInterval: 50 * time.Millisecond}
	d, err := webhooks.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		publish(t, d, webhooks.Change{Type: webhooks.EventVersion, ID: fmt.Sprintf("s/%d", n%2), Extra: map[string]any{"n": n}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	testutil.Eventually(t, 10*time.Second, "two requests in flight", func() bool { return held.Load() >= 2 })
	cancel()
	<-done
	close(release)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	testutil.Eventually(t, 20*time.Second, "every delivery after running again", func() bool { return len(rc.deliveries()) == 3 })
	rc.checkOnceInOrder(t, 3)
}

// A receiver's URL often holds its secret (Slack's and Discord's incoming
// webhooks in the path, others in the query): what the dispatcher lets
// others see (Status, dead letters and their errors, rows in state) shows
// only its scheme and host and the endpoint's short id.
func TestReceiverURLsAreNotShown(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T00/B00/XXXXSECRET": "https://hooks.slack.com/… #",
		"https://x.example/h?token=SECRET":                    "https://x.example/… #",
		"https://x.example":                                   "https://x.example",
		"https://x.example/":                                  "https://x.example",
	} {
		if got := webhooks.ShownURL(raw); !strings.HasPrefix(got, want) || strings.Contains(got, "SECRET") {
			t.Errorf("ShownURL(%s) = %s; want %s…", raw, got, want)
		}
	}
	// A refused delivery and one whose host is down.
	rc := newReceiver(t, newSecret(t))
	rc.setAnswer(func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		http.Error(w, "no", http.StatusForbidden)
		return true
	})
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/services/T00/B00/DOWNSECRET"
	down.Close()
	state := kv.NewMemoryTable()
	d := start(t, webhooks.Options{KV: state, MaxAttempts: 1, Endpoints: []webhooks.Endpoint{
		{URL: rc.srv.URL + "/services/T00/B00/XXXXSECRET", Secret: rc.secret},
		{URL: downURL, Secret: newSecret(t)},
	}})
	publish(t, d.Dispatcher, webhooks.Change{Type: webhooks.EventRegister, ID: "a/b"})
	testutil.Eventually(t, 20*time.Second, "two dead letters", func() bool {
		st := d.Status()
		return st[0].Dead == 1 && st[1].Dead == 1
	})
	dead, err := d.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := fmt.Sprintf("%+v %+v", d.Status(), dead)
	rows, err := state.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		seen += " " + r.Key + " " + string(r.Value)
	}
	if strings.Contains(seen, "SECRET") || !strings.Contains(seen, "connect") {
		t.Fatalf("what others may see names a receiver's secret path, or the down host's error is missing:\n%s", seen)
	}
}
