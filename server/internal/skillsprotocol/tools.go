package skillsprotocol

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// toolsJSON holds the 8 tool definitions exactly as the seed's tool-schema
// page gives them (name, description, parameters as JSON Schema).
//
//go:embed tools.json
var toolsJSON []byte

// Tool is one tool definition in the seed's form.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

var tools = func() []Tool {
	var t []Tool
	if err := json.Unmarshal(toolsJSON, &t); err != nil || len(t) != 8 {
		panic(fmt.Sprintf("skillsprotocol: tools.json: %v (%d tools)", err, len(t)))
	}
	return t
}()

// Tools returns the 8 tool definitions (a fresh copy).
func Tools() []Tool {
	var t []Tool
	_ = json.Unmarshal(toolsJSON, &t)
	return t
}

// ToolNames lists the tool names in the seed's order.
func ToolNames() []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// Tool definition formats for LLM function calling.
const (
	FormatSchema    = "schema"    // the seed's {name, description, parameters}
	FormatOpenAI    = "openai"    // {type: "function", function: {name, description, parameters}}
	FormatAnthropic = "anthropic" // {name, description, input_schema}
)

// ToolDefinitions renders the 8 tools in one of the formats.
func ToolDefinitions(format string) (any, error) {
	ts := Tools()
	switch format {
	case FormatSchema, "":
		return ts, nil
	case FormatOpenAI:
		out := make([]map[string]any, len(ts))
		for i, t := range ts {
			out[i] = map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": t.Parameters}}
		}
		return out, nil
	case FormatAnthropic:
		out := make([]map[string]any, len(ts))
		for i, t := range ts {
			out[i] = map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Parameters}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown tool format %q (expected schema, openai or anthropic)", format)
}
