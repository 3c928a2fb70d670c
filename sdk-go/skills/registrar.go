package skills

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// Backoff configures boot-time registration (docs/publishers.md): after a
// failed round the publisher waits InitialDelay, then Multiplier times longer
// each round up to MaxDelay, and gives up GiveUpAfter after the first
// attempt. Zero fields take the defaults of DefaultBackoff.
type Backoff struct {
	InitialDelay time.Duration
	Multiplier   float64
	MaxDelay     time.Duration
	GiveUpAfter  time.Duration
}

// DefaultBackoff is 5 s, ×2, capped at 60 s, giving up after 180 s.
func DefaultBackoff() Backoff {
	return Backoff{InitialDelay: 5 * time.Second, Multiplier: 2, MaxDelay: 60 * time.Second, GiveUpAfter: 180 * time.Second}
}

func (b Backoff) withDefaults() Backoff {
	d := DefaultBackoff()
	if b.InitialDelay <= 0 {
		b.InitialDelay = d.InitialDelay
	}
	if b.Multiplier < 1 {
		b.Multiplier = d.Multiplier
	}
	if b.MaxDelay <= 0 {
		b.MaxDelay = d.MaxDelay
	}
	if b.MaxDelay < b.InitialDelay {
		b.MaxDelay = b.InitialDelay
	}
	if b.GiveUpAfter <= 0 {
		b.GiveUpAfter = d.GiveUpAfter
	}
	return b
}

// ErrGaveUp is returned by Start when registration did not complete before
// the give-up deadline (Backoff.GiveUpAfter). The publisher keeps running:
// it registers again on reconnect or when the registry appears.
var ErrGaveUp = errors.New("skills: registration with the skills registry gave up")

// ErrClosed is returned by calls made after Close, and by a Start that Close
// interrupted.
var ErrClosed = errors.New("skills: publisher closed")

func isFunctionNotFound(err error) bool {
	var ie *iii.InvocationError
	return errors.As(err, &ie) && ie.Code == iii.CodeFunctionNotFound
}

// item is one registry call: skills::register or prompts::register.
type item struct {
	key        string // "skill:<id>" / "prompt:<name>"
	kind, name string
	functionID string
	payload    any
}

func (it item) label() string { return it.kind + " " + jsonQuote(it.name) }

var errRestart = errors.New("registration restarted")

// registrar keeps the registry in step with the publisher's items. One loop
// goroutine runs registration runs one after another; a run registers every
// pending item in insertion order and retries with capped exponential
// backoff until its deadline.
type registrar struct {
	log          *slog.Logger
	backoff      Backoff
	call         func(ctx context.Context, it item) error
	onRegistered func()
	onGaveUp     func()
	onAbsent     func()

	mu        sync.Mutex
	order     []string
	items     map[string]item
	pending   map[string]uint64
	accepted  map[string]bool
	version   uint64
	started   bool
	closed    bool
	running   bool
	inCall    bool // a registry call is in flight
	cancelRun context.CancelCauseFunc
	kick      chan struct{}
	stop      chan struct{}
	loopDone  chan struct{}

	first     chan struct{} // closed once the first outcome is known
	firstErr  error
	firstSent bool
}

func newRegistrar(log *slog.Logger, b Backoff, call func(context.Context, item) error) *registrar {
	return &registrar{
		log: log, backoff: b, call: call,
		items: map[string]item{}, pending: map[string]uint64{}, accepted: map[string]bool{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), loopDone: make(chan struct{}),
		first: make(chan struct{}),
	}
}

func (r *registrar) setBackoff(b Backoff) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backoff = b
}

// upsert adds or replaces an item; once started it is registered right away.
func (r *registrar) upsert(it item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.items[it.key]; !ok {
		r.order = append(r.order, it.key)
	}
	r.items[it.key] = it
	if !r.started || r.closed {
		return
	}
	r.version++
	r.pending[it.key] = r.version
	if !r.running {
		r.kickLocked()
	}
}

func (r *registrar) kickLocked() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *registrar) markAllLocked() {
	for _, k := range r.order {
		r.version++
		r.pending[k] = r.version
	}
}

