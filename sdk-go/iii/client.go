package iii

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/gorilla/websocket"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// Version is the SDK version reported to the engine in
// engine::workers::register.
const Version = "0.1.0"

// DefaultEngineURL is where an iii engine listens for workers by default
// (an IPv4 loopback literal: "localhost" may resolve to ::1 first).
const DefaultEngineURL = "ws://127.0.0.1:49134"

// Defaults of the client options.
const (
	DefaultInvocationTimeout = 30 * time.Second
	DefaultOfflineQueueSize  = 1000
	DefaultPingInterval      = 20 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	handshakeTimeout         = 10 * time.Second
)

// ReconnectConfig controls the exponential backoff between connection
// attempts: delay = min(InitialDelay*BackoffMultiplier^attempt, MaxDelay), randomised
// by ±JitterFactor (a fraction of the delay). The attempt counter resets after every
// successful open.
//
// Zero fields take the defaults of DefaultReconnectConfig (1 s, 30 s, ×2,
// jitter 0.3, retry forever). A negative JitterFactor disables jitter. MaxRetries < 0
// (or 0, the zero value) retries forever; MaxRetries > 0 gives up after that
// many consecutive failed attempts, failing pending calls with an error that
// wraps ErrNotConnected.
type ReconnectConfig struct {
	InitialDelay      time.Duration
	MaxDelay          time.Duration
	BackoffMultiplier float64
	JitterFactor      float64
	MaxRetries        int
}

// DefaultReconnectConfig returns the backoff the official iii SDKs use.
func DefaultReconnectConfig() ReconnectConfig {
	return ReconnectConfig{InitialDelay: time.Second, MaxDelay: 30 * time.Second, BackoffMultiplier: 2, JitterFactor: 0.3, MaxRetries: -1}
}

func (r ReconnectConfig) withDefaults() ReconnectConfig {
	d := DefaultReconnectConfig()
	if r.InitialDelay <= 0 {
		r.InitialDelay = d.InitialDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = d.MaxDelay
	}
	if r.MaxDelay < r.InitialDelay {
		r.MaxDelay = r.InitialDelay
	}
	if r.BackoffMultiplier < 1 {
		r.BackoffMultiplier = d.BackoffMultiplier
	}
	switch {
	case r.JitterFactor == 0:
		r.JitterFactor = d.JitterFactor
	case r.JitterFactor < 0:
		r.JitterFactor = 0
	case r.JitterFactor > 1:
		r.JitterFactor = 1
	}
	if r.MaxRetries == 0 {
		r.MaxRetries = -1
	}
	return r
}

// Option configures a Client.
type Option func(*options)

type options struct {
	name              string
	description       string
	reconnect         ReconnectConfig
	headers           http.Header
	logger            *slog.Logger
	invocationTimeout time.Duration
	offlineQueueSize  int
	pingInterval      time.Duration
	idleTimeout       time.Duration
	netDial           func(ctx context.Context, network, addr string) (net.Conn, error)
	anonymous         bool
	resultHold        time.Duration
	resultResend      time.Duration
}

// WithResultHold makes every invocation result leave no sooner than d
// after its invokefunction arrived. The real iii engine (0.23) records an
// invocation as pending only after it has sent it to the worker, so a
// result that comes back within that window finds no caller and the call
// is never answered (docs/upstream-engine-race.md). A handler that takes
// longer than d pays nothing; a faster one waits in its own goroutine,
// never holding up other invocations. Zero (the default) sends at once,
// which is right for engines without the race (our embedded engine).
func WithResultHold(d time.Duration) Option {
	return func(o *options) { o.resultHold = max(d, 0) }
}

// WithResultResend sends every invocation result a second time, d after
// the first, on the same connection. Against the real iii engine (0.23) a
// result that beat the engine's bookkeeping is dropped
// (docs/upstream-engine-race.md); by the time the copy arrives the engine
// expects it, and delivers it. When the first one was delivered, the engine
// finds no caller for the copy and drops it (a debug log line), so callers
// see each result once. It costs one extra frame per call and no latency.
// A copy that has not left yet is dropped when an invocation under the
// same invocation_id arrives: the engine would take it for the answer to
// that new call. Zero (the default) sends once. Never use it against an
// engine that treats a second result as an error.
func WithResultResend(d time.Duration) Option {
	return func(o *options) { o.resultResend = max(d, 0) }
}

