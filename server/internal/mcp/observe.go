package mcp

import (
	"context"
	"errors"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
)

// Methods are the MCP methods counted by name (metrics.Options.Functions):
// a call's function label on the mcp surface is its method.
var Methods = []string{"initialize", "ping", "resources/list", "resources/templates/list", "resources/read",
	"resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "tools/list", "tools/call",
	"completion/complete", "logging/setLevel", "server/discover", "subscriptions/listen",
	MethodSkillsList, MethodSkillsGet, MethodDirectoryRead}

// readMethods are the methods that read skills or prompts: their reads
// are counted by the client's clientInfo.name.
var readMethods = map[string]bool{"resources/read": true, "prompts/get": true, "tools/call": true}

// observed is the outermost receiving middleware (Options.Observer): each
// request counted and traced (continuing the traceparent of its HTTP
// request, or of its _meta), the reads it makes counted by the client's
// clientInfo.name. Notifications from the client are not calls.
func (s *Server) observed(next sdk.MethodHandler) sdk.MethodHandler {
	o := s.opts.Observer
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		ctx, call := o.Start(ctx, method, surface.MCP, traceOf(req))
		if readMethods[method] {
			ctx = observe.WithReader(ctx, surface.MCP, clientName(req))
		}
		res, err := next(ctx, method, req)
		call.End(resultCode(res, err), err)
		return res, err
	}
}

// notifying counts the change notifications the server sends
// (list_changed, resources/updated).
func (s *Server) notifying(next sdk.MethodHandler) sdk.MethodHandler {
	o := s.opts.Observer
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil && (strings.HasSuffix(method, "/list_changed") || method == "notifications/resources/updated") {
			o.Notified(surface.MCP, 1)
		}
		return res, err
	}
}

// traceOf is the W3C trace context of a request: its HTTP headers, else
// the traceparent and baggage of its _meta.
func traceOf(req sdk.Request) tracing.TraceContext {
	if x := req.GetExtra(); x != nil && x.Header != nil {
		if tc := tracing.FromHeaders(x.Header); tc.Traceparent != "" {
			return tc
		}
	}
	var tc tracing.TraceContext
	// A request without params holds a typed nil: GetMeta would panic.
	if p := req.GetParams(); p != nil && !isNilPointer(p) {
		if m := p.GetMeta(); m != nil {
			tc.Traceparent, _ = m["traceparent"].(string)
			tc.Baggage, _ = m["baggage"].(string)
		}
	}
	return tc
}

// clientName is the request's clientInfo.name (per request in 2026-07-28,
// else the session's), "" when the client sent none.
func clientName(req sdk.Request) string {
	r, ok := req.(interface{ ClientInfo() *sdk.Implementation })
	if !ok {
		return ""
	}
	if info := r.ClientInfo(); info != nil {
		return info.Name
	}
	return ""
}

// resultCode is a call's outcome: ok, the JSON-RPC error's name, or
// tool_error for a tool call answered as an error.
func resultCode(res sdk.Result, err error) string {
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		return observe.JSONRPCCode(je.Code)
	case err != nil:
		return observe.CodeInternalError
	}
	if tr, ok := res.(*sdk.CallToolResult); ok && tr != nil && tr.IsError {
		return observe.CodeToolError
	}
	return observe.CodeOK
}

// SessionCount is how many MCP sessions are open (metrics: connections of
// kind mcp_session).
func (s *Server) SessionCount() int {
	n := 0
	for range s.sdk.Sessions() {
		n++
	}
	return n
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
