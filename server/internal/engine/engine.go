package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/iii-skills/skills/server/internal/health"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/store"
)

// Defaults applied by New to a zero Config.
const (
	// DefaultAddr is the iii engine's standard worker address.
	DefaultAddr = "127.0.0.1:49134"
	// DefaultMaxFrameBytes is the largest inbound frame accepted by default.
	DefaultMaxFrameBytes int64 = 16 << 20
	// StateFile is the bbolt file created under Config.DataDir.
	StateFile = "state.db"
	// DefaultMaxConnections is the default cap on open sockets.
	DefaultMaxConnections = 4096
	// DefaultMaxConnOutboundBytes is the default per-connection backlog.
	DefaultMaxConnOutboundBytes int64 = 32 << 20
	// DefaultMaxOutboundBytes is the default backlog of all connections.
	DefaultMaxOutboundBytes int64 = 256 << 20
	// DefaultMaxInFlightPerConn is the default of Config.MaxInFlightPerConn.
	DefaultMaxInFlightPerConn = 256
	// DefaultMaxCallerBytes is the default of Config.MaxCallerBytes: two
	// calls of the largest frame.
	DefaultMaxCallerBytes int64 = 32 << 20
	// DefaultMaxWorkerBytes is the default of Config.MaxWorkerBytes: half
	// the default per-connection backlog, so invocations alone never
	// bring a worker near it.
	DefaultMaxWorkerBytes int64 = 16 << 20
)

const (
	// pythonFrameLimit is the websockets library default max_size: the
	// official Python client closes its socket on any larger frame.
	pythonFrameLimit = 1 << 20
	// writeTimeout bounds one frame write; a worker that stops reading is
	// disconnected instead of stalling the engine.
	writeTimeout = 30 * time.Second
	// maxQueuedFrames bounds a connection's outbound queue in frames (the
	// byte bounds are in Config); a worker that passes it is disconnected.
	maxQueuedFrames = 16384
	// handshakeTimeout bounds the HTTP upgrade request (as the real engine).
	handshakeTimeout = 10 * time.Second
)

