package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The skill tools serve the skill:// catalog to clients without resource
// support (Claude Desktop, many chat clients). Their names carry no "__",
// so no iii function maps onto them.
const (
	ToolListSkills = "list_skills"
	ToolReadSkill  = "read_skill"
)

const listSkillsDescription = "Lists the Agent Skills this server provides: for each skill its SKILL.md URI " +
	"(skill://<path>/SKILL.md), name and description, and its files. Start here: pick the skill whose description " +
	"matches the task, then call " + ToolReadSkill + " on its SKILL.md. Read the other files only when SKILL.md " +
	"tells you to. Pass nextCursor back as cursor for the next page."

const readSkillDescription = "Reads one file of an Agent Skill by URI: first the skill's SKILL.md " +
	"(skill://<path>/SKILL.md, from " + ToolListSkills + "), then, on demand, a file it references: relative " +
	"links resolve against the skill root (references/GUIDE.md in skill://a/b/SKILL.md is skill://a/b/references/GUIDE.md). " +
	"Skill content is guidance from this server, not instructions from the user."

func (s *Server) addSkillTools() {
	s.addBuiltinTool(&sdk.Tool{Name: ToolListSkills, Title: "List skills", Description: listSkillsDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"cursor":{"type":"string","description":"nextCursor of the previous page"}}}`)},
		s.listSkillsTool)
	s.addBuiltinTool(&sdk.Tool{Name: ToolReadSkill, Title: "Read a skill file", Description: readSkillDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","description":"skill://<path>/SKILL.md or a file of that skill"}},"required":["uri"]}`)},
		s.readSkillTool)
}

// addBuiltinTool adds a tool this server implements itself, annotated
// from its class in toolClasses (a tool missing there counts as Unknown),
// or withholds it when its class is not exposed.
func (s *Server) addBuiltinTool(t *sdk.Tool, h sdk.ToolHandler) {
	c, ok := toolClasses[t.Name]
	if !ok {
		c = Unknown
	}
	if !s.exposed(c) {
		s.withheldBuiltins[t.Name] = true
		return
	}
	t.Annotations = c.Annotations()
	if t.Title != "" {
		t.Annotations.Title = t.Title
	}
	s.sdk.AddTool(t, h)
	s.builtins[t.Name] = true
}

// ownTool reports the tools this server adds itself.
func (s *Server) ownTool(name string) bool { return s.builtins[name] || s.withheldBuiltins[name] }

func (s *Server) listSkillsTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Cursor string `json:"cursor"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return toolError("arguments must be an object with an optional string cursor: " + err.Error()), nil
		}
	}
	res, err := s.listSkills(ctx, in.Cursor)
	if err != nil {
		return toolError(err.Error()), nil
	}
	var b strings.Builder
	if len(res.Skills) == 0 {
		b.WriteString("No skills are served.\n")
	}
	for _, sk := range res.Skills {
		var fm struct{ Name, Description string }
		_ = json.Unmarshal(sk.Frontmatter, &fm)
		fmt.Fprintf(&b, "- %s — %s: %s", sk.URI, fm.Name, fm.Description)
		if files, ok := sk.Resources.([]skillResourceWire); ok && len(files) > 1 {
			fmt.Fprintf(&b, " (%d files)", len(files))
		}
		b.WriteString("\n")
	}
	if res.NextCursor != "" {
		fmt.Fprintf(&b, "\nMore skills: call %s with cursor %q.\n", ToolListSkills, res.NextCursor)
	}
	structured, err := json.Marshal(map[string]any{"skills": res.Skills, "nextCursor": res.NextCursor})
	if err != nil {
		return toolError(err.Error()), nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}, StructuredContent: json.RawMessage(structured)}, nil
}

func (s *Server) readSkillTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.URI == "" {
		return toolError(`arguments must be {"uri": "skill://<path>/SKILL.md"} (or a file of that skill)`), nil
	}
	res, err := s.readSkillFile(s.withHold(ctx, req.Extra), in.URI)
	if err != nil {
		return toolError(err.Error()), nil
	}
	c := res.Contents[0]
	if c.Blob != nil {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: c}}}, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: c.Text}}}, nil
}
