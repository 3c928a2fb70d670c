package engine

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// sockets counts the engine's open sockets against Config.MaxConnections
// and each client's against Config.MaxConnectionsPerClient.
type sockets struct {
	open      atomic.Int64
	telemetry atomic.Int64 // open /otel sockets (ConnectionCounts)
	refused   atomic.Int64 // refusals since the last log line
	lastLogNs atomic.Int64

	mu       sync.Mutex
	byClient map[string]int
}

// clientOf names the client an upgrade counts against: its scoped token
// (wherever it connects from), else its remote address. Without tokens,
// every local process is the same client, 127.0.0.1: a scoped token per
// publisher gives each its own share.
func clientOf(r *http.Request) (key, label string) {
	if s := scopeOf(r); s != nil {
		return "token\x00" + s.Name, fmt.Sprintf("token %q", s.Name)
	}
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	return "ip\x00" + ip, ip
}

// takeClientSlot counts one more socket of key, or reports false when the
// client holds its share already.
func (s *sockets) takeClientSlot(key string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byClient[key] >= max {
		return false
	}
	if s.byClient == nil {
		s.byClient = make(map[string]int)
	}
	s.byClient[key]++
	return true
}

func (s *sockets) releaseClientSlot(key string) {
	s.mu.Lock()
	if s.byClient[key]--; s.byClient[key] <= 0 {
		delete(s.byClient, key)
	}
	s.mu.Unlock()
}

// limitSockets admits an upgrade only while fewer than MaxConnections
// sockets are open and its client holds fewer than its share; the handler
// runs for the socket's whole life, so the counts drop when it returns.
// The in-process connection (the standalone registry worker) is never
// refused nor counted.
func (e *Engine) limitSockets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isInProcess(r) {
			next.ServeHTTP(w, r)
			return
		}
		max := int64(e.cfg.MaxConnections)
		if e.sockets.open.Add(1) > max {
			e.sockets.open.Add(-1)
			e.logRefusal(r, "connections refused: the engine has its maximum of open sockets (skills --engine-max-connections)")
			http.Error(w, fmt.Sprintf("iii engine: too many open connections (max %d); try again later", max),
				http.StatusServiceUnavailable)
			return
		}
		defer e.sockets.open.Add(-1)
		key, label := clientOf(r)
		share := e.cfg.MaxConnectionsPerClient
		if !e.sockets.takeClientSlot(key, share) {
			e.logRefusal(r, "connections refused: a client holds its share of the engine's sockets (skills --engine-max-connections-per-client)")
			w.Header().Set("Retry-After", "5")
			http.Error(w, fmt.Sprintf("iii engine: too many open connections from this client (%s holds %d, the most one client may of the engine's %d); close some first, or give each publisher its own scoped token (engine_tokens), which has a share of its own",
				label, share, max), http.StatusTooManyRequests)
			return
		}
		defer e.sockets.releaseClientSlot(key)
		next.ServeHTTP(w, r)
	})
}

// logRefusal logs refused connections at most once a second, with how
// many were refused since the last line, so a flood cannot flood the log.
func (e *Engine) logRefusal(r *http.Request, msg string) {
	n := e.sockets.refused.Add(1)
	now := time.Now().UnixNano()
	last := e.sockets.lastLogNs.Load()
	if now-last < int64(time.Second) || !e.sockets.lastLogNs.CompareAndSwap(last, now) {
		return
	}
	e.sockets.refused.Add(-n)
	e.log.Warn(msg, "refused", n, "last_remote", r.RemoteAddr, "max_connections", e.cfg.MaxConnections,
		"max_connections_per_client", e.cfg.MaxConnectionsPerClient)
}