// WithName sets the worker name sent in engine::workers::register. Default:
// env III_WORKER_NAME, else "hostname:pid".
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithAnonymous makes the client skip engine::workers::register: it does
// not announce a name or runtime. For one-shot callers such as a CLI call,
// which an engine then lists without a name and logs only at debug level
// instead of a "worker joined" / "worker left" pair per call.
func WithAnonymous() Option { return func(o *options) { o.anonymous = true } }

// WithDescription sets the worker description sent in engine::workers::register.
func WithDescription(d string) Option { return func(o *options) { o.description = d } }

// WithReconnectConfig sets the reconnection backoff (see ReconnectConfig).
func WithReconnectConfig(rc ReconnectConfig) Option {
	return func(o *options) { o.reconnect = rc }
}

// WithHeaders adds HTTP headers to the WebSocket upgrade request (e.g. for
// engines with an RBAC auth function).
func WithHeaders(h http.Header) Option { return func(o *options) { o.headers = h.Clone() } }

// WithLogger sets the logger. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithInvocationTimeout sets the default Trigger timeout (default 30 s).
func WithInvocationTimeout(d time.Duration) Option {
	return func(o *options) { o.invocationTimeout = d }
}

// WithOfflineQueueSize bounds how many Trigger calls are held while
// disconnected (default 1000). 0 disables the queue: calls made while
// disconnected fail at once with ErrNotConnected.
func WithOfflineQueueSize(n int) Option { return func(o *options) { o.offlineQueueSize = n } }

// WithKeepalive sets how often a WebSocket ping is sent (default 20 s) and
// after how long without any inbound frame (message, ping or pong) the
// connection is dropped and re-dialled (default 60 s).
func WithKeepalive(pingInterval, idleTimeout time.Duration) Option {
	return func(o *options) { o.pingInterval, o.idleTimeout = pingInterval, idleTimeout }
}

// WithNetDialer sets how the client opens the connection the WebSocket
// runs over (default: TCP to the URL's host). An engine embedded in the same
// process can hand out in-process connections this way; the URL still
// names the engine in the upgrade request.
func WithNetDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(o *options) { o.netDial = dial }
}

// Client is a connection to an iii engine as a worker. Create it with
// RegisterWorker, register functions/triggers (before or after Connect), then
// Connect. All methods are safe for concurrent use.
type Client struct {
	url  string
	opts options
	log  *slog.Logger

	// ctx lives until the client stops for good; connections derive theirs.
	ctx    context.Context
	cancel context.CancelFunc

	firstConn chan struct{} // closed on the first successful open
	firstOnce sync.Once
	stopped   chan struct{} // closed when the client stops for good
	runDone   chan struct{} // closed when the connection loop exits

	provider serialExecutor // runs trigger-provider callbacks in arrival order

	mu            sync.Mutex
	started       bool
	stopErr       error // why the client stopped; nil while running
	conn          *wsConn
	workerID      string
	reattachToken string
	seq           uint64
	functions     map[string]*functionEntry
	triggers      map[string]*triggerEntry
	triggerTypes  map[string]*triggerTypeEntry
	pending       map[string]*pendingCall
	offline       []*queuedCall
	onConnect     []connectHook
	// refused are the functions the engine refused on the current
	// connection (registrationrejected FUNCTION_NAMESPACE_CONFLICT).
	refused map[string]*RegistrationRejectedError
}

type connectHook struct {
	id uint64
	f  func(context.Context)
}

