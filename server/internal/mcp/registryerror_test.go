package mcp

import (
	"errors"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestRegistryErrorDecidesByCode: a verdict code makes invalid params
// whatever the message says; the text decides only for the generic code
// an upstream registry answers with.
func TestRegistryErrorDecidesByCode(t *testing.T) {
	cases := []struct {
		name, code, msg string
		want            int64
	}{
		// Our codes win over text that reads like a fault.
		{"not found with fault text", rules.CodeNotFound, "trigger a::b: remote error (function_not_found): Function a::b not found", jsonrpc.CodeInvalidParams},
		{"not found", rules.CodeNotFound, "Skill not found: a/b", jsonrpc.CodeInvalidParams},
		{"invalid arguments with fault prefix", rules.CodeInvalidArguments, "state::get looks like a fault", jsonrpc.CodeInvalidParams},
		{"forbidden", rules.CodeForbidden, "forbidden: nope", jsonrpc.CodeInvalidParams},
		// The registry itself is missing.
		{"registry down", iii.CodeFunctionNotFound, "Function skills::resources-read not found", jsonrpc.CodeInternalError},
		{"registry gone", iii.CodeInvocationStopped, "connection dropped", jsonrpc.CodeInternalError},
		// Upstream: invocation_failed for everything, the text decides.
		{"upstream not found", iii.CodeInvocationFailed, "Skill not found: a/b", jsonrpc.CodeInvalidParams},
		{"upstream unknown section", iii.CodeInvocationFailed, "trigger a::b: remote error (function_not_found): Function a::b not found", jsonrpc.CodeInvalidParams},
		{"upstream section failed", iii.CodeInvocationFailed, "trigger a::b: remote error (invocation_failed): boom", jsonrpc.CodeInternalError},
		{"upstream state", iii.CodeInvocationFailed, "state::get: invocation timed out", jsonrpc.CodeInternalError},
		{"upstream decode", iii.CodeInvocationFailed, "decode stored skill a: missing field `skill`", jsonrpc.CodeInternalError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := registryError("skills::resources-read", &iii.InvocationError{Code: c.code, Message: c.msg})
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				t.Fatalf("got %T %v, want a *jsonrpc.Error", err, err)
			}
			if je.Code != c.want {
				t.Fatalf("code %d, want %d (message %q)", je.Code, c.want, je.Message)
			}
			if c.want == jsonrpc.CodeInvalidParams && je.Message != c.msg {
				t.Fatalf("message %q, want the registry's %q unchanged", je.Message, c.msg)
			}
		})
	}
}
