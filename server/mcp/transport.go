package mcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	// IdleSessionTimeout closes a 2025-11-25 session that has had no
	// request in flight and no open stream for this long: its client left
	// without a DELETE. Zero means DefaultIdleSessionTimeout, negative never.
	IdleSessionTimeout time.Duration
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
	stateless := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true, Logger: logger})
	// 2025-11-25 streams are resumable (Last-Event-ID) from a bounded
	// in-memory store (10 MiB); 2026-07-28 removed resumability.
	stateful := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Logger: logger, EventStore: sdk.NewMemoryEventStore(nil)})
	var route http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= StatelessProtocolVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	idle := opts.IdleSessionTimeout
	if idle == 0 {
		idle = DefaultIdleSessionTimeout
	}
	if idle > 0 {
		route = newIdleSessions(s.sdk, idle).wrap(route)
	}
	return guard(opts, route)
}

// guard applies the Origin check (403) and the bearer token (401).
func guard(opts HTTPOptions, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, opts.AllowedOrigins) {
			http.Error(w, "Forbidden: origin "+o+" is not allowed", http.StatusForbidden)
			return
		}
		if opts.Token != "" && !bearerOK(r.Header.Get("Authorization"), opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skills-mcp"`)
			http.Error(w, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, extra []string) bool {
	if slices.Contains(extra, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackHost(u.Hostname())
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func bearerOK(header, token string) bool {
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
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
	srv := &http.Server{Handler: s.Mux(opts), ReadHeaderTimeout: 10 * time.Second}
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