// New builds a client for the engine at url (for example DefaultEngineURL;
// "" reads $III_URL, else DefaultEngineURL: EngineURL) without dialling:
// Connect starts the connection. Use it when nothing may reach the engine
// before the program says so; RegisterWorker is the usual entry point. A
// url that cannot be an engine's stops the client at once: Connect,
// FatalError and every call return EngineURL's error, and nothing retries.
func New(url string, opts ...Option) *Client {
	resolved, urlErr := EngineURL(url)
	if urlErr == nil {
		url = resolved
	}
	o := options{
		reconnect:         DefaultReconnectConfig(),
		invocationTimeout: DefaultInvocationTimeout,
		offlineQueueSize:  DefaultOfflineQueueSize,
		pingInterval:      DefaultPingInterval,
		idleTimeout:       DefaultIdleTimeout,
	}
	for _, opt := range opts {
		opt(&o)
	}
	o.reconnect = o.reconnect.withDefaults()
	if o.invocationTimeout <= 0 {
		o.invocationTimeout = DefaultInvocationTimeout
	}
	if o.offlineQueueSize < 0 {
		o.offlineQueueSize = 0
	}
	if o.pingInterval <= 0 {
		o.pingInterval = DefaultPingInterval
	}
	if o.idleTimeout <= 0 {
		o.idleTimeout = DefaultIdleTimeout
	}
	if o.name == "" {
		o.name = defaultWorkerName()
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		url:          url,
		opts:         o,
		log:          o.logger.With("component", "iii", "url", url),
		ctx:          ctx,
		cancel:       cancel,
		firstConn:    make(chan struct{}),
		stopped:      make(chan struct{}),
		runDone:      make(chan struct{}),
		functions:    map[string]*functionEntry{},
		triggers:     map[string]*triggerEntry{},
		triggerTypes: map[string]*triggerTypeEntry{},
		pending:      map[string]*pendingCall{},
	}
	if urlErr != nil {
		c.stop(fmt.Errorf("iii: %w", urlErr))
	}
	return c
}

// RegisterWorker builds a client for the engine at url (for example
// DefaultEngineURL; "" reads $III_URL, else DefaultEngineURL, as New does)
// and starts connecting in the background, like
// registerWorker of the Node and Python SDKs: it returns at once, retries
// with backoff while the engine is absent, and replays every registration on
// each connection, so functions and triggers may be registered before or
// after it connects. Connect waits for the first connection; Close stops.
func RegisterWorker(url string, opts ...Option) *Client {
	c := New(url, opts...)
	c.start()
	return c
}

// start launches the connection loop once; it returns the stop reason when
// the client already stopped for good.
func (c *Client) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return c.stopErr
	}
	if !c.started {
		c.started = true
		go c.run()
	}
	return nil
}

func defaultWorkerName() string {
	if n := os.Getenv("III_WORKER_NAME"); n != "" {
		return n
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// Connect starts the connection loop if New built the client (RegisterWorker
// already started it) and waits until the first connection is open
// (registrations replayed) or ctx ends. The loop keeps reconnecting in the
// background until Close, also when Connect returns ctx's error. Calling
// Connect again just waits for the first connection.
func (c *Client) Connect(ctx context.Context) error {
	if err := c.start(); err != nil {
		return err
	}
	select {
	case <-c.firstConn:
		return nil
	case <-c.stopped:
		return c.stopError()
	case <-ctx.Done():
		return fmt.Errorf("iii: connect to %s: %w", c.url, ctx.Err())
	}
}

// Close stops reconnecting, fails pending and queued calls with ErrClosed,
// closes the socket and waits for the connection loop to exit. Handlers that
// are still running see their context cancelled. Close is idempotent.
func (c *Client) Close() error {
	c.stop(ErrClosed)
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started {
		<-c.runDone
	}
	return nil
}

// FatalError reports why the client stopped for good (wrapping ErrClosed
// after Close or a fatal registrationrejected, ErrNotConnected after giving
// up reconnecting), or nil while it is running. The official Go SDK names its
// accessor the same way.
func (c *Client) FatalError() error { return c.stopError() }

// WorkerID is the worker_id the engine assigned on the latest connection
// ("" before the first workerregistered frame).
func (c *Client) WorkerID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workerID
}

// Connected reports whether a connection is currently open.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

// RefusedFunctions lists the functions the engine refused on the current
// connection (another live worker holds the id, the engine reserves it, or
// the worker's token does not cover it), sorted by id. A worker that needs
// its ids checks it after a round trip to the engine (any call answered
// after the connection opened): the engine processes a connection's
// frames in order, so refusals of the replayed registrations arrive first.
func (c *Client) RefusedFunctions() []*RegistrationRejectedError {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*RegistrationRejectedError, 0, len(c.refused))
	for _, r := range c.refused {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *RegistrationRejectedError) int { return strings.Compare(a.FunctionID, b.FunctionID) })
	return out
}