// Config configures an Engine. The zero value is usable: it listens on
// DefaultAddr and keeps state in memory only.
type Config struct {
	// Addr is the host:port to listen on. "127.0.0.1:0" picks a free port;
	// Addr() reports the real one. Empty means DefaultAddr.
	Addr string
	// DataDir holds the durable state file (StateFile). Empty keeps state
	// in memory only: it is lost when the engine stops.
	DataDir string
	// Logger receives the engine's logs. Nil means slog.Default().
	Logger *slog.Logger
	// MaxFrameBytes is the largest inbound WebSocket frame. A larger frame
	// is read and discarded without closing the connection; if it was an
	// invocation result, the caller gets a result_too_large error instead.
	// Zero means DefaultMaxFrameBytes.
	MaxFrameBytes int64
	// AllowedOrigins are browser origins allowed to open the worker socket
	// besides loopback ones ("*" allows every origin). Upgrades without an
	// Origin header (every non-browser client) are never refused for it.
	AllowedOrigins []string
	// AllowedOriginsSetting names where an operator sets AllowedOrigins
	// (the skills binary: "--engine-allow-origin"); refusals name it.
	AllowedOriginsSetting string
	// AllowedHosts are Host header values the worker socket accepts
	// besides loopback names and its listen address (the name a reverse
	// proxy or a remote worker dials: "iii.example.com", "*.example.com",
	// "*"; see httpguard.Policy.AllowedHosts).
	AllowedHosts []string
	// AllowedHostsSetting names where an operator sets AllowedHosts (the
	// skills binary: "--engine-allow-host"); refusals name it.
	AllowedHostsSetting string
	// Token, when set, must be presented by every worker at connect, as
	// "Authorization: Bearer <Token>" or as the query parameter
	// ?token=<Token> of the URL it dials; other upgrades get 401.
	Token string
	// MaxConnOutboundBytes bounds the bytes queued for one connection and
	// not yet written to its socket (the batch being written included).
	// A connection that passes it is not reading and is disconnected.
	// Zero means DefaultMaxConnOutboundBytes.
	MaxConnOutboundBytes int64
	// MaxOutboundBytes bounds the bytes queued for all connections
	// together. When it is reached, the connection with the largest
	// backlog is disconnected. Zero means DefaultMaxOutboundBytes.
	MaxOutboundBytes int64
	// MaxInFlightPerConn bounds the worker-routed invocations one
	// connection may have waiting at once; more are answered with
	// too_many_invocations, so one client cannot flood a worker that
	// serves everyone. Of those, at most 32 are dispatched to workers at
	// a time, and none while the connection leaves 1 MiB of answers
	// unread; the rest wait in the engine (dispatch.go). Zero means
	// DefaultMaxInFlightPerConn.
	MaxInFlightPerConn int
	// MaxCallerBytes bounds the bytes of the worker-routed invocations and
	// queued jobs one connection may have in flight at once (its first
	// call always passes, however large); more are answered with
	// too_many_invocations (gate.go). The in-process worker is exempt.
	// Zero means DefaultMaxCallerBytes.
	MaxCallerBytes int64
	// MaxWorkerBytes bounds the bytes of the invocations delivered to one
	// worker and not answered yet (one call always goes when none is in
	// flight); others wait at the worker's gate in arrival order, up to
	// 65 536 calls and, of calls over 4 KiB, four times as many bytes,
	// then are answered with too_many_invocations (gate.go). Zero means
	// DefaultMaxWorkerBytes.
	MaxWorkerBytes int64
	// MaxConnectionsPerClient bounds the sockets one client holds: all
	// those presenting one scoped token, else all those from one remote
	// address. More upgrades get 429 (sockets.go). Zero means an eighth of
	// MaxConnections.
	MaxConnectionsPerClient int
	// PrivateScopes are state scopes only in-process connections (and the
	// engine itself) may write: the registry keeps its version history
	// there. state::set, state::update and state::delete from a socket get
	// forbidden naming the scope; reads are allowed.
	PrivateScopes []string
	// MaxConnections bounds the sockets open at once (workers and the
	// SDKs' telemetry sockets; the in-process connection is not counted).
	// More upgrades are refused with 503 until some close, so a local
	// process cannot exhaust the engine's file descriptors and memory by
	// opening connections. Zero means DefaultMaxConnections.
	MaxConnections int
	// ScopedTokens are per-publisher tokens besides Token: a connection
	// presenting one may only publish under its namespaces (ScopedToken).
	// With any configured, every socket must present Token or one of them.
	ScopedTokens []ScopedToken
	// HoldSockets makes Start bind the listener but accept only in-process
	// connections until AcceptSockets: the standalone registry registers
	// its functions first, so no socket can race it for their ids.
	HoldSockets bool
	// Store, when set, is the state behind state::* instead of one the
	// engine opens (DataDir is then unused). The engine does not close it.
	// Several engines on one Store share their state like real engines on
	// one Redis (the `redis` adapter of iii-state); each fires `state`
	// triggers only for the writes made through it, as those do.
	Store *store.Store
	// PubSub, when set, is the bus behind `publish` and `subscribe`
	// instead of one of the engine's own: engines sharing it hear each
	// other's publishes (the `redis` adapter of iii-pubsub, in process).
	PubSub *PubSub
}

// Engine is an embedded iii engine: a WebSocket server speaking the iii
// worker protocol, with the engine::* and state::* built-in functions and
// the state trigger type. Create it with New, then Start or Serve.
type Engine struct {
	cfg      Config
	log      *slog.Logger
	store    *store.Store
	upgrader websocket.Upgrader
	builtins map[string]*builtin
	queues   *queueSet
	pubsub   *PubSub

	startMu  sync.Mutex
	ln       net.Listener
	memLn    *memListener // in-process connections (DialContext)
	sockets  sockets      // open sockets against Config.MaxConnections
	srv      *http.Server
	serveErr chan error
	held     net.Listener // the socket listener while Config.HoldSockets holds it

	closeOnce sync.Once
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	closing   <-chan struct{} // ctx.Done()
	connWG    sync.WaitGroup

	// mu guards the registries below and conn.info.
	mu           sync.RWMutex
	conns        map[string]*conn
	functions    map[string]*function
	triggerTypes map[string]*triggerType
	// standbyTypes are registrations of a type another live worker
	// provides, in arrival order; the first still connected takes the
	// type over when its provider leaves (a provider that reconnects
	// before its old connection is cleaned up lands here).
	standbyTypes map[string][]*triggerType
	bindings     map[string]*binding
	builtinBinds map[string]int // bindings served by each built-in type
	reserved     reservations   // what in-process connections registered (reserve.go)

	// functions-available bookkeeping (fnMu): the debounce timer and the
	// function set last reported.
	fnMu      sync.Mutex
	fnTimer   *time.Timer
	fnLastSet string

	// pmu guards pending and conn.dead.
	pmu     sync.Mutex
	pending map[string]*pending

	// out is the outbound backlog of every connection (bytes queued and
	// not yet written).
	out outbound
}

