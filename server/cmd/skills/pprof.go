package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves Go's runtime profiles (/debug/pprof/…) on addr, for
// finding where memory and CPU go. It is off unless --pprof-addr is given,
// and refuses anything but a loopback address: profiles show skill bodies
// and the handlers can be made to run for a long time. It returns the
// address it listens on.
func startPprof(ctx context.Context, addr string, log *slog.Logger) (bound string, stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof-addr %q: expected HOST:PORT on loopback (e.g. 127.0.0.1:6060): %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("--pprof-addr %q: expected a loopback host (127.0.0.1, ::1 or localhost), got %q", addr, host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof-addr %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof listener stopped", "addr", addr, "err", err)
		}
	}()
	log.Info("serving Go profiles at http://" + ln.Addr().String() + "/debug/pprof/")
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
