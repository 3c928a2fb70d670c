package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
)

// Defaults of Options.
const (
	DefaultMaxAttempts      = 12
	DefaultInitialInterval  = 5 * time.Second
	DefaultMaxInterval      = 2 * time.Hour
	DefaultMultiplier       = 3
	DefaultTimeout          = 15 * time.Second
	DefaultConcurrency      = 4
	DefaultMaxQueue         = 10000
	DefaultMaxDead          = 1000
	DefaultMaxResponseBytes = 64 << 10
)

// Options configures a Dispatcher.
type Options struct {
	// Endpoints are the receivers; each must pass Validate. Two with the
	// same URL are refused.
	Endpoints []Endpoint
	// KV keeps the queue and the dead letters (required).
	KV kv.Table
	// Node names this node in the keys it writes: each node delivers the
	// changes it published (default "local").
	Node string
	// MaxAttempts is how many times a delivery is tried before it becomes
	// a dead letter (default 12).
	MaxAttempts int
	// InitialInterval, Multiplier and MaxInterval shape the wait before
	// each retry: 5 s, ×3, at most 2 h by default (cenkalti/backoff,
	// ±20 % jitter); the default schedule spans about 9½ hours.
	InitialInterval time.Duration
	Multiplier      float64
	MaxInterval     time.Duration
	// Timeout bounds one attempt: connecting, sending, the answer and
	// reading it (default 15 s).
	Timeout time.Duration
	// Concurrency is how many deliveries to one endpoint are in flight at
	// once, for different skills (default 4).
	Concurrency int
	// MaxQueue bounds the deliveries waiting per endpoint (default
	// 10 000); a change past it goes straight to the dead letters.
	MaxQueue int
	// MaxDead bounds the dead letters kept per endpoint (default 1 000);
	// the oldest go first.
	MaxDead int
	// MaxResponseBytes is how much of an answer is read (default 64 KiB);
	// the rest is not.
	MaxResponseBytes int64
	// Transport sends the requests (default: a transport with 5 s connect
	// and TLS timeouts that honours HTTPS_PROXY/HTTP_PROXY). Redirects are
	// never followed, whatever the transport.
	Transport http.RoundTripper
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives failures (default slog.Default()).
	Logger *slog.Logger
}

// Delivery is one change on its way to one endpoint, as queued and as
// listed in the dead letters.
type Delivery struct {
	// Key names a dead letter for Resend.
	Key string `json:"key"`
	// ID is the webhook-id: the same on every attempt and for every
	// endpoint of one change, so receivers can drop a repeat.
	ID       string          `json:"id"`
	Seq      uint64          `json:"seq"`
	Endpoint string          `json:"endpoint"` // the endpoint's id (a hash of its URL)
	URL      string          `json:"url"`      // ShownURL of the receiver; deliveries go to the configured URL of Endpoint, never to this
	SkillID  string          `json:"skill_id"`
	Type     Event           `json:"type"`
	Body     json.RawMessage `json:"body"`
	Attempts int             `json:"attempts"`
	// NextAt is when the next attempt is due.
	NextAt     time.Time `json:"next_at"`
	CreatedAt  time.Time `json:"created_at"`
	LastError  string    `json:"last_error,omitempty"`
	LastStatus int       `json:"last_status,omitempty"`
	DeadAt     time.Time `json:"dead_at,omitzero"`
}

// Change is one change of a skill, as the registry reports it.
type Change struct {
	Type Event
	// ID is the skill's id.
	ID string
	// Version is the version concerned, when there is one (0: none).
	Version int
	// Label is the label moved, for label events.
	Label string
	// At is when the change happened (default: when published).
	At time.Time
	// Extra are more fields of data (the version rolled back from, who
	// made the change, …); they cannot replace id, version or label.
	Extra map[string]any
}

