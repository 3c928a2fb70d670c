package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/core"
)

// ToolSearchSkills ranks the registry's skills for a task: the way into a
// catalog too large to read whole. It calls the registry's skills::search
// (a read), so it works against any engine that runs the registry.
const ToolSearchSkills = "search_skills"

const searchSkillsDescription = "Searches the skill registry for the task at hand, in your own words " +
	"(\"shrink images for the web\"), and returns the best-matching skills, best first, each with its iii:// URI. " +
	"Read the one that fits with skill__fetch (or resources/read). When the answer says low confidence, no skill " +
	"matches well: rephrase, or do without."

const searchSkillsSchema = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"what you want to do, in a few words"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":100,"description":"most results (default 10)"},` +
	`"namespace":{"type":"string","description":"only skills with this id or under it"}},"required":["query"]}`

func (s *Server) addSearchTool() {
	s.addBuiltinTool(&sdk.Tool{Name: ToolSearchSkills, Title: "Search skills", Description: searchSkillsDescription,
		InputSchema: json.RawMessage(searchSkillsSchema)}, s.searchSkillsTool)
}

func (s *Server) searchSkillsTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	in, err := core.DecodeSearchInput(rules.FnSkillsSearch, req.Params.Arguments)
	if err != nil {
		return toolError(callErrorText(err)), nil
	}
	res, err := s.registry.Search(ctx, in)
	var inv *iii.InvocationError
	if errors.As(err, &inv) && inv.Code == wire.CodeFunctionNotFound {
		return toolError("This registry has no " + rules.FnSkillsSearch + " (an upstream v0.2.2 registry?): read the resource iii://skills for the index instead."), nil
	}
	if err != nil {
		return toolError(callErrorText(err)), nil
	}
	structured, err := json.Marshal(res)
	if err != nil {
		return toolError(err.Error()), nil
	}
	var b strings.Builder
	switch {
	case len(res.Results) == 0:
		b.WriteString("No skill matches this query. Rephrase it, or read iii://skills for the whole index.\n")
	case res.LowConfidence:
		b.WriteString("Low confidence: no skill matches the query well; these are the closest.\n")
	}
	for i, r := range res.Results {
		fmt.Fprintf(&b, "%d. %s — %s: %s (score %.2f)\n", i+1, r.URI, r.Title, r.Description, r.Score)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}, StructuredContent: json.RawMessage(structured)}, nil
}
