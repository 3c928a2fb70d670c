package skills

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
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
	// The verdict keeps the cause, not the deadline that ended the wait.
	if want := "skills: registration with the skills registry gave up: function_not_found: Function skills::register not found"; err.Error() != want {
		t.Fatalf("got %q; want %q", err, want)
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
	if err := waitFirst(t, r); !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "no answer from the skills registry within 20ms") {
		t.Fatalf("got %v", err)
	}
	r.close()
	if !logs.has(slog.LevelWarn, GaveUpMessage) {
		t.Fatal("no give-up warning")
	}
}

const invalidX = `invalid id (segment 1 of "X"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "X"`

// A refusal does not stop the round: the items after it are registered,
// then every refusal of the round is reported together, each with its
// code and advice.
func TestRegistrarRegistersTheRestThenReportsEveryRefusal(t *testing.T) {
	logs := newLogRecorder()
	f := &fakeRegistry{answer: func(it item, _ int) error {
		switch it.key {
		case "skill:bad":
			return &iii.InvocationError{Code: iii.CodeInvocationFailed, Message: invalidX}
		case "prompt:worse":
			return &iii.InvocationError{Code: rules.CodeInvalidArguments, Message: "description must be non-empty"}
		}
		return nil
	}}
	r := newRegistrar(slog.New(logs), tiny, f.call)
	r.upsert(item{key: "skill:bad", kind: "skill", name: "bad"})
	r.upsert(item{key: "skill:late", kind: "skill", name: "late"})
	r.upsert(item{key: "prompt:worse", kind: "prompt", name: "worse"})
	r.upsert(item{key: "skill:last", kind: "skill", name: "last"})
	err := waitFirst(t, r)
	var rerr *RegistrationError
	if !errors.As(err, &rerr) || len(rerr.Rejected) != 2 {
		t.Fatalf("got %v; want a RegistrationError with two refusals", err)
	}
	bad, worse := rerr.Rejected[0], rerr.Rejected[1]
	if want := `skills registry refused skill "bad" (invocation_failed): ` + invalidX + `; fix the skill and restart this worker (not retried)`; bad.Error() != want {
		t.Fatalf("message %q\nwant    %q", bad.Error(), want)
	}
	if worse.Name != "worse" || worse.Code != rules.CodeInvalidArguments || worse.Retried() || worse.Holder != nil {
		t.Fatalf("second refusal %+v", worse)
	}
	var re *RejectedError
	if !errors.As(err, &re) || re != bad {
		t.Fatal("errors.As does not find the first *RejectedError")
	}
	if got := r.acceptedItems(); len(got) != 2 || got[0].name != "late" || got[1].name != "last" {
		t.Fatalf("accepted %+v before the verdict; want late and last", got)
	}
	r.close()
	calls := f.got()
	if want := []string{"skill:bad", "skill:late", "prompt:worse", "skill:last"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v; want %v: refusals are not retried and never block the others", calls, want)
	}
	for _, e := range rerr.Rejected {
		if n := logs.count(slog.LevelError, e.Error()); n != 1 {
			t.Fatalf("%q logged %d times: %+v", e.Error(), n, logs.records)
		}
	}
	if logs.has(slog.LevelInfo, "registered with the skills registry") {
		t.Fatal("a run with refusals logged that everything was registered")
	}
}

