package budget

import (
	"context"
	"net"
	"net/http"
	"strings"
)

// ClientOf names the client of an HTTP request by its address (the
// remote IP, without the port: a client opens connections at will, an
// address it cannot change as easily). A request from a loopback peer
// that carries X-Forwarded-For is named by the header's last entry, the
// address a reverse proxy on the same host saw (deploy/nginx.conf and
// Caddy append it): otherwise every client behind the proxy would be
// one. A local process could forge that header, but it can as well dial
// from any 127.0.0.0/8 address: on one host the address tells local
// processes apart only as far as they let it.
func ClientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		if fwd := r.Header.Values("X-Forwarded-For"); len(fwd) > 0 {
			last := fwd[len(fwd)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil {
				return "addr:" + ip.String()
			}
		}
	}
	return "addr:" + host
}

type clientKey struct{}

// WithClient carries the client's name in ctx, for the pools a request
// draws from further down.
func WithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientFrom is the client WithClient put in ctx ("" when none: a caller
// inside the process).
func ClientFrom(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}
