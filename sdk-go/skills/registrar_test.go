package skills

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// tiny keeps every wait short; the tests never assert durations.
var tiny = Backoff{InitialDelay: time.Millisecond, Multiplier: 2, MaxDelay: 4 * time.Millisecond, GiveUpAfter: time.Hour}

type fakeRegistry struct {
	mu     sync.Mutex
	calls  []string
	answer func(it item, n int) error // n: how many calls so far (1-based)
}

func (f *fakeRegistry) call(ctx context.Context, it item) error {
	f.mu.Lock()
	f.calls = append(f.calls, it.key)
	n := len(f.calls)
	f.mu.Unlock()
	if f.answer == nil {
		return nil
	}
	return f.answer(it, n)
}

func (f *fakeRegistry) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func waitFirst(t *testing.T, r *registrar) error {
	t.Helper()
	select {
	case <-r.start():
		return r.firstErr
	case <-time.After(30 * time.Second):
		t.Fatal("registration never reported an outcome")
		return nil
	}
}

func absent() error {
	return &iii.InvocationError{Code: iii.CodeFunctionNotFound, Message: "Function skills::register not found"}
}

func TestRegistrarRetriesUntilTheRegistryAnswers(t *testing.T) {
	logs := newLogRecorder()
	f := &fakeRegistry{answer: func(_ item, n int) error {
		if n <= 3 {
			return absent()
		}
		return nil
	}}
	r := newRegistrar(slog.New(logs), tiny, f.call)
	var registered, absentSeen int
	var mu sync.Mutex
	r.onRegistered = func() { mu.Lock(); registered++; mu.Unlock() }
	r.onAbsent = func() { mu.Lock(); absentSeen++; mu.Unlock() }
	r.upsert(item{key: "skill:a", kind: "skill", name: "a"})
	r.upsert(item{key: "prompt:b", kind: "prompt", name: "b"})
	if err := waitFirst(t, r); err != nil {
		t.Fatal(err)
	}
	defer r.close()
	calls := f.got()
	want := []string{"skill:a", "skill:a", "skill:a", "skill:a", "prompt:b"}
	if len(calls) != len(want) {
		t.Fatalf("calls %v; want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("calls %v; want %v", calls, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if registered != 1 || absentSeen != 3 {
		t.Fatalf("registered=%d absent=%d", registered, absentSeen)
	}
	if !logs.has(slog.LevelInfo, "registered with the skills registry: 1 skill, 1 prompt") {
		t.Fatalf("logs: %+v", logs.records)
	}
}

func TestRegistrarGivesUpWithTheExactWarning(t *testing.T) {
	logs := newLogRecorder()
	f := &fakeRegistry{answer: func(item, int) error { return absent() }}
	b := tiny
	b.GiveUpAfter = 20 * time.Millisecond
	r := newRegistrar(slog.New(logs), b, f.call)
	gaveUp := make(chan struct{}, 1)
	r.onGaveUp = func() { gaveUp <- struct{}{} }
	r.upsert(item{key: "skill:a", kind: "skill", name: "a"})
	err := waitFirst(t, r)
	defer r.close()
	if !errors.Is(err, ErrGaveUp) {
		t.Fatalf("got %v; want ErrGaveUp", err)
	}
	<-gaveUp
	if logs.count(slog.LevelWarn, GaveUpMessage) != 1 {
		t.Fatalf("logs: %+v", logs.records)
	}
	if len(f.got()) < 2 {
		t.Fatalf("retried %d times", len(f.got()))
	}
}

func TestRegistrarGivesUpWhileACallHangs(t *testing.T) {
	logs := newLogRecorder()
	hang := func(ctx context.Context, it item) error {
		<-ctx.Done()
		return ctx.Err()
	}
	b := tiny
	b.GiveUpAfter = 20 * time.Millisecond
	r := newRegistrar(slog.New(logs), b, hang)
	r.upsert(item{key: "skill:a", kind: "skill", name: "a"})
	if err := waitFirst(t, r); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("got %v", err)
	}
	r.close()
	if !logs.has(slog.LevelWarn, GaveUpMessage) {
		t.Fatal("no give-up warning")
	}
}

func TestRegistrarReportsARefusalAtOnceAndRegistersTheRest(t *testing.T) {
	logs := newLogRecorder()
	release, lateCalled := make(chan struct{}), make(chan struct{})
	f := &fakeRegistry{answer: func(it item, _ int) error {
		switch it.key {
		case "skill:bad":
			return &iii.InvocationError{Code: iii.CodeInvocationFailed, Message: `invalid id (segment 1 of "X"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "X"`}
		case "skill:late":
			close(lateCalled)
			<-release
		}
		return nil
	}}
	r := newRegistrar(slog.New(logs), tiny, f.call)
	r.upsert(item{key: "skill:bad", kind: "skill", name: "bad"})
	r.upsert(item{key: "skill:late", kind: "skill", name: "late"})
	err := waitFirst(t, r)
	var re *RejectedError
	if !errors.As(err, &re) || re.Name != "bad" {
		t.Fatalf("got %v; want a RejectedError for bad", err)
	}
	if re.Error() != `skills registry refused skill "bad": invalid id (segment 1 of "X"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "X"` {
		t.Fatalf("message %q", re.Error())
	}
	<-lateCalled
	close(release)
	r.close()
	calls := f.got()
	if len(calls) != 2 || calls[0] != "skill:bad" || calls[1] != "skill:late" {
		t.Fatalf("calls %v: the refusal must not be retried and the rest must be registered", calls)
	}
	if !logs.has(slog.LevelError, re.Error()) {
		t.Fatalf("logs: %+v", logs.records)
	}
	if got := r.acceptedItems(); len(got) != 1 || got[0].name != "late" {
		t.Fatalf("accepted %+v", got)
	}
}