// TriggerTypeIDs lists the trigger types this client provides, sorted. The
// engine does not answer registertriggertype, so a worker that must own
// its types checks them itself (our engine's engine::triggers::info names
// the provider_worker_id).
func (c *Client) TriggerTypeIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.triggerTypes))
	for id := range c.triggerTypes {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// RetryRefusedFunctions sends the registration of every refused function
// again on the current connection (the id may have been freed since) and
// forgets the refusals; a new refusal is recorded again. It returns how
// many it sent.
func (c *Client) RetryRefusedFunctions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return 0
	}
	n := 0
	for id := range c.refused {
		if e := c.functions[id]; e != nil {
			c.conn.send(e.frame)
			n++
		}
	}
	c.refused = nil
	return n
}

// OnConnect registers f to run after each (re)connect, once every
// registration has been replayed to the engine. If the client is connected
// when OnConnect is called, f also runs for the current connection. Hooks run
// one after another, in registration order, on a goroutine of their own; ctx
// is cancelled when that connection ends. The returned func removes the hook.
func (c *Client) OnConnect(f func(ctx context.Context)) (remove func()) {
	c.mu.Lock()
	c.seq++
	id := c.seq
	c.onConnect = append(c.onConnect, connectHook{id: id, f: f})
	cn := c.conn
	c.mu.Unlock()
	if cn != nil {
		go f(cn.ctx)
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.onConnect = slices.DeleteFunc(c.onConnect, func(h connectHook) bool { return h.id == id })
	}
}

func (c *Client) stopError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

// stop ends the client for good with err: no more reconnects, every pending
// and queued call fails with err, the current socket is closed.
func (c *Client) stop(err error) {
	c.mu.Lock()
	if c.stopErr != nil {
		c.mu.Unlock()
		return
	}
	c.stopErr = err
	cn := c.conn
	c.conn = nil
	pending := c.pending
	c.pending = map[string]*pendingCall{}
	c.offline = nil
	c.mu.Unlock()

	close(c.stopped)
	for _, p := range pending {
		p.ch <- callResult{err: err}
	}
	if cn != nil {
		cn.closeGracefully()
	}
	c.cancel()
}

// run is the connection loop: dial, serve until the socket drops, back off,
// repeat, until the client stops.
func (c *Client) run() {
	defer close(c.runDone)
	rc := c.opts.reconnect
	b := &backoff.ExponentialBackOff{
		InitialInterval:     rc.InitialDelay,
		RandomizationFactor: rc.JitterFactor,
		Multiplier:          rc.BackoffMultiplier,
		MaxInterval:         rc.MaxDelay,
		MaxElapsedTime:      0, // never stop on elapsed time; MaxRetries decides
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	b.Reset()
	failures := 0
	for c.ctx.Err() == nil {
		ws, err := c.dial()
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			failures++
			if rc.MaxRetries >= 0 && failures > rc.MaxRetries {
				c.log.Error("iii: giving up connecting", "attempts", failures, "error", err)
				c.stop(fmt.Errorf("iii: gave up after %d failed connection attempts to %s (last error: %v): %w",
					failures, c.url, err, ErrNotConnected))
				return
			}
			delay := b.NextBackOff()
			c.log.Warn("iii: connection attempt failed", "attempt", failures, "retry_in", delay, "error", err)
			if !c.sleep(delay) {
				return
			}
			continue
		}
		failures = 0
		b.Reset()
		c.serve(ws)
		if c.ctx.Err() != nil {
			return
		}
		delay := b.NextBackOff()
		c.log.Warn("iii: connection lost, reconnecting", "retry_in", delay)
		if !c.sleep(delay) {
			return
		}
	}
}

func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// writeBuffers is shared by every connection: a client frame is masked
// through the write buffer and each buffer-full goes out as its own fragment
// and syscall, so large results want a large buffer, held only while a
// message is being written.
var writeBuffers sync.Pool

func (c *Client) dial() (*websocket.Conn, error) {
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: handshakeTimeout,
		WriteBufferSize:  64 << 10,
		WriteBufferPool:  &writeBuffers,
		NetDialContext:   c.opts.netDial,
	}
	ws, resp, err := d.DialContext(c.ctx, c.url, c.opts.headers)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %s)", c.url, err, resp.Status)
		}
		return nil, fmt.Errorf("dial %s: %w", c.url, err)
	}
	return ws, nil
}