// body is what a receiver gets.
type body struct {
	Type      Event          `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// Dispatcher queues changes durably and delivers them. Create it with New,
// then Run it.
type Dispatcher struct {
	opts   Options
	client *http.Client
	queues []*queue
	byID   map[string]*queue

	seq     atomic.Uint64
	stripes [64]sync.Mutex // per skill id: publishing one skill is ordered
	seed    maphash.Seed
	orphans int // queued deliveries found at start for endpoints no longer configured
}

// New checks the options, loads what a previous run left queued and dead,
// and returns a Dispatcher; nothing is sent before Run.
func New(ctx context.Context, opts Options) (*Dispatcher, error) {
	if opts.KV == nil {
		return nil, errors.New("webhooks: Options.KV is required: the store the queue is kept in")
	}
	setDefaults(&opts)
	d := &Dispatcher{opts: opts, byID: map[string]*queue{}, seed: maphash.MakeSeed()}
	d.client = &http.Client{
		Transport: opts.Transport,
		Timeout:   opts.Timeout,
		// Deliveries go to the configured URL only: a redirect is an
		// answer like any other, and not a 2xx.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, ep := range opts.Endpoints {
		if err := ep.Validate(); err != nil {
			return nil, err
		}
		ep, _ := ep.Resolved() // Validate read it already
		id := endpointID(ep.URL)
		if d.byID[id] != nil {
			return nil, fmt.Errorf("webhook %s is configured twice; list each URL once (with every event it takes)", ep.URL)
		}
		key, _ := ParseSecret(ep.Secret)
		q := newQueue(d, ep, id, key)
		d.queues = append(d.queues, q)
		d.byID[id] = q
	}
	if err := d.load(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

func setDefaults(o *Options) {
	if o.Node == "" {
		o.Node = "local"
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.InitialInterval <= 0 {
		o.InitialInterval = DefaultInitialInterval
	}
	if o.MaxInterval <= 0 {
		o.MaxInterval = DefaultMaxInterval
	}
	if o.Multiplier < 1 {
		o.Multiplier = DefaultMultiplier
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.MaxDead <= 0 {
		o.MaxDead = DefaultMaxDead
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Transport == nil {
		o.Transport = defaultTransport(o.Concurrency)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Keys: q/<node>/<endpoint>/<seq> for a queued delivery, d/<node>/<endpoint>/<seq>
// for a dead letter; the sequence is zero-padded so keys sort in order.
func (d *Dispatcher) queueKey(ep string, seq uint64) string {
	return "q/" + d.opts.Node + "/" + ep + "/" + fmt.Sprintf("%020d", seq)
}

func (d *Dispatcher) deadKey(ep string, seq uint64) string {
	return "d/" + d.opts.Node + "/" + ep + "/" + fmt.Sprintf("%020d", seq)
}

// load reads this node's queue and dead letters.
func (d *Dispatcher) load(ctx context.Context) error {
	queued, err := d.opts.KV.List(ctx, "q/"+d.opts.Node+"/")
	if err != nil {
		return fmt.Errorf("webhooks: read the queue: %w", err)
	}
	dead, err := d.opts.KV.List(ctx, "d/"+d.opts.Node+"/")
	if err != nil {
		return fmt.Errorf("webhooks: read the dead letters: %w", err)
	}
	var maxSeq uint64
	for _, r := range dead {
		var del Delivery
		if json.Unmarshal(r.Value, &del) != nil {
			continue
		}
		maxSeq = max(maxSeq, del.Seq)
		if q := d.byID[del.Endpoint]; q != nil {
			q.dead = append(q.dead, del.Seq) // List is in key order: oldest first
		}
	}
	for _, r := range queued {
		var del Delivery
		if err := json.Unmarshal(r.Value, &del); err != nil {
			d.opts.Logger.Warn("webhooks: a queued delivery is unreadable; it is left as it is", "key", r.Key, "error", err)
			continue
		}
		maxSeq = max(maxSeq, del.Seq)
		q := d.byID[del.Endpoint]
		if q == nil {
			d.orphans++
			continue
		}
		q.queued.Add(1)
		q.push(&del)
	}
	if d.orphans > 0 {
		d.opts.Logger.Warn("webhooks: deliveries are queued for URLs no longer configured; they are not sent (configure the URL again to send them)", "deliveries", d.orphans)
	}
	d.seq.Store(maxSeq)
	return nil
}

// Run delivers until ctx ends. Deliveries in flight then are cancelled
// and stay queued: a later Run, or the next process, tries them again with
// the same webhook-id. Run one at a time.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, q := range d.queues {
		wg.Add(1)
		go func() { defer wg.Done(); q.run(ctx) }()
	}
	wg.Wait()
}

// Publish queues change for every endpoint that takes its event; it
// returns once each delivery is stored (durable as the KV is). Changes of
// one skill are delivered in the order Publish was called for them. An
// endpoint whose queue is full gets the change as a dead letter at once.
func (d *Dispatcher) Publish(ctx context.Context, c Change) error {
	if !slices.Contains(Events, c.Type) {
		return fmt.Errorf("webhooks: unknown event %q (expected one of %s)", c.Type, eventList())
	}
	if c.ID == "" {
		return errors.New("webhooks: a change needs the id of its skill")
	}
	now := d.opts.Now()
	if c.At.IsZero() {
		c.At = now
	}
	data := make(map[string]any, len(c.Extra)+3)
	for k, v := range c.Extra {
		data[k] = v
	}
	data["id"] = c.ID
	delete(data, "version")
	delete(data, "label")
	if c.Version > 0 {
		data["version"] = c.Version
	}
	if c.Label != "" {
		data["label"] = c.Label
	}
	b, err := json.Marshal(body{Type: c.Type, Timestamp: c.At.UTC(), Data: data})
	if err != nil {
		return fmt.Errorf("webhooks: encode the %s change of %s: %w", c.Type, c.ID, err)
	}
	msgID := newMessageID()

	stripe := &d.stripes[maphash.String(d.seed, c.ID)%uint64(len(d.stripes))]
	stripe.Lock()
	defer stripe.Unlock()
	var errs []error
	for _, q := range d.queues {
		if !q.ep.wants(c.Type) {
			continue
		}
		del := &Delivery{ID: msgID, Seq: d.seq.Add(1), Endpoint: q.id, URL: ShownURL(q.ep.URL), SkillID: c.ID,
			Type: c.Type, Body: b, NextAt: now, CreatedAt: now}
		if !q.reserve() {
			del.LastError = fmt.Sprintf("not queued: the queue for this URL is full (%d deliveries waiting)", d.opts.MaxQueue)
			if err := q.bury(ctx, del); err != nil {
				errs = append(errs, err)
			}
			d.opts.Logger.Warn("webhooks: queue full; the change is a dead letter", "url", q.ep.URL, "skill", c.ID, "type", c.Type)
			continue
		}
		raw, _ := json.Marshal(del)
		if err := d.opts.KV.Set(ctx, d.queueKey(q.id, del.Seq), raw); err != nil {
			q.release()
			errs = append(errs, fmt.Errorf("webhooks: queue the %s change of %s for %s: %w", c.Type, c.ID, q.ep.URL, err))
			continue
		}
		q.push(del)
	}
	return errors.Join(errs...)
}

// DeadLetters lists this node's dead letters, oldest first.
func (d *Dispatcher) DeadLetters(ctx context.Context) ([]Delivery, error) {
	rows, err := d.opts.KV.List(ctx, "d/"+d.opts.Node+"/")
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the dead letters: %w", err)
	}
	out := make([]Delivery, 0, len(rows))
	for _, r := range rows {
		var del Delivery
		if json.Unmarshal(r.Value, &del) == nil {
			out = append(out, del)
		}
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmpUint(a.Seq, b.Seq) })
	return out, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Resend queues a dead letter again (Delivery.Key), behind the changes of
// its skill already queued, with the same webhook-id and a fresh count of
// attempts.
func (d *Dispatcher) Resend(ctx context.Context, key string) error {
	ep, seqText, ok := strings.Cut(key, "/")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("webhooks: %q is not a dead letter's key (expected <endpoint>/<seq>, as DeadLetters lists)", key)
	}
	q := d.byID[ep]
	if q == nil {
		return fmt.Errorf("webhooks: dead letter %s is for a URL no longer configured; configure it again to resend", key)
	}
	raw, found, err := d.opts.KV.Get(ctx, d.deadKey(ep, seq))
	if err != nil {
		return fmt.Errorf("webhooks: read dead letter %s: %w", key, err)
	}
	var del Delivery
	if !found || json.Unmarshal(raw, &del) != nil {
		return fmt.Errorf("webhooks: no dead letter %s (resent already, or dropped as the oldest past %d)", key, d.opts.MaxDead)
	}
	stripe := &d.stripes[maphash.String(d.seed, del.SkillID)%uint64(len(d.stripes))]
	stripe.Lock()
	defer stripe.Unlock()
	if !q.reserve() {
		return fmt.Errorf("webhooks: the queue for %s is full (%d deliveries waiting); resend later", ShownURL(q.ep.URL), d.opts.MaxQueue)
	}
	now := d.opts.Now()
	del.Seq, del.Attempts, del.NextAt, del.DeadAt = d.seq.Add(1), 0, now, time.Time{}
	del.URL = q.ep.URL
	raw, _ = json.Marshal(&del)
	if err := d.opts.KV.Set(ctx, d.queueKey(ep, del.Seq), raw); err != nil {
		q.release()
		return fmt.Errorf("webhooks: queue dead letter %s again: %w", key, err)
	}
	if err := d.opts.KV.Delete(ctx, d.deadKey(ep, seq)); err != nil {
		d.opts.Logger.Warn("webhooks: a resent dead letter is still listed", "key", key, "error", err)
	}
	q.forget(seq)
	q.push(&del)
	return nil
}

// Status is one endpoint's state, for the web page and metrics.
type Status struct {
	URL           string    `json:"url"` // ShownURL of the receiver
	Events        []Event   `json:"events,omitempty"`
	Queued        int       `json:"queued"`
	Dead          int       `json:"dead"`
	Delivered     uint64    `json:"delivered"`
	FailedTries   uint64    `json:"failed_attempts"`
	LastError     string    `json:"last_error,omitempty"`
	LastDelivered time.Time `json:"last_delivered,omitzero"`
}

// Status reports every endpoint, in the configured order.
func (d *Dispatcher) Status() []Status {
	out := make([]Status, len(d.queues))
	for i, q := range d.queues {
		out[i] = q.status()
	}
	return out
}

// newMessageID is a webhook-id: msg_ and 26 base32 characters of random.
func newMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
