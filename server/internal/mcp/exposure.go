package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iii-skills/skills/server/internal/registry"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolClass says what calling a tool does. It sets the tool's MCP
// annotations and whether the tool is exposed by default: only tools that
// change nothing and reach nothing outside the engine are; every other
// tool (downloads, writes, dialing out, publishing, unregistering,
// running code, and functions whose effects are unknown) is exposed only
// when the operator allows side effects (Options.AllowSideEffects).
type ToolClass struct {
	ReadOnly    bool // changes nothing (readOnlyHint)
	Destructive bool // may overwrite or delete what exists (destructiveHint)
	OpenWorld   bool // reaches hosts outside the engine (openWorldHint)
}

// The classes the table below uses.
var (
	// ReadOnlyTool reads what the registry or the engine holds.
	ReadOnlyTool = ToolClass{ReadOnly: true}
	// OpenWorldRead reads from a host outside the engine.
	OpenWorldRead = ToolClass{ReadOnly: true, OpenWorld: true}
	// Download writes into the served folder what it fetched from elsewhere.
	Download = ToolClass{Destructive: true, OpenWorld: true}
	// Unknown is a function that declares nothing: MCP's own defaults
	// for a tool without annotations (may write, destroy, dial out).
	Unknown = ToolClass{Destructive: true, OpenWorld: true}
)

// SideEffects reports a tool that is not exposed by default.
func (c ToolClass) SideEffects() bool { return !c.ReadOnly || c.OpenWorld }

// Annotations are the MCP tool annotations of the class.
func (c ToolClass) Annotations() *sdk.ToolAnnotations {
	a := &sdk.ToolAnnotations{ReadOnlyHint: c.ReadOnly, OpenWorldHint: &c.OpenWorld}
	if !c.ReadOnly {
		destructive := c.Destructive
		a.DestructiveHint = &destructive
	}
	return a
}

// toolClasses classifies every tool this server knows, by MCP tool name:
// its built-in tools and the functions of the skills registry and the
// iii-directory surface (the other registry functions live in hidden
// namespaces and are never tools). Adding a tool is one line here.
// Functions of other workers are classified by their own metadata
// (classOf).
var toolClasses = map[string]ToolClass{
	ToolListSkills: ReadOnlyTool,
	ToolReadSkill:  ReadOnlyTool,
	// skills::search: a ranked read of the catalog.
	ToolSearchSkills: ReadOnlyTool,

	// Section reads run publishers' renderers, which the registry calls
	// with {} as any skill read does.
	"skill__fetch": ReadOnlyTool,
	// skill::search, the public alias of skills::search.
	"skill__search": ReadOnlyTool,

	"directory__skills__list":                      ReadOnlyTool,
	"directory__skills__fetch-skill":               ReadOnlyTool,
	"directory__skills__diagnostics":               ReadOnlyTool,
	"directory__skills__download":                  Download,
	"directory__prompts__list":                     ReadOnlyTool,
	"directory__prompts__get":                      ReadOnlyTool,
	"directory__engine__functions__list":           ReadOnlyTool,
	"directory__engine__functions__info":           ReadOnlyTool,
	"directory__engine__triggers__list":            ReadOnlyTool,
	"directory__engine__triggers__info":            ReadOnlyTool,
	"directory__engine__registered-triggers__list": ReadOnlyTool,
	"directory__engine__registered-triggers__info": ReadOnlyTool,
	"directory__engine__workers__list":             ReadOnlyTool,
	"directory__engine__workers__info":             ReadOnlyTool,
	// The public workers registry, over HTTP.
	"directory__registry__workers__list": OpenWorldRead,
	"directory__registry__workers__info": OpenWorldRead,
}

// sectionFetchers are the tools whose uri / uris arguments are read as
// iii:// URIs, sections included (bare paths get iii:// in front): their
// arguments go through the section guard before the call.
var sectionFetchers = map[string]bool{
	"skill__fetch":                   true,
	"directory__skills__fetch-skill": true,
}

// classOf classifies a tool: the table first, then what the function
// declares in its registration metadata under "mcp", with MCP's
// annotation names ({"mcp": {"readOnlyHint": true}}); a function that
// declares nothing is Unknown.
func classOf(name string, metadata json.RawMessage) ToolClass {
	if c, ok := toolClasses[name]; ok {
		return c
	}
	var md struct {
		MCP struct {
			ReadOnly    *bool `json:"readOnlyHint"`
			Destructive *bool `json:"destructiveHint"`
			OpenWorld   *bool `json:"openWorldHint"`
		} `json:"mcp"`
	}
	if len(metadata) == 0 || json.Unmarshal(metadata, &md) != nil || md.MCP.ReadOnly == nil {
		return Unknown
	}
	c := ToolClass{ReadOnly: *md.MCP.ReadOnly, Destructive: true, OpenWorld: true}
	if md.MCP.Destructive != nil {
		c.Destructive = *md.MCP.Destructive
	}
	if md.MCP.OpenWorld != nil {
		c.OpenWorld = *md.MCP.OpenWorld
	}
	return c
}

// exposed reports whether a tool of class c is served.
func (s *Server) exposed(c ToolClass) bool { return s.opts.AllowSideEffects || !c.SideEffects() }

// withheldMessage is the refusal of a call to a tool that has side
// effects while the operator has not allowed them.
func (s *Server) withheldMessage(name string) string {
	return fmt.Sprintf("Tool '%s' has side effects (it may write, download, dial out or run code) and is not exposed over MCP; "+
		"the operator can allow such tools with %s", name, s.opts.AllowSideEffectsSetting)
}

// checkSection is the one guard of every MCP read that can end in a
// section call (iii://fn/a/b → a::b): resources/read and the fetch tools.
// It refuses the hidden namespaces tools honour, and, unless the operator
// allowed side effects, the functions this server classifies as having
// them. uri must be a full iii:// URI; anything that is not a section
// passes (the registry judges it).
func (s *Server) checkSection(uri string) error {
	if !strings.HasPrefix(uri, sectionPrefix) {
		return nil
	}
	t, err := registry.ParseURI(uri)
	if err != nil || t.Kind != registry.TargetSection {
		return nil // the registry refuses it with its own message
	}
	if err := registry.CheckSection(t.FunctionID); err != nil {
		return err
	}
	if c, known := toolClasses[ToolName(t.FunctionID)]; known && !s.exposed(c) {
		return fmt.Errorf("Function '%s' has side effects and cannot back a section read over MCP; the operator can allow it with %s",
			t.FunctionID, s.opts.AllowSideEffectsSetting)
	}
	return nil
}

// checkFetchArguments runs the section guard over a fetch tool's uri /
// uris the way the fetch functions select them (uris wins when non-empty,
// blanks dropped, bare paths prefixed with iii://). Arguments that do not
// decode pass: the function refuses them with the same decoder.
func (s *Server) checkFetchArguments(args json.RawMessage) error {
	var in struct {
		URI  *string  `json:"uri"`
		URIs []string `json:"uris"`
	}
	if json.Unmarshal(args, &in) != nil {
		return nil
	}
	uris, err := registry.SelectFetchURIs(in.URI, in.URIs, true)
	if err != nil {
		return nil
	}
	for _, u := range uris {
		if err := s.checkSection(u); err != nil {
			return err
		}
	}
	return nil
}
