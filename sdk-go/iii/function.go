package iii

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/invopop/jsonschema"
)

// Handler serves invocations of a registered function. data is the
// invocation's data exactly as received (it may contain extra keys such as
// "_caller_worker_id" injected by the engine). The returned value is encoded
// as JSON; return an *InvocationError to choose the error code.
type Handler func(ctx context.Context, data json.RawMessage) (any, error)

// RegisterFunctionOptions describe a function to the engine. Every field is
// optional; RequestFormat, ResponseFormat and Metadata are any
// JSON-encodable value (JSON Schemas by convention for the formats).
type RegisterFunctionOptions struct {
	Description    string
	RequestFormat  any
	ResponseFormat any
	Metadata       any
}

// FunctionRef is a registered function.
type FunctionRef struct {
	c     *Client
	id    string
	entry *functionEntry
}

// ID is the function id.
func (r *FunctionRef) ID() string { return r.id }

type functionEntry struct {
	seq     uint64
	handler Handler
	frame   []byte
}

func (e *functionEntry) order() uint64 { return e.seq }

// RegisterFunction registers h as function id on this worker. The
// registration is sent now if connected and replayed on every reconnect. It
// fails if id is empty or already registered on this client.
func (c *Client) RegisterFunction(id string, h Handler, opts ...RegisterFunctionOptions) (*FunctionRef, error) {
	if id == "" {
		return nil, errors.New("iii: register function: id is empty")
	}
	if h == nil {
		return nil, fmt.Errorf("iii: register function %q: handler is nil", id)
	}
	o := mergeFunctionOptions(opts)
	m := wire.Message{Type: wire.TypeRegisterFunction, ID: id, Description: o.Description}
	var err error
	if m.RequestFormat, err = marshalOr(o.RequestFormat, nil); err != nil {
		return nil, fmt.Errorf("iii: register function %q: encode request format: %w", id, err)
	}
	if m.ResponseFormat, err = marshalOr(o.ResponseFormat, nil); err != nil {
		return nil, fmt.Errorf("iii: register function %q: encode response format: %w", id, err)
	}
	if m.Metadata, err = marshalOr(o.Metadata, nil); err != nil {
		return nil, fmt.Errorf("iii: register function %q: encode metadata: %w", id, err)
	}
	e := &functionEntry{handler: h, frame: wire.EncodeMessage(&m)}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr != nil {
		return nil, c.stopErr
	}
	if _, dup := c.functions[id]; dup {
		return nil, fmt.Errorf("iii: register function %q: already registered on this client", id)
	}
	c.seq++
	e.seq = c.seq
	c.functions[id] = e
	if c.conn != nil {
		c.conn.send(e.frame)
	}
	return &FunctionRef{c: c, id: id, entry: e}, nil
}

func mergeFunctionOptions(opts []RegisterFunctionOptions) RegisterFunctionOptions {
	var o RegisterFunctionOptions
	for _, x := range opts {
		if x.Description != "" {
			o.Description = x.Description
		}
		if x.RequestFormat != nil {
			o.RequestFormat = x.RequestFormat
		}
		if x.ResponseFormat != nil {
			o.ResponseFormat = x.ResponseFormat
		}
		if x.Metadata != nil {
			o.Metadata = x.Metadata
		}
	}
	return o
}

// Unregister removes the function from this worker and the engine. It
// returns an error wrapping ErrNotRegistered if it was already removed.
func (r *FunctionRef) Unregister() error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.functions[r.id] != r.entry {
		return fmt.Errorf("iii: unregister function %q: %w", r.id, ErrNotRegistered)
	}
	delete(c.functions, r.id)
	if c.conn != nil {
		c.conn.send(wire.EncodeMessage(&wire.Message{Type: wire.TypeUnregisterFunction, ID: r.id}))
	}
	return nil
}

type metadataKey struct{}
type invocationIDKey struct{}
type traceKey struct{}

