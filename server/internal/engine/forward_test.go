package engine

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// Results are forwarded without a decode, in whatever key order the owner
// wrote them: the caller must get the owner's bytes as they were sent.
func TestResultForwardingKeepsBytes(t *testing.T) {
	te := startEngine(t, Config{})
	owner := dialWorker(t, te.URL())
	owner.register("fwd::big", nil)
	owner.sync()
	caller := dialWorker(t, te.URL())

	for _, tc := range []struct {
		name  string
		frame func(id string) []byte
	}{
		{"client order", func(id string) []byte {
			return []byte(`{"type":"invocationresult","invocation_id":"` + id + `","function_id":"fwd::big","result":{"text":"` + string(bytes.Repeat([]byte("x"), 1<<20)) + `"}}`)
		}},
		{"other order", func(id string) []byte {
			return []byte(`{"result":{"text":"small"},"function_id":"fwd::big","invocation_id":"` + id + `","type":"invocationresult"}`)
		}},
	} {
		id := uuid.NewString()
		caller.send(map[string]any{"type": "invokefunction", "invocation_id": id, "function_id": "fwd::big", "data": map[string]any{}})
		in := owner.expect("invokefunction")
		if in.str("invocation_id") != id {
			t.Fatalf("%s: owner got id %s, want %s", tc.name, in.str("invocation_id"), id)
		}
		sent := tc.frame(id)
		owner.sendRaw(websocket.TextMessage, sent)
		got := caller.expect("invocationresult")
		if got.str("invocation_id") != id || got.obj("result") == nil {
			t.Fatalf("%s: caller got %s", tc.name, preview(got.raw))
		}
		if !bytes.Equal(got.raw, sent) {
			t.Fatalf("%s: forwarded frame differs from the owner's", tc.name)
		}
	}
}
