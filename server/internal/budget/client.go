package budget

import (
	"context"
	"net"
	"net/http"
)

// ClientOf names the client of an HTTP request by its address (the
// remote IP, without the port: a client opens connections at will, an
// address it cannot change as easily). Behind a reverse proxy every
// client is the proxy, so shares then bound the proxy as a whole.
func ClientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
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