// serve runs one connection until it drops.
func (c *Client) serve(ws *websocket.Conn) {
	cn := newWSConn(c.ctx, ws)
	ws.SetReadLimit(-1) // no limit: results can be large documents
	idle := c.opts.idleTimeout
	alive := func() { _ = ws.SetReadDeadline(time.Now().Add(idle)) }
	alive()
	ws.SetPongHandler(func(string) error { alive(); return nil })
	ws.SetPingHandler(func(data string) error {
		alive()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})

	c.mu.Lock()
	if c.stopErr != nil {
		c.mu.Unlock()
		cn.close()
		return
	}
	c.conn = cn
	c.refused = nil
	for _, frame := range c.replayLocked() {
		cn.send(frame)
	}
	c.flushOfflineLocked(cn)
	hooks := slices.Clone(c.onConnect)
	c.mu.Unlock()

	c.log.Info("iii: connected")
	c.firstOnce.Do(func() { close(c.firstConn) })
	go cn.writeLoop(c.opts.pingInterval)
	if len(hooks) > 0 {
		go func() {
			for _, h := range hooks {
				if cn.ctx.Err() != nil {
					return
				}
				h.f(cn.ctx)
			}
		}()
	}

	for {
		_, data, err := wire.ReadMessage(ws)
		if err != nil {
			if c.stopError() == nil { // not our own Close
				c.log.Warn("iii: connection closed", "error", err)
			}
			break
		}
		alive()
		c.dispatch(cn, data)
	}
	cn.close()
	c.dropped(cn)
}

// dropped forgets a closed connection and fails the calls that were sent on
// it: their results can no longer arrive.
func (c *Client) dropped(cn *wsConn) {
	c.mu.Lock()
	if c.conn == cn {
		c.conn = nil
	}
	var lost []*pendingCall
	for id, p := range c.pending {
		if p.conn == cn {
			delete(c.pending, id)
			lost = append(lost, p)
		}
	}
	c.mu.Unlock()
	for _, p := range lost {
		p.ch <- callResult{err: &InvocationError{
			FunctionID: p.functionID,
			Code:       wire.CodeInvocationStopped,
			Message:    "connection to the engine was lost before the result arrived",
			cause:      ErrNotConnected,
		}}
	}
}

// replayLocked returns the frames every connection starts with, in the order
// real engines need: reattach, the worker hello, trigger types, functions,
// triggers.
func (c *Client) replayLocked() [][]byte {
	var out [][]byte
	if c.workerID != "" {
		out = append(out, wire.EncodeMessage(&wire.Message{Type: wire.TypeReattach, PreviousWorkerID: c.workerID, ReattachToken: c.reattachToken}))
	}
	if !c.opts.anonymous {
		hello := map[string]any{
			"name":    c.opts.name,
			"pid":     os.Getpid(),
			"runtime": "go",
			"version": Version,
			"os":      runtime.GOOS + " " + runtime.GOARCH,
		}
		if c.opts.description != "" {
			hello["description"] = c.opts.description
		}
		out = append(out, wire.EncodeMessage(&wire.Message{
			Type:       wire.TypeInvokeFunction,
			FunctionID: FnRegisterWorker,
			Data:       mustMarshal(hello),
			Action:     VoidAction(),
		}))
	}
	for _, e := range sortedBySeq(c.triggerTypes) {
		out = append(out, e.frame)
	}
	for _, e := range sortedBySeq(c.functions) {
		out = append(out, e.frame)
	}
	for _, e := range sortedBySeq(c.triggers) {
		out = append(out, e.frame)
	}
	return out
}

type sequenced interface{ order() uint64 }

func sortedBySeq[E sequenced](m map[string]E) []E {
	out := make([]E, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b E) int {
		switch {
		case a.order() < b.order():
			return -1
		case a.order() > b.order():
			return 1
		}
		return 0
	})
	return out
}

