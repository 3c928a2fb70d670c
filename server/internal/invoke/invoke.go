// Package invoke is the one way the server calls an iii function and
// reads its answer: the payload encoded once (nil is {}, a
// json.RawMessage goes as it is), a timeout per call, the answer decoded
// into the caller's type, and for idempotent reads one more attempt when
// the first gets no answer (the real iii engine drops a result now and
// then).
package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// Trigger calls a function through the engine (*iii.Client does).
type Trigger interface {
	Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error)
}

// Caller calls functions through one client.
type Caller struct {
	Client Trigger
	// Timeout bounds each call (0: the client's default).
	Timeout time.Duration
	// RetryAfter is how long an idempotent read (Read) waits for its first
	// answer before it is sent once more with the rest of Timeout (0 or
	// not below Timeout: never).
	RetryAfter time.Duration
}

// Payload encodes in for a call: nil is {}, like an absent payload, and a
// json.RawMessage is sent as it is.
func Payload(fn string, in any) (json.RawMessage, error) {
	switch v := in.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		if len(v) == 0 {
			return json.RawMessage(`{}`), nil
		}
		return v, nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode the %s payload: %w", fn, err)
	}
	return data, nil
}

// Call calls fn with in and decodes the answer into out (nil: not read;
// a *json.RawMessage gets it as it is). It is never sent twice.
func (c Caller) Call(ctx context.Context, fn string, in, out any) error {
	data, err := Payload(fn, in)
	if err != nil {
		return err
	}
	raw, err := c.Client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: c.Timeout})
	if err != nil {
		return err
	}
	return decode(fn, raw, out)
}

// Read is Call for idempotent reads: a first attempt that gets no answer
// within RetryAfter is sent again with the rest of Timeout.
func (c Caller) Read(ctx context.Context, fn string, in, out any) error {
	first := c.RetryAfter
	if first <= 0 || c.Timeout <= 0 || first >= c.Timeout {
		return c.Call(ctx, fn, in, out)
	}
	data, err := Payload(fn, in)
	if err != nil {
		return err
	}
	raw, err := c.Client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: first})
	if err != nil && errors.Is(err, iii.ErrTimeout) && ctx.Err() == nil {
		raw, err = c.Client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: c.Timeout - first})
	}
	if err != nil {
		return err
	}
	return decode(fn, raw, out)
}

// Fire calls fn without waiting for an answer (a void trigger).
func (c Caller) Fire(ctx context.Context, fn string, in any) error {
	data, err := Payload(fn, in)
	if err != nil {
		return err
	}
	_, err = c.Client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Action: iii.VoidAction(), Timeout: c.Timeout})
	return err
}

// ErrShape wraps an answer that does not decode into the type asked for.
var ErrShape = errors.New("unexpected answer shape")

func decode(fn string, raw json.RawMessage, out any) error {
	switch o := out.(type) {
	case nil:
		return nil
	case *json.RawMessage:
		*o = raw
		return nil
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: %w: %v", fn, ErrShape, err)
	}
	return nil
}