// An id outside the namespaces of the publisher's scoped token
// (OUT_OF_SCOPE) never clears up: it is reported once and not retried. An
// id another connection holds (FORBIDDEN) passes to this publisher once
// that connection is gone: it is retried.
func TestRegistrarGivesUpAnIDOutsideItsNamespacesAndRetriesAnOwnedOne(t *testing.T) {
	logs := newLogRecorder()
	const outside = `forbidden: skill "billing/x" is outside the namespaces of token "acme" (acme)`
	contestedTwice := make(chan struct{})
	contested := 0
	f := &fakeRegistry{answer: func(it item, _ int) error {
		switch it.key {
		case "skill:billing/x":
			return &iii.InvocationError{Code: rules.CodeOutOfScope, Message: outside}
		case "skill:acme/x":
			contested++
			if contested == 1 {
				return &iii.InvocationError{Code: rules.CodeForbidden,
					Message: `skill "acme/x" belongs to another worker (w1); only the worker that registered it may register or unregister it while it is connected`}
			}
			close(contestedTwice)
		}
		return nil
	}}
	r := newRegistrar(slog.New(logs), tiny, f.call)
	r.upsert(item{key: "skill:billing/x", kind: "skill", name: "billing/x"})
	r.upsert(item{key: "skill:acme/x", kind: "skill", name: "acme/x"})
	err := waitFirst(t, r)
	var re *RejectedError
	if !errors.As(err, &re) || re.Name != "billing/x" {
		t.Fatalf("got %v; want a RejectedError for billing/x", err)
	}
	if want := `skills registry refused skill "billing/x": ` + outside; re.Error() != want {
		t.Fatalf("message %q, want %q", re.Error(), want)
	}
	<-contestedTwice
	r.close()
	calls := f.got()
	want := []string{"skill:billing/x", "skill:acme/x", "skill:acme/x"}
	if len(calls) != len(want) || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
		t.Fatalf("calls %v; want %v: OUT_OF_SCOPE is not retried, FORBIDDEN is", calls, want)
	}
	if n := logs.count(slog.LevelError, re.Error()); n != 1 {
		t.Fatalf("the refusal is logged %d times, want once: %+v", n, logs.records)
	}
	if got := r.acceptedItems(); len(got) != 1 || got[0].name != "acme/x" {
		t.Fatalf("accepted %+v", got)
	}
}

func TestRegistrarRequestAllAndLateItems(t *testing.T) {
	f := &fakeRegistry{}
	r := newRegistrar(slog.New(newLogRecorder()), tiny, f.call)
	registered := make(chan struct{}, 10)
	r.onRegistered = func() { registered <- struct{}{} }
	r.upsert(item{key: "skill:a", kind: "skill", name: "a"})
	if err := waitFirst(t, r); err != nil {
		t.Fatal(err)
	}
	<-registered
	r.requestAll("engine connection re-established")
	<-registered
	r.upsert(item{key: "skill:b", kind: "skill", name: "b"})
	<-registered
	r.close()
	r.requestAll("ignored after close")
	calls := f.got()
	want := []string{"skill:a", "skill:a", "skill:b"}
	if len(calls) != 3 || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
		t.Fatalf("calls %v; want %v", calls, want)
	}
}

func TestRegistrarCloseInterruptsStart(t *testing.T) {
	f := &fakeRegistry{answer: func(item, int) error { return absent() }}
	r := newRegistrar(slog.New(newLogRecorder()), Backoff{InitialDelay: time.Hour, GiveUpAfter: 2 * time.Hour}, f.call)
	r.upsert(item{key: "skill:a", kind: "skill", name: "a"})
	done := r.start()
	go r.close()
	<-done
	if !errors.Is(r.firstErr, ErrClosed) {
		t.Fatalf("got %v", r.firstErr)
	}
}

func TestBackoffDefaults(t *testing.T) {
	b := Backoff{}.withDefaults()
	if b != DefaultBackoff() || b.InitialDelay != 5*time.Second || b.Multiplier != 2 || b.MaxDelay != time.Minute || b.GiveUpAfter != 3*time.Minute {
		t.Fatalf("defaults %+v", b)
	}
	b = Backoff{InitialDelay: time.Millisecond, MaxDelay: time.Microsecond}.withDefaults()
	if b.MaxDelay != time.Millisecond {
		t.Fatalf("cap below initial: %+v", b)
	}
}

func TestIsPermanent(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&iii.InvocationError{Code: "invocation_failed", Message: "skill must be non-empty"}, true},
		{&iii.InvocationError{Code: "invocation_failed", Message: "handler error: duplicate argument name: a"}, true},
		{&iii.InvocationError{Code: "invocation_failed", Message: "missing field `id`"}, true},
		{&iii.InvocationError{Code: "invalid_request", Message: "x"}, true},
		// The code decides, whatever the text.
		{&iii.InvocationError{Code: "INVALID_ARGUMENTS", Message: "a refusal worded in a way no marker knows"}, true},
		// An id outside the token's namespaces never clears up; one another
		// connection holds does.
		{&iii.InvocationError{Code: "OUT_OF_SCOPE", Message: `forbidden: skill "b/x" is outside the namespaces of token "a" (a)`}, true},
		{&iii.InvocationError{Code: "FORBIDDEN", Message: `skill "a/x" belongs to another worker (w1)`}, false},
		{&iii.InvocationError{Code: "invocation_failed", Message: "state::set: timeout"}, false},
		{absent(), false},
		{iii.ErrTimeout, false},
		{context.DeadlineExceeded, false},
	} {
		if got := isPermanent(c.err); got != c.want {
			t.Errorf("isPermanent(%v) = %v", c.err, got)
		}
	}
}
