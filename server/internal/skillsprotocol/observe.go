package skillsprotocol

import (
	"context"
	"net/http"

	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
)

// SetObserver makes /rpc report every request (by method) and the skill
// reads it serves (read_skill_file of SKILL.md, describe_skill with detail
// full) to o. Call it before serving.
func (r *Runtime) SetObserver(o *observe.Observer) { r.obs = o }

// rpcRequest keys what ServeHTTP learned of the HTTP request in its ctx.
type rpcRequestKey struct{}

type rpcRequestInfo struct{ trace tracing.TraceContext }

// observing keeps the HTTP request's trace context in ctx for each call
// of the message, and marks its reads as made on /rpc by the client its
// User-Agent names.
func (r *Runtime) observing(ctx context.Context, req *http.Request) context.Context {
	if r.obs == nil {
		return ctx
	}
	ctx = context.WithValue(ctx, rpcRequestKey{}, rpcRequestInfo{trace: tracing.FromHeaders(req.Header)})
	return observe.WithReader(ctx, surface.RPC, observe.UserAgentProduct(req.UserAgent()))
}

// observedCall is Call counted and traced under its method.
func (r *Runtime) observedCall(ctx context.Context, method string, params []byte) (any, *Error) {
	if r.obs == nil {
		return r.Call(ctx, method, params)
	}
	info, _ := ctx.Value(rpcRequestKey{}).(rpcRequestInfo)
	ctx, call := r.obs.Start(ctx, method, surface.RPC, info.trace)
	result, perr := r.Call(ctx, method, params)
	if perr != nil {
		call.End(observe.JSONRPCCode(int64(perr.Code)), perr)
	} else {
		call.End(observe.CodeOK, nil)
	}
	return result, perr
}

// readCounted counts a read of skill v asked for at version (the request's
// own version, "" for what a plain read serves).
func (r *Runtime) readCounted(ctx context.Context, v skillView, version string) {
	r.obs.ReadSkill(ctx, v.e.ID, version)
}