// start begins the first run; later calls do nothing. It returns the
// channel closed once the first outcome is known.
func (r *registrar) start() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return r.first
	}
	r.started = true
	r.markAllLocked()
	r.kickLocked()
	go r.loop()
	return r.first
}

// requestAll registers everything again with a fresh clock (the engine or
// the registry may have lost it).
func (r *registrar) requestAll(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.closed {
		return
	}
	r.log.Info(reason + "; registering skills and prompts again")
	r.markAllLocked()
	if r.cancelRun != nil {
		r.cancelRun(errRestart)
	}
	r.kickLocked()
}

// nudge retries what is pending now instead of after the current backoff
// wait; a call in flight is left alone (the client sends it once connected).
func (r *registrar) nudge() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.closed || len(r.pending) == 0 {
		return
	}
	if r.running {
		if r.inCall || r.cancelRun == nil {
			return
		}
		r.cancelRun(errRestart)
	}
	r.kickLocked()
}

// close stops retrying and waits for the loop to exit.
func (r *registrar) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	started := r.started
	if r.cancelRun != nil {
		r.cancelRun(ErrClosed)
	}
	close(r.stop)
	r.reportLocked(ErrClosed)
	r.mu.Unlock()
	if started {
		<-r.loopDone
	}
}

func (r *registrar) reportLocked(err error) {
	if r.firstSent {
		return
	}
	r.firstSent = true
	r.firstErr = err
	close(r.first)
}

// acceptedItems are the items the registry accepted at least once.
func (r *registrar) acceptedItems() []item {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []item
	for _, k := range r.order {
		if r.accepted[k] {
			out = append(out, r.items[k])
		}
	}
	return out
}

func (r *registrar) loop() {
	defer close(r.loopDone)
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		r.cancelRun = cancel
		r.running = true
		r.mu.Unlock()

		err := r.run(ctx)
		cause := context.Cause(ctx)
		cancel(nil)

		r.mu.Lock()
		r.cancelRun = nil
		r.running = false
		switch {
		case r.closed:
		case errors.Is(cause, errRestart):
			// requestAll queued another run.
		default:
			r.reportLocked(err)
			if err == nil && len(r.pending) > 0 {
				r.kickLocked()
			}
		}
		r.mu.Unlock()
	}
}

// errHeld ends a round that left items another worker holds: they are
// retried after the backoff wait.
var errHeld = errors.New("items are held by other workers")

// run is one registration run: rounds with backoff until every pending item
// is registered or refused, the deadline, or cancellation. The first round
// that meets refusals reports them all at once (the first outcome Start
// waits for); items another worker holds stay pending and are retried.
func (r *registrar) run(ctx context.Context) error {
	r.mu.Lock()
	cfg := r.backoff
	r.mu.Unlock()
	deadline := time.Now().Add(cfg.GiveUpAfter)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	eb := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(cfg.InitialDelay),
		backoff.WithMultiplier(cfg.Multiplier),
		backoff.WithMaxInterval(cfg.MaxDelay),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
	b := backoff.WithContext(&untilDeadline{inner: eb, deadline: deadline}, runCtx)
	held := map[string]*RejectedError{} // pending items another worker holds, by key
	var rejected []*RejectedError       // permanent refusals of this run
	var lastFailure error               // the latest failure that was not about one item
	op := func() error {
		for {
			var refused []*RejectedError
			more, err := r.round(runCtx, held, &refused)
			for _, re := range refused {
				if !re.Retried() {
					rejected = append(rejected, re)
				}
			}
			if len(refused) > 0 {
				r.mu.Lock()
				r.reportLocked(&RegistrationError{Rejected: refused})
				r.mu.Unlock()
			}
			switch {
			case err != nil:
				if runCtx.Err() == nil {
					lastFailure = err
				}
				return err
			case more:
				continue
			case len(held) > 0:
				return errHeld
			}
			return nil
		}
	}
	notify := func(err error, d time.Duration) {
		r.log.Debug("retrying skills registration", "in", d, "error", err)
	}
	err := backoff.RetryNotify(op, b, notify)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err == nil {
		if len(rejected) > 0 {
			return &RegistrationError{Rejected: rejected}
		}
		r.log.Info("registered with the skills registry: " + r.summary())
		if r.onRegistered != nil {
			r.onRegistered()
		}
		return nil
	}
	// The deadline passed. When every missing item is held by another
	// worker the registry runs: say so instead of "install / start it".
	stillHeld := r.heldPending(held)
	if stillHeld != nil {
		r.log.Warn(gaveUpHeldMessage(stillHeld))
	} else {
		r.log.Warn(GaveUpMessage)
	}
	if r.onGaveUp != nil {
		r.onGaveUp()
	}
	switch {
	case stillHeld != nil:
		return fmt.Errorf("%w: %w", ErrGaveUp, &RegistrationError{Rejected: stillHeld})
	case lastFailure != nil:
		return fmt.Errorf("%w: %w", ErrGaveUp, lastFailure)
	}
	return fmt.Errorf("%w: no answer from the skills registry within %v", ErrGaveUp, cfg.GiveUpAfter)
}