// traceContext is the W3C trace context an invocation arrived with.
type traceContext struct{ traceparent, baggage string }

// TraceContextFromContext returns the W3C traceparent and baggage of the
// invocation a Handler is serving ("" when it carried none). Trigger calls
// made with that ctx carry them on, as the official SDKs do with
// OpenTelemetry enabled.
func TraceContextFromContext(ctx context.Context) (traceparent, baggage string) {
	tc, _ := ctx.Value(traceKey{}).(traceContext)
	return tc.traceparent, tc.baggage
}

// ContextWithTraceContext returns ctx carrying traceparent and baggage as
// the trace context of Trigger calls made with it, in place of the
// invocation's (a handler that records its own span passes it on as the
// parent of the calls it makes).
func ContextWithTraceContext(ctx context.Context, traceparent, baggage string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceContext{traceparent, baggage})
}

// MetadataFromContext returns the metadata of the invocation a Handler is
// serving (the invokefunction "metadata", raw JSON). ok is false, and raw
// nil, when the invocation carried none.
func MetadataFromContext(ctx context.Context) (raw json.RawMessage, ok bool) {
	raw, ok = ctx.Value(metadataKey{}).(json.RawMessage)
	if !ok || len(raw) == 0 {
		return nil, false
	}
	return raw, true
}

// InvocationIDFromContext returns the invocation_id of the invocation a
// Handler is serving, or "".
func InvocationIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(invocationIDKey{}).(string)
	return id
}

// handleInvoke serves one inbound invokefunction and answers it.
func (c *Client) handleInvoke(cn *wsConn, m wire.Message) {
	var arrived time.Time
	if c.opts.resultHold > 0 {
		arrived = time.Now()
	}
	c.mu.Lock()
	e := c.functions[m.FunctionID]
	c.mu.Unlock()

	reply := wire.Message{Type: wire.TypeInvocationResult, InvocationID: m.InvocationID, Traceparent: m.Traceparent, Baggage: m.Baggage}
	if e == nil {
		reply.Error = &wire.ErrorBody{Code: wire.CodeFunctionNotFound, Message: fmt.Sprintf("Function %s not found", m.FunctionID)}
	} else {
		ctx := context.WithValue(cn.ctx, invocationIDKey{}, m.InvocationID)
		if len(m.Metadata) > 0 && string(m.Metadata) != "null" {
			ctx = context.WithValue(ctx, metadataKey{}, m.Metadata)
		}
		if m.Traceparent != "" || m.Baggage != "" {
			ctx = context.WithValue(ctx, traceKey{}, traceContext{m.Traceparent, m.Baggage})
		}
		res, err := callHandler(ctx, e.handler, m.Data)
		if err == nil && res != nil {
			if reply.Result, err = encodeResult(res); err != nil {
				err = fmt.Errorf("encode result of function %s as JSON: %w", m.FunctionID, err)
			}
		}
		if err != nil {
			reply.Result = nil
			reply.Error = errorBodyFor(err)
			c.log.Debug("iii: function failed", "function_id", m.FunctionID, "code", reply.Error.Code, "error", err)
		}
	}
	if m.InvocationID == "" {
		return // nobody to answer (the engine always sends an id; tolerate its absence)
	}
	reply.FunctionID = m.FunctionID
	if hold := c.opts.resultHold; hold > 0 {
		if wait := hold - time.Since(arrived); wait > 0 {
			time.Sleep(wait)
		}
	}
	frame := wire.EncodeMessage(&reply)
	cn.send(frame)
	if d := c.opts.resultResend; d > 0 {
		cn.resendLater(m.InvocationID, frame, d)
	}
}

// startInvoke serves an inbound invokefunction on its own goroutine. A
// copy of an earlier result under the same invocation_id that has not
// left yet is cancelled first, in the order frames were read: the engine
// would take that copy for the answer to this new call.
func (c *Client) startInvoke(cn *wsConn, m wire.Message) {
	if c.opts.resultResend > 0 && m.InvocationID != "" {
		cn.cancelResend(m.InvocationID)
	}
	go c.handleInvoke(cn, m)
}

