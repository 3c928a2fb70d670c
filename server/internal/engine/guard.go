package engine

import (
	"log/slog"
	"net/http"

	"github.com/iii-skills/skills/server/internal/httpguard"
)

// TokenParam is the query parameter that may carry Config.Token for
// clients that cannot set an Authorization header.
const TokenParam = "token"

// policy is the door rule of the worker socket: browser origins other than
// loopback ones (and Config.AllowedOrigins) are refused, so a web page the
// user visits cannot drive the engine; Host must name this machine (the
// listen address, a loopback name or one of Config.AllowedHosts), so a
// DNS-rebinding page cannot either; and when a token is configured every worker must present it.
func (e *Engine) policy(listenAddr string) httpguard.Policy {
	return httpguard.Policy{
		AllowedOrigins: e.cfg.AllowedOrigins,
		OriginsSetting: e.cfg.AllowedOriginsSetting,
		CheckHost:      true,
		AllowedHosts:   e.cfg.AllowedHosts,
		HostsSetting:   e.cfg.AllowedHostsSetting,
		ListenAddr:     listenAddr,
		// The token rule is authorize's: it knows the scoped tokens too.
	}
}

// authorize applies the token rule (authenticate) after guard's Origin and
// Host rules, and hands the connection's scope to the handler.
func (e *Engine) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scope, ref := e.authenticate(r)
		if ref != nil {
			e.log.Warn("worker connection refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"),
				"host", r.Host, "status", ref.Status, "reason", ref.Message)
			w.Header().Set("WWW-Authenticate", `Bearer realm="iii"`)
			http.Error(w, ref.Message, ref.Status)
			return
		}
		next.ServeHTTP(w, withScope(r, scope))
	})
}

// guard refuses upgrades that fail policy before any WebSocket handshake,
// and logs each refusal with the reason and the remote address.
func guard(p httpguard.Policy, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := p.Check(r); ref != nil {
			log.Warn("worker connection refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"),
				"host", r.Host, "status", ref.Status, "reason", ref.Message)
			if ref.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="iii"`)
			}
			http.Error(w, ref.Message, ref.Status)
			return
		}
		next.ServeHTTP(w, r)
	})
}