// New validates cfg, opens the state store and returns an engine that is not
// listening yet.
func New(cfg Config) (*Engine, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnOutboundBytes <= 0 {
		cfg.MaxConnOutboundBytes = DefaultMaxConnOutboundBytes
	}
	if cfg.MaxOutboundBytes <= 0 {
		cfg.MaxOutboundBytes = DefaultMaxOutboundBytes
	}
	if cfg.MaxInFlightPerConn <= 0 {
		cfg.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	}
	if cfg.MaxCallerBytes <= 0 {
		cfg.MaxCallerBytes = DefaultMaxCallerBytes
	}
	if cfg.MaxWorkerBytes <= 0 {
		cfg.MaxWorkerBytes = DefaultMaxWorkerBytes
	}
	if cfg.MaxConnectionsPerClient <= 0 {
		cfg.MaxConnectionsPerClient = max(1, cfg.MaxConnections/8)
	}
	if err := ValidateScopedTokens(cfg.ScopedTokens, cfg.Token); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	cfg.ScopedTokens = withNested(cfg.ScopedTokens)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	st := cfg.Store
	switch {
	case st != nil:
	case cfg.DataDir == "":
		st = store.OpenMemory()
	default:
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("engine: create data dir: %w", err)
		}
		var err error
		st, err = store.Open(filepath.Join(cfg.DataDir, StateFile))
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	bus := cfg.PubSub
	if bus == nil {
		bus = NewPubSub()
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		pubsub:       bus,
		cfg:          cfg,
		log:          log.With("component", "iii-engine"),
		store:        st,
		ctx:          ctx,
		cancel:       cancel,
		closing:      ctx.Done(),
		conns:        make(map[string]*conn),
		functions:    make(map[string]*function),
		triggerTypes: make(map[string]*triggerType),
		standbyTypes: make(map[string][]*triggerType),
		bindings:     make(map[string]*binding),
		reserved:     newReservations(),
		pending:      make(map[string]*pending),
	}
	e.upgrader = websocket.Upgrader{
		HandshakeTimeout: handshakeTimeout,
		ReadBufferSize:   8 << 10,
		WriteBufferSize:  8 << 10,
		// The Origin, Host and token checks run before Upgrade (guard);
		// by then the request is allowed.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	e.queues = newQueueSet(e)
	e.builtins = e.newBuiltins()
	e.builtinBinds = make(map[string]int)
	for id, tt := range builtinTriggerTypes() {
		e.triggerTypes[id] = tt
	}
	_, e.fnLastSet = e.functionEvent()
	bus.attach(e)
	return e, nil
}

// Start listens on the configured address and serves in the background.
func (e *Engine) Start() error {
	if err := e.listen(); err != nil {
		return err
	}
	go e.relieveMemory()
	e.log.Info("iii engine listening", "url", e.URL(), "data_dir", e.cfg.DataDir, "token", e.cfg.Token != "", "scoped_tokens", len(e.cfg.ScopedTokens))
	if !httpguard.IsLoopbackAddr(e.Addr()) && e.cfg.Token == "" && len(e.cfg.ScopedTokens) == 0 {
		e.log.Warn("SECURITY: the iii engine listens on a non-loopback address without a token: anyone who can reach "+
			e.Addr()+" can read and write its state and run its functions; set a worker token (skills --engine-token / III_ENGINE_TOKEN) or bind 127.0.0.1",
			"addr", e.Addr())
	}
	return nil
}

func (e *Engine) listen() error {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.ln != nil {
		return errors.New("engine: already started")
	}
	select {
	case <-e.closing:
		return errors.New("engine: closed")
	default:
	}
	ln, err := net.Listen("tcp", e.cfg.Addr)
	if err != nil {
		return fmt.Errorf("engine: listen on %s: %w", e.cfg.Addr, err)
	}
	mux := http.NewServeMux()
	policy := e.policy(ln.Addr().String())
	mux.Handle("GET /{$}", guard(policy, e.log, e.authorize(e.limitSockets(http.HandlerFunc(e.handleWorker)))))
	mux.Handle("GET /otel", guard(policy, e.log, e.authorize(e.limitSockets(http.HandlerFunc(e.handleOtel)))))
	// Liveness and readiness for a service manager or load balancer, outside
	// the socket's door rules (see package health): the engine is ready as
	// soon as it listens.
	health.Mount(mux, nil)
	e.ln = ln
	e.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: handshakeTimeout,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	e.serveErr = make(chan error, 1)
	// In-process connections go through the same server; srv.Close closes
	// this listener too.
	e.memLn = newMemListener()
	go func() { _ = e.srv.Serve(e.memLn) }()
	if e.cfg.HoldSockets {
		// Bound, so the port is ours and dialers queue in the backlog,
		// but not accepted until AcceptSockets.
		e.held = ln
		return nil
	}
	e.serveSockets(ln)
	return nil
}

func (e *Engine) serveSockets(ln net.Listener) {
	go func() {
		err := e.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		e.serveErr <- err
	}()
}

// AcceptSockets starts accepting socket connections on an engine started
// with Config.HoldSockets (the in-process connection is served from
// Start). Connections dialled meanwhile waited in the listen backlog.
func (e *Engine) AcceptSockets() error {
	e.startMu.Lock()
	ln := e.held
	e.held = nil
	if ln != nil {
		e.serveSockets(ln)
	}
	e.startMu.Unlock()
	if ln == nil {
		return errHeld
	}
	e.log.Info("iii engine accepting worker sockets", "url", e.URL())
	return nil
}

// Serve starts the engine if needed and runs until ctx is done or the HTTP
// server fails, then closes the engine.
func (e *Engine) Serve(ctx context.Context) error {
	e.startMu.Lock()
	started := e.ln != nil
	e.startMu.Unlock()
	if !started {
		if err := e.Start(); err != nil {
			return err
		}
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-e.serveErr:
	}
	return errors.Join(serveErr, e.Close())
}

// Addr is the address the engine listens on (the real port once started).
func (e *Engine) Addr() string {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	if e.ln != nil {
		return e.ln.Addr().String()
	}
	return e.cfg.Addr
}

// URL is the WebSocket URL workers dial, e.g. ws://127.0.0.1:49134. An
// unspecified listen host (0.0.0.0, ::) is reported as 127.0.0.1.
func (e *Engine) URL() string {
	host, port, err := net.SplitHostPort(e.Addr())
	if err != nil {
		return "ws://" + e.Addr()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "ws://" + net.JoinHostPort(host, port)
}

// Close stops listening, disconnects every worker, waits for their cleanup
// and closes the state store. It is safe to call more than once.
func (e *Engine) Close() error {
	var err error
	e.closeOnce.Do(func() {
		e.cancel()
		e.pubsub.detach(e)
		e.startMu.Lock()
		srv, memLn, held := e.srv, e.memLn, e.held
		e.held = nil
		e.startMu.Unlock()
		if held != nil {
			_ = held.Close() // srv never served it
		}
		if memLn != nil {
			_ = memLn.Close() // srv.Close may have run before Serve took it
		}
		if srv != nil {
			err = srv.Close()
		}
		e.mu.RLock()
		conns := make([]*conn, 0, len(e.conns))
		for _, c := range e.conns {
			conns = append(conns, c)
		}
		e.mu.RUnlock()
		for _, c := range conns {
			c.closeWith(websocket.CloseGoingAway, "engine shutting down")
		}
		e.connWG.Wait()
		e.queues.stop()
		if e.cfg.Store == nil {
			err = errors.Join(err, e.store.Close())
		}
		// Drop what the registries still hold, so a closed engine that
		// stays reachable (e.g. from a test cleanup) costs next to nothing.
		e.mu.Lock()
		clear(e.conns)
		clear(e.functions)
		clear(e.bindings)
		e.mu.Unlock()
		e.pmu.Lock()
		clear(e.pending)
		e.pmu.Unlock()
		e.fnMu.Lock()
		if e.fnTimer != nil {
			e.fnTimer.Stop()
		}
		e.fnMu.Unlock()
		e.log.Info("iii engine stopped")
	})
	return err
}

// track registers a connection goroutine with Close (and c, if not nil,
// in the worker registry), unless the engine is already closing. Doing
// both under e.mu orders them before Close's snapshot of the connections.
func (e *Engine) track(c *conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isClosing() {
		return false
	}
	e.connWG.Add(1)
	if c != nil {
		e.conns[c.id] = c
	}
	return true
}

func (e *Engine) isClosing() bool {
	select {
	case <-e.closing:
		return true
	default:
		return false
	}
}

// handleOtel accepts the telemetry socket the official SDKs open and
// discards everything sent on it.
func (e *Engine) handleOtel(w http.ResponseWriter, r *http.Request) {
	ws, err := e.upgrader.Upgrade(w, r, nil)
	if err != nil {
		e.log.Debug("otel upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	if !e.track(nil) {
		_ = ws.Close()
		return
	}
	defer e.connWG.Done()
	e.sockets.telemetry.Add(1)
	defer e.sockets.telemetry.Add(-1)
	ws.SetReadLimit(e.cfg.MaxFrameBytes)
	stop := context.AfterFunc(e.ctx, func() { _ = ws.Close() })
	defer stop()
	defer ws.Close()
	for {
		if _, _, err := ws.NextReader(); err != nil {
			return
		}
		// NextReader discards the unread remainder of the previous frame.
	}
}
