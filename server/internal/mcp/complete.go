package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxCompletions is the spec's cap on completion values per answer.
const maxCompletions = 100

// complete answers completion/complete. The registry's templates complete
// from what is registered: skill_id of iii://{skill_id} from the skill
// ids, function_path of iii://fn/{function_path} from the visible
// functions (a::b offered as a/b). Prompt arguments have no known values,
// so a registered prompt completes to nothing.
func (s *Server) complete(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	p := req.Params
	var candidates []string
	switch {
	case p.Ref.Type == "ref/resource" && p.Argument.Name == "skill_id":
		s.resMu.Lock()
		for uri := range s.resources {
			if id, ok := strings.CutPrefix(uri, registry.Scheme); ok && uri != registry.IndexURI {
				candidates = append(candidates, id)
			}
		}
		s.resMu.Unlock()
	case p.Ref.Type == "ref/resource" && p.Argument.Name == "function_path":
		s.toolMu.Lock()
		for _, t := range s.tools {
			candidates = append(candidates, strings.ReplaceAll(t.functionID, "::", "/"))
		}
		s.toolMu.Unlock()
	case p.Ref.Type == "ref/prompt":
		s.promptMu.Lock()
		_, known := s.prompts[p.Ref.Name]
		s.promptMu.Unlock()
		if !known {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Prompt not found: %s", p.Ref.Name)}
		}
	}
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, p.Argument.Value) {
			values = append(values, c)
		}
	}
	sort.Strings(values)
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values, Total: len(values)}}
	if len(values) > maxCompletions {
		res.Completion.Values, res.Completion.HasMore = values[:maxCompletions], true
	}
	return res, nil
}