// heldPending returns, in the order items were added, the refusals of the
// pending items when another worker holds every one of them; nil when some
// pending item failed otherwise (or was never tried).
func (r *registrar) heldPending(held map[string]*RejectedError) []*RejectedError {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*RejectedError
	for _, k := range r.order {
		if _, pending := r.pending[k]; !pending {
			continue
		}
		re := held[k]
		if re == nil {
			return nil
		}
		out = append(out, re)
	}
	return out
}

// round calls the registry for every pending item, in order. A refusal of
// one item (permanent, or another worker holds it) is recorded in refused
// and the round goes on with the next item, so one id never blocks the
// others; a failure that is not about the item (the registry is absent or
// does not answer) ends the round. more reports pending items the round
// did not settle (added while it ran).
func (r *registrar) round(ctx context.Context, held map[string]*RejectedError, refused *[]*RejectedError) (more bool, err error) {
	r.mu.Lock()
	keys := append([]string(nil), r.order...)
	r.mu.Unlock()
	for _, k := range keys {
		r.mu.Lock()
		v, pending := r.pending[k]
		it := r.items[k]
		r.mu.Unlock()
		if !pending {
			continue
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		r.mu.Lock()
		r.inCall = true
		r.mu.Unlock()
		err := r.call(ctx, it)
		r.mu.Lock()
		r.inCall = false
		r.mu.Unlock()
		if ctx.Err() != nil && err != nil {
			return false, err
		}
		if err == nil {
			delete(held, k)
			r.mu.Lock()
			r.accepted[k] = true
			if r.pending[k] == v {
				delete(r.pending, k)
			}
			r.mu.Unlock()
			continue
		}
		re := refusalOf(it.kind, it.name, err)
		switch {
		case re == nil:
			if isFunctionNotFound(err) && r.onAbsent != nil {
				r.onAbsent()
			}
			r.log.Info(fmt.Sprintf("skills registration of %s failed (%v); will retry", it.label(), err))
			return false, err
		case re.Retried():
			// Logged when it starts or its text changes, not at every retry.
			if prev := held[k]; prev == nil || prev.Error() != re.Error() {
				r.log.Warn(re.Error())
			} else {
				r.log.Debug(re.Error())
			}
			held[k] = re
		default:
			r.log.Error(re.Error())
			delete(held, k)
			r.mu.Lock()
			if r.pending[k] == v {
				delete(r.pending, k)
			}
			r.mu.Unlock()
		}
		*refused = append(*refused, re)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.pending {
		if held[k] == nil {
			return true, nil
		}
	}
	return false, nil
}

func (r *registrar) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	skills, prompts := 0, 0
	for _, it := range r.items {
		if it.kind == "skill" {
			skills++
		} else {
			prompts++
		}
	}
	return fmt.Sprintf("%d skill%s, %d prompt%s", skills, plural(skills), prompts, plural(prompts))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// untilDeadline caps an exponential backoff so that the last wait ends at the
// deadline and no wait starts after it.
type untilDeadline struct {
	inner    backoff.BackOff
	deadline time.Time
}

func (u *untilDeadline) Reset() { u.inner.Reset() }

func (u *untilDeadline) NextBackOff() time.Duration {
	rem := time.Until(u.deadline)
	if rem <= 0 {
		return backoff.Stop
	}
	d := u.inner.NextBackOff()
	if d == backoff.Stop {
		return backoff.Stop
	}
	return min(d, rem)
}