// encodeResult encodes a handler's result. Strings, the usual result of a
// document-serving function, skip reflection: encoding/json escapes them at
// a fraction of wire.AppendJSONString's speed.
func encodeResult(res any) (json.RawMessage, error) {
	if s, ok := res.(string); ok {
		return wire.AppendJSONString(make([]byte, 0, len(s)+len(s)/16+2), s), nil
	}
	return json.Marshal(res)
}

func callHandler(ctx context.Context, h Handler, data json.RawMessage) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			res = nil
			err = &InvocationError{Code: wire.CodeInvocationFailed, Message: fmt.Sprintf("panic: %v", r), Stacktrace: string(debug.Stack())}
		}
	}()
	return h(ctx, data)
}

func errorBodyFor(err error) *wire.ErrorBody {
	var ie *InvocationError
	if errors.As(err, &ie) {
		code := ie.Code
		if code == "" {
			code = wire.CodeInvocationFailed
		}
		return &wire.ErrorBody{Code: code, Message: ie.Message, Stacktrace: ie.Stacktrace}
	}
	return &wire.ErrorBody{Code: wire.CodeInvocationFailed, Message: err.Error()}
}

// RegisterFunctionTyped registers a function whose request and response are
// Go types. The data is decoded into Req (unknown keys such as
// "_caller_worker_id" are ignored; absent data gives the zero Req); a decode
// failure answers with an *InvocationError of code "invalid_request". Unless
// opts give them, the request and response JSON Schemas are reflected from
// Req and Resp (github.com/invopop/jsonschema; `json` and `jsonschema` struct
// tags apply).
func RegisterFunctionTyped[Req, Resp any](c *Client, id string, h func(ctx context.Context, req Req) (Resp, error), opts ...RegisterFunctionOptions) (*FunctionRef, error) {
	if h == nil {
		return nil, fmt.Errorf("iii: register function %q: handler is nil", id)
	}
	o := mergeFunctionOptions(opts)
	reqType, respType := reflect.TypeFor[Req](), reflect.TypeFor[Resp]()
	var err error
	if o.RequestFormat == nil {
		if o.RequestFormat, err = SchemaFor(reqType); err != nil {
			return nil, fmt.Errorf("iii: register function %q: request schema: %w", id, err)
		}
	}
	if o.ResponseFormat == nil {
		if o.ResponseFormat, err = SchemaFor(respType); err != nil {
			return nil, fmt.Errorf("iii: register function %q: response schema: %w", id, err)
		}
	}
	handler := func(ctx context.Context, data json.RawMessage) (any, error) {
		var req Req
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &req); err != nil {
				return nil, &InvocationError{
					FunctionID: id,
					Code:       wire.CodeInvalidRequest,
					Message: fmt.Sprintf("invalid request for function %s: %v (expected JSON matching %s, see its request_format)",
						id, err, reqType),
				}
			}
		}
		return h(ctx, req)
	}
	return c.RegisterFunction(id, handler, o)
}

// SchemaFor reflects the JSON Schema of a Go type the way
// RegisterFunctionTyped does: the top-level struct inlined, nested named
// types under $defs, additional properties allowed (the engine adds keys
// such as "_caller_worker_id"). Interface types give the empty schema {}.
func SchemaFor(t reflect.Type) (schema json.RawMessage, err error) {
	if t == nil || t.Kind() == reflect.Interface {
		return json.RawMessage("{}"), nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot reflect a JSON Schema for %s: %v", t, r)
		}
	}()
	r := &jsonschema.Reflector{Anonymous: true, AllowAdditionalProperties: true, ExpandedStruct: true}
	return json.Marshal(r.ReflectFromType(t))
}
