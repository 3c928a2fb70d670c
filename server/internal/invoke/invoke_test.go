package invoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/invoke"
)

// fake answers each call from a function of the attempt number.
type fake struct {
	calls []iii.TriggerRequest
	reply func(n int, req iii.TriggerRequest) (json.RawMessage, error)
}

func (f *fake) Trigger(_ context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	f.calls = append(f.calls, req)
	return f.reply(len(f.calls), req)
}

func TestCallEncodesOnceAndDecodes(t *testing.T) {
	f := &fake{reply: func(int, iii.TriggerRequest) (json.RawMessage, error) { return json.RawMessage(`{"n":3}`), nil }}
	c := invoke.Caller{Client: f, Timeout: time.Second}
	var out struct{ N int }
	if err := c.Call(context.Background(), "a::b", nil, &out); err != nil || out.N != 3 {
		t.Fatalf("call: %+v, %v", out, err)
	}
	var raw json.RawMessage
	if err := c.Call(context.Background(), "a::b", json.RawMessage(`{"x":1}`), &raw); err != nil || string(raw) != `{"n":3}` {
		t.Fatalf("raw answer: %s, %v", raw, err)
	}
	if string(f.calls[0].Data) != `{}` || string(f.calls[1].Data) != `{"x":1}` || f.calls[0].Timeout != time.Second {
		t.Fatalf("payloads %s, %s; timeout %v", f.calls[0].Data, f.calls[1].Data, f.calls[0].Timeout)
	}
	var wrong []string
	if err := c.Call(context.Background(), "a::b", nil, &wrong); !errors.Is(err, invoke.ErrShape) {
		t.Fatalf("an answer of another shape: %v", err)
	}
}

// A read unanswered within RetryAfter is sent once more with the rest of
// the timeout; a call never is.
func TestReadIsSentAgainOnce(t *testing.T) {
	f := &fake{reply: func(n int, req iii.TriggerRequest) (json.RawMessage, error) {
		if n == 1 {
			return nil, iii.ErrTimeout
		}
		return json.RawMessage(`"ok"`), nil
	}}
	c := invoke.Caller{Client: f, Timeout: 10 * time.Second, RetryAfter: 2 * time.Second}
	var out string
	if err := c.Read(context.Background(), "a::b", nil, &out); err != nil || out != "ok" {
		t.Fatalf("read: %q, %v", out, err)
	}
	if len(f.calls) != 2 || f.calls[0].Timeout != 2*time.Second || f.calls[1].Timeout != 8*time.Second {
		t.Fatalf("attempts %d, timeouts %v then %v", len(f.calls), f.calls[0].Timeout, f.calls[1].Timeout)
	}
	f.calls = nil
	if err := c.Call(context.Background(), "a::b", nil, &out); !errors.Is(err, iii.ErrTimeout) || len(f.calls) != 1 {
		t.Fatalf("a call after no answer: %v after %d attempts", err, len(f.calls))
	}
}