// An id outside the namespaces of the publisher's scoped token
// (OUT_OF_SCOPE) never clears up: it is reported once and not retried. An
// id another connection holds (FORBIDDEN) passes to this publisher once
// that connection is gone: it is reported with its holder and retried.
func TestRegistrarGivesUpAnIDOutsideItsNamespacesAndRetriesAnOwnedOne(t *testing.T) {
	logs := newLogRecorder()
	const outside = `forbidden: skill "billing/x" is outside the namespaces of token "acme" (acme)`
	const held = `skill "acme/x" belongs to another worker (w1, named "acme-old"); only the worker that registered it may register or unregister it while it is connected`
	contestedTwice := make(chan struct{})
	contested := 0
	f := &fakeRegistry{answer: func(it item, _ int) error {
		switch it.key {
		case "skill:billing/x":
			return &iii.InvocationError{Code: rules.CodeOutOfScope, Message: outside}
		case "skill:acme/x":
			contested++
			if contested == 1 {
				return &iii.InvocationError{Code: rules.CodeForbidden, Message: held}
			}
			close(contestedTwice)
		}
		return nil
	}}
	r := newRegistrar(slog.New(logs), tiny, f.call)
	r.upsert(item{key: "skill:billing/x", kind: "skill", name: "billing/x"})
	r.upsert(item{key: "skill:acme/x", kind: "skill", name: "acme/x"})
	err := waitFirst(t, r)
	var rerr *RegistrationError
	if !errors.As(err, &rerr) || len(rerr.Rejected) != 2 {
		t.Fatalf("got %v; want both refusals", err)
	}
	scope, owned := rerr.Rejected[0], rerr.Rejected[1]
	if want := `skills registry refused skill "billing/x" (OUT_OF_SCOPE): ` + outside +
		`; publish it under a namespace of this worker's token, or give the worker a token whose namespaces cover it (not retried)`; scope.Error() != want {
		t.Fatalf("message %q, want %q", scope.Error(), want)
	}
	if !owned.Retried() || owned.Holder == nil || *owned.Holder != (Holder{WorkerID: "w1", WorkerName: "acme-old"}) {
		t.Fatalf("the held id: %+v", owned)
	}
	if want := `skills registry refused skill "acme/x" (FORBIDDEN): ` + held +
		`; stop worker "acme-old" (w1), which holds it, or publish under another id; this worker retries until its registration deadline`; owned.Error() != want {
		t.Fatalf("message %q, want %q", owned.Error(), want)
	}
	<-contestedTwice
	r.close()
	calls := f.got()
	if want := []string{"skill:billing/x", "skill:acme/x", "skill:acme/x"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v; want %v: OUT_OF_SCOPE is not retried, FORBIDDEN is", calls, want)
	}
	if n := logs.count(slog.LevelError, scope.Error()); n != 1 {
		t.Fatalf("the refusal is logged %d times, want once: %+v", n, logs.records)
	}
	if n := logs.count(slog.LevelWarn, owned.Error()); n != 1 {
		t.Fatalf("the held id is logged %d times at warning level, want once: %+v", n, logs.records)
	}
	if got := r.acceptedItems(); len(got) != 1 || got[0].name != "acme/x" {
		t.Fatalf("accepted %+v", got)
	}
}

// One id another worker keeps holding: every item after it is registered,
// the verdict names the holder at once, the held id is retried until the
// deadline, and giving up says what holds it instead of "install / start
// it" (the registry runs).
func TestRegistrarAHeldIDBlocksNothingAndGivingUpSaysWhy(t *testing.T) {
	logs := newLogRecorder()
	const held = `skill "a/x" belongs to another worker (w1, named "other"); only the worker that registered it may register or unregister it while it is connected`
	f := &fakeRegistry{answer: func(it item, _ int) error {
		if it.key == "skill:a/x" {
			return &iii.InvocationError{Code: rules.CodeForbidden, Message: held}
		}
		return nil
	}}
	b := tiny
	b.GiveUpAfter = 50 * time.Millisecond
	r := newRegistrar(slog.New(logs), b, f.call)
	gaveUp := make(chan struct{}, 1)
	r.onGaveUp = func() { gaveUp <- struct{}{} }
	r.onRegistered = func() { t.Error("onRegistered with an item still held") }
	r.upsert(item{key: "skill:a/x", kind: "skill", name: "a/x"})
	r.upsert(item{key: "skill:b", kind: "skill", name: "b"})
	r.upsert(item{key: "prompt:c", kind: "prompt", name: "c"})
	err := waitFirst(t, r)
	var rerr *RegistrationError
	if !errors.As(err, &rerr) || len(rerr.Rejected) != 1 || rerr.Rejected[0].Holder.WorkerName != "other" {
		t.Fatalf("got %v; want the held id with its holder", err)
	}
	if got := r.acceptedItems(); len(got) != 2 {
		t.Fatalf("accepted %+v at the verdict; want b and c", got)
	}
	<-gaveUp
	r.close()
	if logs.has(slog.LevelWarn, GaveUpMessage) {
		t.Fatal("gave up with the handshake message while the registry answered")
	}
	if want := `skills registration gave up while other workers hold skill "a/x"; stop them or publish under other ids, then restart this worker`; logs.count(slog.LevelWarn, want) != 1 {
		t.Fatalf("logs %+v; want %q", logs.records, want)
	}
	if n := len(f.got()); n < 4 {
		t.Fatalf("%d calls: the held id was not retried", n)
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
