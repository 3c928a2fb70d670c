package observe

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"
)

// UserAgentProduct is the first product of a User-Agent ("python-httpx" of
// "python-httpx/0.27.0"): the client an HTTP read counts as, where the
// protocol names none of its own.
func UserAgentProduct(ua string) string {
	p, _, _ := strings.Cut(strings.TrimSpace(ua), " ")
	p, _, _ = strings.Cut(p, "/")
	return p
}

// StatusWriter keeps the status of an answer, for the code of its call.
// It passes Flush and Hijack through, so streams and upgrades still work.
type StatusWriter struct {
	http.ResponseWriter
	Status int
	wrote  bool
}

// NewStatusWriter wraps w; a handler that writes no header answered 200.
func NewStatusWriter(w http.ResponseWriter) *StatusWriter {
	return &StatusWriter{ResponseWriter: w, Status: http.StatusOK}
}

func (w *StatusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.Status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *StatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *StatusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("the connection cannot be hijacked")
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
