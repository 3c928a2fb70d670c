package engine

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// ConnectionCounts tells the kinds of connection apart and follows them as
// they open and close: real sockets (full access, scoped token, /otel) and
// an in-process connection.
func TestConnectionCounts(t *testing.T) {
	e := scopedEngine(t)
	waitCounts := func(want ConnectionCounts) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := e.ConnectionCounts()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("ConnectionCounts = %+v; want %+v", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitCounts(ConnectionCounts{})

	full := dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), bearer("operator-token-0123"))
	dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), bearer("acme-token-0123456789"))
	dialWorkerHeader(t, websocket.DefaultDialer, e.URL(), bearer("billing-token-012345"))
	otel, _, err := websocket.DefaultDialer.Dial(e.URL()+"/otel", bearer("operator-token-0123"))
	if err != nil {
		t.Fatalf("dial /otel: %v", err)
	}
	defer otel.Close()
	mem, err := e.DialContext(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) { return mem, nil }}
	local := dialWorkerWith(t, &d, e.URL())
	waitCounts(ConnectionCounts{InProcess: 1, Workers: 1, ScopedWorkers: 2, Telemetry: 1})

	full.close()
	local.close()
	_ = otel.Close()
	waitCounts(ConnectionCounts{ScopedWorkers: 2})
}
