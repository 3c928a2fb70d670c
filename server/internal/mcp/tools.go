package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxInfoBatch is engine::functions::info's function_ids limit.
const maxInfoBatch = 32

// toolDef is one mirrored tool: an engine function that is not hidden.
type toolDef struct {
	name        string
	functionID  string
	description string
	schema      json.RawMessage // compact, always an object schema
	class       ToolClass
}

func (t toolDef) equal(o toolDef) bool {
	return t.name == o.name && t.functionID == o.functionID && t.description == o.description && bytes.Equal(t.schema, o.schema) &&
		t.class == o.class
}

// ToolName maps a function id to its MCP tool name ("::" → "__"), the way
// every upstream bridge does.
func ToolName(functionID string) string { return strings.ReplaceAll(functionID, "::", "__") }

// syncTools reloads the tool mirror from engine::functions::list. It also
// reports whether the skills registry is running (its resources-list
// function is registered), for the poller.
func (s *Server) syncTools(ctx context.Context) (registryPresent bool, err error) {
	s.toolSync.Lock()
	defer s.toolSync.Unlock()
	var env struct {
		Functions []iii.FunctionInfo `json:"functions"`
	}
	if err := s.engine.Read(ctx, iii.FnListFunctions, nil, &env); err != nil {
		return false, err
	}
	sort.Slice(env.Functions, func(i, j int) bool { return env.Functions[i].FunctionID < env.Functions[j].FunctionID })

	var visible []iii.FunctionInfo
	for _, f := range env.Functions {
		if f.FunctionID == rules.FnSkillsResourcesList {
			registryPresent = true
		}
		// The engine leaves internal functions out already; checked
		// again for engines that do not.
		if f.FunctionID == "" || registry.IsHidden(f.FunctionID) || f.Internal() {
			continue
		}
		visible = append(visible, f)
	}

	s.toolMu.Lock()
	defer s.toolMu.Unlock()
	withheld := map[string]bool{}
	exposed := visible[:0]
	for _, f := range visible {
		if name := ToolName(f.FunctionID); !s.ownTool(name) && !s.exposed(classOf(name, f.Metadata)) {
			withheld[name] = true
			continue
		}
		exposed = append(exposed, f)
	}
	visible = exposed
	s.withheld = withheld
	s.fillSchemasLocked(ctx, visible)
	next := make(map[string]toolDef, len(visible))
	for _, f := range visible {
		name := ToolName(f.FunctionID)
		if s.ownTool(name) {
			s.log.Warn("MCP: a function maps to the name of a skill tool; not listed", "tool", name, "function_id", f.FunctionID)
			continue
		}
		if prev, dup := next[name]; dup {
			s.log.Warn("MCP: two functions map to one tool name; keeping the first", "tool", name, "kept", prev.functionID, "dropped", f.FunctionID)
			continue
		}
		schema := f.RequestFormat
		if !usableSchema(schema) {
			schema = s.infoMemo[f.FunctionID]
		}
		next[name] = toolDef{name: name, functionID: f.FunctionID, description: toolDescription(f), schema: inputSchema(schema),
			class: classOf(name, f.Metadata)}
	}
	var removed []string
	for name := range s.tools {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		s.sdk.RemoveTools(removed...)
	}
	var added []string
	for name, t := range next {
		if old, had := s.tools[name]; had && old.equal(t) {
			continue
		}
		added = append(added, name)
		if err := s.addTool(t); err != nil {
			s.log.Warn("MCP: function schema refused by the MCP SDK; publishing the tool with an open object schema", "function_id", t.functionID, "err", err)
			t.schema = json.RawMessage(`{"type":"object"}`)
			_ = s.addTool(t)
			next[name] = t
		}
	}
	if len(added)+len(removed) > 0 {
		s.log.Debug("MCP: tools changed", "added", added, "removed", removed)
	}
	for id := range s.infoMemo {
		if _, ok := next[ToolName(id)]; !ok {
			delete(s.infoMemo, id)
		}
	}
	s.tools = next
	return registryPresent, nil
}

// addTool adds t to the SDK server, turning the SDK's panics on schemas it
// refuses into an error.
func (s *Server) addTool(t toolDef) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	fid, fetches := t.functionID, sectionFetchers[t.name]
	s.sdk.AddTool(&sdk.Tool{Name: t.name, Description: t.description, InputSchema: t.schema, Annotations: t.class.Annotations()},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if fetches {
				if err := s.checkFetchArguments(req.Params.Arguments); err != nil {
					return toolError(err.Error()), nil
				}
			}
			return s.callFunction(ctx, fid, req.Params.Arguments), nil
		})
	return nil
}