// dispatch handles one inbound frame. It never blocks on handlers.
func (c *Client) dispatch(cn *wsConn, data []byte) {
	if f, ok := wire.ScanResultFrame(data); ok && c.resolveScanned(f) {
		return
	}
	// An invocation's payload (a skill body, say) is checked once and
	// handed to the handler as it is; the full decode would check it, scan
	// it again and copy it.
	if f, ok := wire.ScanInvokeFrame(data); ok && wire.Valid(f.Data) && (f.Metadata == nil || wire.Valid(f.Metadata)) {
		c.startInvoke(cn, wire.Message{Type: wire.TypeInvokeFunction, InvocationID: f.InvocationID,
			FunctionID: f.FunctionID, Data: f.Data, Metadata: f.Metadata, Action: f.Action,
			Traceparent: f.Traceparent, Baggage: f.Baggage, TriggerID: f.TriggerID})
		return
	}
	var m wire.Message
	if err := json.Unmarshal(data, &m); err != nil {
		c.log.Warn("iii: dropping undecodable frame", "error", err, "frame", truncate(data, 200))
		return
	}
	switch m.Type {
	case wire.TypeWorkerRegistered:
		c.mu.Lock()
		c.workerID = m.WorkerID
		c.reattachToken = m.ReattachToken
		c.mu.Unlock()
		c.log.Debug("iii: worker registered", "worker_id", m.WorkerID)
	case wire.TypeInvokeFunction:
		c.startInvoke(cn, m)
	case wire.TypeInvocationResult:
		c.resolve(m)
	case wire.TypeRegisterTrigger:
		c.provider.run(func() { c.handleRegisterTrigger(cn, m) })
	case wire.TypeUnregisterTrigger:
		c.provider.run(func() { c.handleUnregisterTrigger(cn, m) })
	case wire.TypeTriggerRegistrationResult:
		if m.Error != nil {
			c.log.Warn("iii: trigger registration failed", "trigger_id", m.ID, "trigger_type", m.TriggerType,
				"function_id", m.FunctionID, "code", m.Error.Code, "message", m.Error.Message)
		}
	case wire.TypeRegistrationRejected:
		c.handleRejected(cn, m)
	case wire.TypePing:
		cn.send(wire.EncodeMessage(&wire.Message{Type: wire.TypePong}))
	case wire.TypePong:
	default:
		c.log.Debug("iii: ignoring frame of unknown type", "type", m.Type)
	}
}

// resolveScanned completes a call from a scanned result frame; false means
// the frame needs the full decode (an error body that does not decode).
func (c *Client) resolveScanned(f wire.ResultFrame) bool {
	m := wire.Message{Type: wire.TypeInvocationResult, InvocationID: f.InvocationID, FunctionID: f.FunctionID, Result: f.Result}
	if f.Error != nil {
		m.Error = new(wire.ErrorBody)
		if err := json.Unmarshal(f.Error, m.Error); err != nil {
			return false
		}
	}
	c.resolve(m)
	return true
}

func (c *Client) handleRejected(cn *wsConn, m wire.Message) {
	rej := &RegistrationRejectedError{Code: m.Code, Namespace: m.Namespace, WorkerName: m.WorkerName,
		FunctionID: m.FunctionID, OwnerWorkerID: m.OwnerWorkerID, Reason: m.Description}
	if m.Code == wire.CodeFunctionNamespaceClash {
		c.mu.Lock()
		if c.conn == cn && c.functions[m.FunctionID] != nil {
			if c.refused == nil {
				c.refused = map[string]*RegistrationRejectedError{}
			}
			c.refused[m.FunctionID] = rej
		}
		c.mu.Unlock()
		args := []any{"function_id", m.FunctionID, "namespace", m.Namespace, "owner_worker_id", m.OwnerWorkerID}
		if m.Description != "" {
			args = append(args, "reason", m.Description)
		}
		c.log.Error("iii: engine refused a function", args...)
		return
	}
	c.log.Error("iii: engine rejected this worker; not reconnecting", "error", rej)
	c.stop(fmt.Errorf("%w: %w", ErrClosed, rej))
	cn.close()
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only called with frames built from already-validated JSON.
		panic(fmt.Sprintf("iii: marshal frame: %v", err))
	}
	return b
}

// marshalOr encodes v, or returns def when v is nil or an empty RawMessage.
func marshalOr(v any, def json.RawMessage) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return def, nil
	case json.RawMessage:
		if len(x) == 0 {
			return def, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// serialExecutor runs tasks one at a time in submission order, on a
// goroutine that exists only while there is work.
type serialExecutor struct {
	mu      sync.Mutex
	tasks   []func()
	running bool
}

func (s *serialExecutor) run(f func()) {
	s.mu.Lock()
	s.tasks = append(s.tasks, f)
	if !s.running {
		s.running = true
		go s.loop()
	}
	s.mu.Unlock()
}

func (s *serialExecutor) loop() {
	for {
		s.mu.Lock()
		if len(s.tasks) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		f := s.tasks[0]
		s.tasks = s.tasks[1:]
		s.mu.Unlock()
		f()
	}
}
