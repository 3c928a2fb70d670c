package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// middleware answers the lists that come live from the registry and
// routes everything with a result through the SDK's own dispatch, which
// stamps resultType and the cache fields for 2026-07-28 clients: reads
// reach the catch-all iii:// and skill:// templates, prompts and tools
// their mirror entries (resynced first when the mirror does not know them
// yet). What the SDK cannot dispatch (other URI schemes, unknown names) is
// answered here as an error with the registry's own message.
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
			if uri := r.Params.URI; !s.dispatchable(uri) {
				if u := registry.ToURIChars(uri); u != uri && s.dispatchable(u) {
					// A name sent unencoded (a space, a non-ASCII
					// letter, a NUL): the SDK dispatches the encoded
					// form, the handler reads the URI as asked.
					ctx = context.WithValue(ctx, askedURIKey{}, uri)
					r.Params.URI = u
				} else if _, err := s.readResource(ctx, uri); err != nil {
					return nil, err
				}
			}
		case *sdk.GetPromptRequest:
			if r.Params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get requires a name"}
			}
			if !s.knownPrompt(ctx, r.Params.Name) {
				// The registry's verdict (unknown prompt, malformed name).
				if _, err := s.getPrompt(ctx, r.Params.Name, r.Params.Arguments); err != nil {
					return nil, err
				}
			}
		case *sdk.CallToolRequest:
			if r.Params == nil || r.Params.Name == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call requires a non-empty string name"}
			}
			if s.withheldBuiltins[r.Params.Name] {
				return hiddenToolResult(r, s.withheldMessage(r.Params.Name))
			}
			if s.ownTool(r.Params.Name) {
				break
			}
			if fid := strings.ReplaceAll(r.Params.Name, "__", "::"); registry.IsHidden(fid) {
				return hiddenToolResult(r, fmt.Sprintf("Tool '%s' is in an internal namespace and cannot be called", r.Params.Name))
			}
			if _, ok := s.resolveTool(ctx, r.Params.Name); !ok {
				if s.isWithheld(r.Params.Name) {
					return hiddenToolResult(r, s.withheldMessage(r.Params.Name))
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown tool: %s", r.Params.Name)}
			}
		case *sdk.ListPromptsRequest:
			if err := s.syncPrompts(ctx); err != nil {
				return nil, registryError(rules.FnPromptsMCPList, err)
			}
		case *sdk.ListToolsRequest:
			if _, err := s.syncTools(ctx); err != nil {
				return nil, internalError(iii.FnListFunctions + ": " + callErrorText(err))
			}
		}
		return next(ctx, method, req)
	}
}

// Catch-all templates of the URIs the SDK dispatches to readResource.
var (
	iiiTemplate   = uritemplate.MustNew(registry.Scheme + "{+path}")
	skillTemplate = uritemplate.MustNew(SkillScheme + "{+path}")
)

// askedURIKey holds, in a read's context, the URI the client asked for
// when the middleware handed the SDK its encoded form.
type askedURIKey struct{}

// dispatchable reports whether the SDK finds a read handler for uri.
func (s *Server) dispatchable(uri string) bool {
	return iiiTemplate.Regexp().MatchString(uri) || (s.skillExt && skillTemplate.Regexp().MatchString(uri))
}

// hiddenToolResult is the tool error for a name in a hidden namespace. It
// is the one result this server builds outside an SDK handler, so for a
// 2026-07-28 client it is decoded from its wire form, resultType included
// (the SDK's own decoding; the field has no setter).
func hiddenToolResult(req *sdk.CallToolRequest, msg string) (sdk.Result, error) {
	res := toolError(msg)
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok {
		return res, nil
	}
	if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion < StatelessProtocolVersion {
		return res, nil
	}
	text, _ := json.Marshal(msg)
	wire := `{"content":[{"type":"text","text":` + string(text) + `}],"isError":true,"resultType":"complete"}`
	out := new(sdk.CallToolResult)
	if err := json.Unmarshal([]byte(wire), out); err != nil {
		return nil, internalError(err.Error())
	}
	return out, nil
}

func cursorOf(p *sdk.ListResourcesParams) string {
	if p == nil {
		return ""
	}
	return p.Cursor
}

// registryError maps a failed registry call to a JSON-RPC error carrying
// the registry's own message. The registry's verdicts on the request
// (unknown skill, prompt, version or section function, malformed URI or
// name, hidden namespace) are invalid params (-32602, which is also the
// 2026-07-28 resource-not-found code); failures behind it (a section or
// prompt handler that failed or timed out, state errors, an unreachable
// registry) are internal errors (-32603). Our registry names its verdicts
// by code; the text decides only for a code that is not one of them (an
// upstream registry answers everything with invocation_failed).
func registryError(fn string, err error) error {
	var inv *iii.InvocationError
	if !errors.As(err, &inv) {
		return internalError(fmt.Sprintf("%s: %s", fn, callErrorText(err)))
	}
	switch inv.Code {
	case iii.CodeFunctionNotFound, iii.CodeInvocationStopped:
		// The registry itself is not running (or went away mid-call).
		return internalError(fmt.Sprintf("skills registry unavailable (%s): %s", fn, inv.Message))
	case rules.CodeNotFound, rules.CodeInvalidArguments, rules.CodeForbidden, rules.CodeOutOfScope, iii.CodeInvalidRequest:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: inv.Message}
	case rules.CodeCorrupt: // a stored version refused: the registry's fault
		return internalError(inv.Message)
	}
	if upstreamFault(inv.Message) {
		return internalError(inv.Message)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: inv.Message}
}

// upstreamFault tells a failure behind an upstream registry from a verdict
// on the request by the message prefixes of skills v0.2.2, which answers
// both with invocation_failed.
func upstreamFault(msg string) bool {
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

// isNotFound reports a registry's NOT_FOUND verdict.
func isNotFound(err error) bool {
	var inv *iii.InvocationError
	return errors.As(err, &inv) && inv.Code == rules.CodeNotFound
}