// fillSchemasLocked asks engine::functions::info for the request_schema of
// functions listed without a request_format (a real engine's list carries
// none). Answers, including "no schema", are memoized per function id.
func (s *Server) fillSchemasLocked(ctx context.Context, fns []iii.FunctionInfo) {
	var missing []string
	for _, f := range fns {
		if _, memo := s.infoMemo[f.FunctionID]; !usableSchema(f.RequestFormat) && !memo {
			missing = append(missing, f.FunctionID)
		}
	}
	for len(missing) > 0 {
		batch := missing[:min(maxInfoBatch, len(missing))]
		missing = missing[len(batch):]
		var out struct {
			Functions []iii.FunctionDetail `json:"functions"`
		}
		if err := s.engine.Read(ctx, iii.FnInfoFunctions, map[string]any{"function_ids": batch}, &out); err != nil {
			s.log.Debug("MCP: "+iii.FnInfoFunctions+" failed", "err", err)
			return
		}
		for _, id := range batch {
			s.infoMemo[id] = nil
		}
		for _, f := range out.Functions {
			if usableSchema(f.RequestSchema) {
				s.infoMemo[f.FunctionID] = f.RequestSchema
			}
		}
	}
}

// toolDescription is the function's description, or a plain statement of
// what the tool calls when it published none (clients and agents expect
// every tool to say something).
func toolDescription(f iii.FunctionInfo) string {
	if strings.TrimSpace(f.Description) != "" {
		return f.Description
	}
	return fmt.Sprintf("Calls the iii function %s (it published no description).", f.FunctionID)
}

// usableSchema: a JSON object (not null, not absent).
func usableSchema(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// inputSchema turns a function's request format into an MCP tool input
// schema: a JSON object schema with type "object" (added when missing,
// forced when another type was declared, since tool arguments are always
// an object) and boolean property schemas turned into {}. Every other
// keyword ($schema, $defs, additionalProperties, …) is kept as published
// (SEP-1613). Unusable input gives {"type":"object"}.
func inputSchema(raw json.RawMessage) json.RawMessage {
	open := json.RawMessage(`{"type":"object"}`)
	if !usableSchema(raw) {
		return open
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return open
	}
	if t, ok := m["type"].(string); !ok || t != "object" {
		m["type"] = "object"
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			if _, isBool := v.(bool); isBool {
				props[k] = map[string]any{}
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return open
	}
	return out
}

// isWithheld reports a tool name whose function or built-in exists but
// is not exposed (it has side effects and the operator did not allow them).
func (s *Server) isWithheld(name string) bool {
	if s.withheldBuiltins[name] {
		return true
	}
	s.toolMu.Lock()
	defer s.toolMu.Unlock()
	return s.withheld[name]
}

// resolveTool finds the function behind a tool name: the mirror first (so
// ids that really contain "__" resolve), resynced once on a miss.
func (s *Server) resolveTool(ctx context.Context, name string) (string, bool) {
	lookup := func() (string, bool) {
		s.toolMu.Lock()
		defer s.toolMu.Unlock()
		t, ok := s.tools[name]
		return t.functionID, ok
	}
	if fid, ok := lookup(); ok {
		return fid, true
	}
	if _, err := s.syncTools(ctx); err != nil {
		s.log.Debug("MCP: "+iii.FnListFunctions+" failed", "err", err)
	}
	return lookup()
}

// callFunction triggers fid with the tool arguments ({} when absent) and
// shapes the outcome: a string result is the text as is, anything else is
// pretty JSON (and structuredContent when it is an object); a failure is
// isError with the error text.
func (s *Server) callFunction(ctx context.Context, fid string, args json.RawMessage) *sdk.CallToolResult {
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	var out json.RawMessage
	err := s.engine.Call(ctx, fid, args, &out)
	if err != nil {
		return toolError(callErrorText(err))
	}
	out = bytes.TrimSpace(out)
	var str string
	if json.Unmarshal(out, &str) == nil {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: str}}}
	}
	if len(out) == 0 {
		out = []byte("null")
	}
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: prettyJSON(out)}}}
	if out[0] == '{' {
		res.StructuredContent = json.RawMessage(out)
	}
	return res
}

func toolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// callErrorText is the message an agent sees for a failed call: the
// function's own message, prefixed with the code when it is not a plain
// handler failure (function_not_found, timeouts, …).
func callErrorText(err error) string {
	var inv *iii.InvocationError
	switch {
	case errors.As(err, &inv) && inv.Code == iii.CodeInvocationFailed:
		return inv.Message
	case errors.As(err, &inv):
		return inv.Code + ": " + inv.Message
	case errors.Is(err, iii.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "invocation timed out"
	default:
		return err.Error()
	}
}

// prettyJSON indents JSON with two spaces without escaping HTML.
func prettyJSON(raw []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimRight(buf.String(), "\n")
}
