package engine

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// sockets counts the engine's open sockets against Config.MaxConnections.
type sockets struct {
	open      atomic.Int64
	refused   atomic.Int64 // refusals since the last log line
	lastLogNs atomic.Int64
}

// limitSockets admits an upgrade only while fewer than MaxConnections
// sockets are open; the handler runs for the socket's whole life, so the
// count drops when it returns. The in-process connection (the standalone
// registry worker) is never refused.
func (e *Engine) limitSockets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, inProcess := r.Context().Value(http.LocalAddrContextKey).(memAddr); inProcess {
			next.ServeHTTP(w, r)
			return
		}
		max := int64(e.cfg.MaxConnections)
		if e.sockets.open.Add(1) > max {
			e.sockets.open.Add(-1)
			e.logRefusal(r)
			http.Error(w, fmt.Sprintf("iii engine: too many open connections (max %d); try again later", max),
				http.StatusServiceUnavailable)
			return
		}
		defer e.sockets.open.Add(-1)
		next.ServeHTTP(w, r)
	})
}

// logRefusal logs refused connections at most once a second, with how
// many were refused since the last line, so a flood cannot flood the log.
func (e *Engine) logRefusal(r *http.Request) {
	n := e.sockets.refused.Add(1)
	now := time.Now().UnixNano()
	last := e.sockets.lastLogNs.Load()
	if now-last < int64(time.Second) || !e.sockets.lastLogNs.CompareAndSwap(last, now) {
		return
	}
	e.sockets.refused.Add(-n)
	e.log.Warn("connections refused: the engine has its maximum of open sockets (skills --engine-max-connections)",
		"refused", n, "last_remote", r.RemoteAddr, "max_connections", e.cfg.MaxConnections)
}
