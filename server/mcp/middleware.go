package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// middleware answers the registry-backed methods live and leaves the rest
// (initialize, server/discover, subscriptions, …) to the SDK. prompts/list
// and tools/list resync the mirror and then let the SDK page through it.
func (s *Server) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch r := req.(type) {
		case *sdk.ListResourcesRequest:
			return s.listResources(ctx, cursorOf(r.Params))
		case *sdk.ListResourceTemplatesRequest:
			var c string
			if r.Params != nil {
				c = r.Params.Cursor
			}
			return s.listTemplates(ctx, c)
		case *sdk.ReadResourceRequest:
			if r.Params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read requires a uri"}
			}
			return complete[*sdk.ReadResourceResult](req)(s.readResource(ctx, r.Params.URI))
		case *sdk.GetPromptRequest:
			if r.Params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get requires a name"}
			}
			return complete[*sdk.GetPromptResult](req)(s.getPrompt(ctx, r.Params.Name, r.Params.Arguments))
		case *sdk.CallToolRequest:
			if r.Params == nil || r.Params.Name == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call requires a non-empty string name"}
			}
			return complete[*sdk.CallToolResult](req)(s.callTool(ctx, r.Params.Name, r.Params.Arguments))
		case *sdk.ListPromptsRequest:
			if err := s.syncPrompts(ctx); err != nil {
				return nil, registryError(registry.FnPromptsMCPList, err)
			}
		case *sdk.ListToolsRequest:
			if _, err := s.syncTools(ctx); err != nil {
				return nil, internalError("engine::functions::list: " + callErrorText(err))
			}
		}
		return next(ctx, method, req)
	}
}

// complete stamps resultType "complete" on a result answered here for a
// 2026-07-28 (or later) session, as the SDK does for results of its own
// handlers: the field is private, so the result takes a JSON round trip
// through the SDK's own decoder, which keeps it.
func complete[R sdk.Result](req sdk.Request) func(R, error) (sdk.Result, error) {
	return func(res R, err error) (sdk.Result, error) {
		if err != nil {
			return nil, err
		}
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if !ok {
			return res, nil
		}
		if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion < StatelessProtocolVersion {
			return res, nil
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, internalError(err.Error())
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, internalError(err.Error())
		}
		m["resultType"] = json.RawMessage(`"complete"`)
		if b, err = json.Marshal(m); err != nil {
			return nil, internalError(err.Error())
		}
		out := reflect.New(reflect.TypeOf(res).Elem()).Interface().(sdk.Result)
		if err := json.Unmarshal(b, out); err != nil {
			return nil, internalError(err.Error())
		}
		return out, nil
	}
}

func cursorOf(p *sdk.ListResourcesParams) string {
	if p == nil {
		return ""
	}
	return p.Cursor
}

// registryError maps a failed registry call to a JSON-RPC error carrying
// the registry's own message. The registry's verdicts on the request
// (unknown skill or prompt, malformed URI or name, hidden namespace,
// unknown section function) are invalid params (-32602, which is also the
// 2026-07-28 resource-not-found code); failures behind it (a section or
// prompt handler that failed or timed out, state errors, an unreachable
// registry) are internal errors (-32603).
func registryError(fn string, err error) error {
	var inv *iii.InvocationError
	if !errors.As(err, &inv) {
		return internalError(fmt.Sprintf("%s: %s", fn, callErrorText(err)))
	}
	switch inv.Code {
	case iii.CodeFunctionNotFound, iii.CodeInvocationStopped:
		// The registry itself is not running (or went away mid-call).
		return internalError(fmt.Sprintf("skills registry unavailable (%s): %s", fn, inv.Message))
	}
	if registryFault(inv.Message) {
		return internalError(inv.Message)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: inv.Message}
}

// registryFault tells a failure behind the registry from a verdict on the
// request, by the registry's message prefixes.
func registryFault(msg string) bool {
	switch {
	case strings.HasPrefix(msg, "trigger "):
		// "trigger a::b: remote error (function_not_found): …" is an
		// unknown section function: a bad URI, not a fault.
		return !strings.Contains(msg, "("+iii.CodeFunctionNotFound+")")
	case strings.HasPrefix(msg, "state::"),
		strings.HasPrefix(msg, "decode stored "),
		strings.HasPrefix(msg, registry.MsgPromptUnsupportedShape),
		strings.HasPrefix(msg, "remote error"):
		return true
	}
	return false
}

func internalError(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}
