package observe

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/metrics"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
	"github.com/iii-skills/skills/server/internal/usage"
)

// Options are what an Observer reports to; each may be nil.
type Options struct {
	// Metrics counts calls and their latency (nil: not counted).
	Metrics *metrics.Metrics
	// Tracer records a span per call (nil: none; the caller's context is
	// still handed on).
	Tracer *tracing.Tracer
	// Usage counts reads (nil: not counted).
	Usage *usage.Counter
	// Versions says which version a read of id with selector (a number, a
	// label, or "" for what a plain read serves) reads, for surfaces that
	// serve skills from their own caches (core.Local.ReadVersion).
	Versions func(id, selector string) string
	// Engine lists the engine's workers (engine::workers::list), to name
	// the worker behind an iii read (nil: iii reads are by "unknown").
	Engine invoke.Trigger
	Logger *slog.Logger
}

// Observer is what the surfaces report to. A nil *Observer records
// nothing.
type Observer struct {
	metrics  *metrics.Metrics
	tracer   *tracing.Tracer
	usage    *usage.Counter
	versions func(id, selector string) string
	names    *workerNames
	log      *slog.Logger
}

// New returns an Observer reporting to opts; call Run for the naming of
// iii readers.
func New(opts Options) *Observer {
	o := &Observer{metrics: opts.Metrics, tracer: opts.Tracer, usage: opts.Usage, versions: opts.Versions, log: opts.Logger}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.usage != nil {
		o.names = newWorkerNames(opts.Engine, o.usage, o.log)
	}
	return o
}

// Run names the workers behind iii reads until ctx ends.
func (o *Observer) Run(ctx context.Context) {
	if o != nil && o.names != nil {
		o.names.run(ctx)
	}
}

// Metrics are the metrics calls are counted in (nil: none).
func (o *Observer) Metrics() *metrics.Metrics {
	if o == nil {
		return nil
	}
	return o.metrics
}

// Usage is the read counter (nil: reads are not counted).
func (o *Observer) Usage() *usage.Counter {
	if o == nil {
		return nil
	}
	return o.usage
}

// Notified counts n change notifications sent on surface s.
func (o *Observer) Notified(s surface.Surface, n int) {
	if o != nil && o.metrics != nil {
		o.metrics.Notified(s, n)
	}
}

// Call is one call a surface serves; End it once.
type Call struct {
	o        *Observer
	function string
	surface  surface.Surface
	start    time.Time
	span     tracing.Call
	traced   bool
}

// Start begins a call of function on surface s that came with trace
// context tc (tracing.FromInvocation on iii, tracing.FromHeaders on HTTP).
// The ctx it returns carries the call's trace context to the calls made
// while serving it (iii.ContextWithTraceContext).
func (o *Observer) Start(ctx context.Context, function string, s surface.Surface, tc tracing.TraceContext) (context.Context, Call) {
	if o == nil {
		return ctx, Call{}
	}
	c := Call{o: o, function: function, surface: s}
	if o.metrics != nil {
		c.start = time.Now()
	}
	if o.tracer != nil {
		ctx, c.span = o.tracer.StartCall(ctx, function, s, tc)
		c.traced = true
		out := o.tracer.Outgoing(ctx)
		if tp, bg := iii.TraceContextFromContext(ctx); out.Traceparent != tp || out.Baggage != bg {
			ctx = iii.ContextWithTraceContext(ctx, out.Traceparent, out.Baggage)
		}
	}
	return ctx, c
}

// Rename names the call after a function known only once it was routed
// (the web page's route); "" leaves it as it is.
func (c *Call) Rename(function string) {
	if c.o == nil || function == "" {
		return
	}
	c.function = function
	if c.traced {
		c.span.Span().SetName(function)
		c.span.Span().SetAttributes(attribute.String("rpc.method", function))
	}
}

// End records the call's outcome: code "ok" (or "") or the refusal code,
// with err's message on the span.
func (c Call) End(code string, err error) {
	if c.o == nil {
		return
	}
	if c.o.metrics != nil {
		c.o.metrics.Call(c.function, c.surface, code, time.Since(c.start))
	}
	if c.traced {
		c.span.End(code, err)
	}
}

// The codes of refusals that are not the registry's own: JSON-RPC errors
// of MCP and /rpc by name, a tool call answered as an error, the web
// page's answers by HTTP status (HTTPCode).
const (
	CodeOK             = metrics.CodeOK
	CodeParseError     = "parse_error"
	CodeInvalidRequest = iii.CodeInvalidRequest // the same word as iii's
	CodeMethodNotFound = "method_not_found"
	CodeInvalidParams  = "invalid_params"
	CodeInternalError  = "internal_error"
	CodeServerBusy     = "server_busy"
	CodeToolError      = "tool_error"
)

