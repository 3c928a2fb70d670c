package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/iii-skills/skills/server/internal/httpguard"
)

// Path is where the Streamable HTTP endpoint is served.
const Path = "/mcp"

// StatelessProtocolVersion is the first revision served sessionless.
const StatelessProtocolVersion = "2026-07-28"

// HTTPOptions secure the HTTP endpoint.
type HTTPOptions struct {
	// Token, when set, must arrive on every request as
	// "Authorization: Bearer <Token>"; anything else is 401.
	Token string
	// AllowedOrigins are extra browser origins (e.g. "https://app.example")
	// allowed besides loopback ones (http(s)://localhost, 127.0.0.1, [::1]
	// on any port). Requests without an Origin header (every non-browser
	// client) are allowed.
	AllowedOrigins []string
	// OriginsSetting names where AllowedOrigins are configured (a flag),
	// for the refusal message.
	OriginsSetting string
	// AllowedHosts are the Host header values accepted besides loopback
	// names and the listener's own address (httpguard.Policy.AllowedHosts:
	// "skills.example.com", "*.example.com", "*"): the names a reverse
	// proxy forwards. Any other Host is refused with 403, against DNS
	// rebinding.
	AllowedHosts []string
	// HostsSetting names where AllowedHosts are configured (a flag), for
	// the refusal message.
	HostsSetting string
	// ListenAddr is the address the listener is bound to; its host is
	// accepted in Host, and a listener on every interface (0.0.0.0, [::])
	// accepts any IP. Empty: the address each request arrived on.
	ListenAddr string
	// IdleSessionTimeout closes a 2025-11-25 session that has had no
	// request in flight and no open stream for this long: its client left
	// without a DELETE. Zero means DefaultIdleSessionTimeout, negative never.
	IdleSessionTimeout time.Duration
	// MaxSessions caps live 2025-11-25 sessions: a new session that would
	// pass it closes the one idle the longest first. Zero means
	// DefaultMaxSessions, negative no cap.
	MaxSessions int
}

// HTTPHandler serves MCP Streamable HTTP (mount it at Path). Requests with
// an MCP-Protocol-Version header of 2026-07-28 or later go to a stateless
// go-sdk handler; all others (2025-11-25 and older: initialize, session
// requests, the GET stream, DELETE) to a stateful one whose SSE streams are
// resumable. Both serve the same server, so list_changed notifications
// reach both kinds of clients.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	get := func(*http.Request) *sdk.Server { return s.sdk }
	logger := s.sdkLog
	// The go-sdk's own DNS-rebinding check (a loopback listener refuses
	// every non-loopback Host) is off: guard applies the same rule plus the
	// names an operator lists (HTTPOptions.AllowedHosts), so the registry
	// can sit behind a reverse proxy that forwards its public name.
	stateless := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true, Logger: logger, DisableLocalhostProtection: true})
	// 2025-11-25 streams are resumable (Last-Event-ID) from a bounded
	// in-memory store (10 MiB); 2026-07-28 removed resumability.
	stateful := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Logger: logger, EventStore: sdk.NewMemoryEventStore(nil),
		DisableLocalhostProtection: true})
	var route http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= StatelessProtocolVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	route = decodeMcpName(route) // until go-sdk decodes it itself (mcpname.go)
	route = s.holdAnswers(route)
	route = quietPrime(route)
	idle := opts.IdleSessionTimeout
	if idle == 0 {
		idle = DefaultIdleSessionTimeout
	}
	maxSessions := opts.MaxSessions
	if maxSessions == 0 {
		maxSessions = DefaultMaxSessions
	}
	if idle > 0 || maxSessions > 0 {
		route = newIdleSessions(s.sdk, idle, maxSessions).wrap(route)
	}
	return guard(opts, route)
}

// guard applies the Origin and Host checks (403) and the bearer token (401).
func guard(opts HTTPOptions, next http.Handler) http.Handler {
	return opts.Policy().Wrap(next)
}

// Policy is the door rule of the HTTP endpoint: Origin, Host (loopback
// names, the address the request arrived on, AllowedHosts) and token. The
// skills binary guards /rpc with the same policy.
func (o HTTPOptions) Policy() httpguard.Policy {
	return httpguard.Policy{AllowedOrigins: o.AllowedOrigins, OriginsSetting: o.OriginsSetting, Token: o.Token,
		CheckHost: true, AllowedHosts: o.AllowedHosts, HostsSetting: o.HostsSetting, ListenAddr: o.ListenAddr}
}

// Mux returns an http.Handler serving HTTPHandler at Path and 404
// elsewhere.
func (s *Server) Mux(opts HTTPOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, s.HTTPHandler(opts))
	return mux
}

// ServeHTTP serves the endpoint on ln until ctx ends, then shuts the HTTP
// server down (open streams are closed).
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, opts HTTPOptions) error {
	return ServeHandler(ctx, ln, s.Mux(opts))
}

// ServeHandler serves h on ln until ctx ends, then shuts the HTTP server
// down, giving open requests 2 s before closing them. The skills binary
// serves /mcp and /rpc side by side with it.
func ServeHandler(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeStdio serves one MCP client over stdin/stdout until the client
// disconnects or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.sdk.Run(ctx, &sdk.StdioTransport{})
}
