// Package health serves the probes a service manager or a load balancer
// polls: GET /healthz (liveness: the process serves HTTP) and GET /readyz
// (readiness: it can do its job, else 503 with the reason).
//
// The probes sit outside the listeners' door rules (token, Origin, Host):
// a load balancer or kubelet probes by IP, with no token and often with a
// Host the operator never listed, and the answers say nothing but "ok",
// "ready" or a fixed reason, so there is nothing to protect. A page in a
// browser that reaches them (DNS rebinding) cannot read them without CORS
// and learns nothing it could use.
package health

import (
	"net/http"
)

// Paths of the two probes.
const (
	LivePath  = "/healthz"
	ReadyPath = "/readyz"
)

// Check reports readiness: nil when ready, else why not (a short sentence
// without secrets; it is served to anyone who can reach the listener).
type Check func() error

// Mount adds GET (and HEAD) /healthz and /readyz to mux; a nil ready is
// always ready.
func Mount(mux *http.ServeMux, ready Check) {
	mux.HandleFunc("GET "+LivePath, func(w http.ResponseWriter, _ *http.Request) {
		write(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET "+ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil {
			if err := ready(); err != nil {
				write(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		write(w, http.StatusOK, "ready")
	})
}

func write(w http.ResponseWriter, status int, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text + "\n"))
}

// All is ready when every check is; otherwise it says why the first one
// is not.
func All(checks ...Check) Check {
	return func() error {
		for _, c := range checks {
			if c == nil {
				continue
			}
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}