// httpStatuses are the statuses the web page answers with that are
// counted by their own code.
var httpStatuses = []int{400, 401, 403, 404, 405, 409, 413, 415, 429, 500, 502, 503, 504}

// Codes are the refusal codes counted by name (metrics.Options.Codes):
// the registry's, iii's, JSON-RPC's and the web page's.
func Codes() []string {
	out := []string{rules.CodeInvalidArguments, rules.CodeNotFound, rules.CodeForbidden, rules.CodeOutOfScope, core.CodeFileChanged,
		iii.CodeFunctionNotFound, iii.CodeInvocationFailed, iii.CodeInvocationStopped, CodeInvalidRequest,
		CodeParseError, CodeMethodNotFound, CodeInvalidParams, CodeInternalError, CodeServerBusy, CodeToolError}
	for _, s := range httpStatuses {
		out = append(out, HTTPCode(s))
	}
	return out
}

// IIICode is the code a call that returned err answers with over iii:
// "ok", the *iii.InvocationError's code, else invocation_failed (what the
// iii client sends for any other error).
func IIICode(err error) string {
	if err == nil {
		return metrics.CodeOK
	}
	var inv *iii.InvocationError
	if errors.As(err, &inv) && inv.Code != "" {
		return inv.Code
	}
	return iii.CodeInvocationFailed
}

// JSONRPCCode names a JSON-RPC error code (-32700 parse_error, …; -32000,
// the Skills Protocol's busy answer, server_busy); other codes are their
// number.
func JSONRPCCode(code int64) string {
	switch code {
	case -32700:
		return CodeParseError
	case -32600:
		return CodeInvalidRequest
	case -32601:
		return CodeMethodNotFound
	case -32602:
		return CodeInvalidParams
	case -32603:
		return CodeInternalError
	case -32000:
		return CodeServerBusy
	}
	return strconv.FormatInt(code, 10)
}

// HTTPCode is "ok" for a status below 400, else "http_<status>".
func HTTPCode(status int) string {
	if status < 400 {
		return metrics.CodeOK
	}
	return "http_" + strconv.Itoa(status)
}

// readerKey keys the reader of a call in its ctx.
type readerKey struct{}

// reader is who reads: the surface, and the client's name, or on iii what
// names it (the invocation's payload and the function that finds the
// calling connection in it and in the ctx's metadata).
type reader struct {
	surface  surface.Surface
	client   string
	payload  json.RawMessage
	callerID func(ctx context.Context, payload json.RawMessage) string
}

// WithReader marks ctx as a read on surface s by client (the MCP
// clientInfo.name, "web", …): the reads the registry serves with it are
// counted.
func WithReader(ctx context.Context, s surface.Surface, client string) context.Context {
	return context.WithValue(ctx, readerKey{}, &reader{surface: s, client: client})
}

// WithInvocation marks ctx as an iii invocation with payload: the reads
// it makes are counted by the worker callerID finds (the connection id the
// engine stamped, or the payload's _caller_worker_id), by its name.
func WithInvocation(ctx context.Context, payload json.RawMessage, callerID func(ctx context.Context, payload json.RawMessage) string) context.Context {
	return context.WithValue(ctx, readerKey{}, &reader{surface: surface.III, payload: payload, callerID: callerID})
}

// CountRead counts a read of id at version (core.ReadCounter) made by the
// reader in ctx; a read without one (internal) is not counted. It never
// waits for I/O.
func (o *Observer) CountRead(ctx context.Context, id, version string) {
	if o == nil || o.usage == nil {
		return
	}
	r, _ := ctx.Value(readerKey{}).(*reader)
	if r == nil {
		return
	}
	if r.callerID == nil {
		o.usage.Read(id, version, r.surface, r.client)
		return
	}
	o.names.read(id, version, r.callerID(ctx, r.payload))
}

// ReadSkill counts a read of skill id at selector (a version number, a
// label, or "" for what a plain read serves) by the reader in ctx, for a
// surface that serves skills without the registry core (the web page's
// cached pages, the Skills Protocol).
func (o *Observer) ReadSkill(ctx context.Context, id, selector string) {
	if o == nil || o.usage == nil {
		return
	}
	version := selector
	if o.versions != nil {
		version = o.versions(id, selector)
	}
	o.CountRead(ctx, id, version)
}
