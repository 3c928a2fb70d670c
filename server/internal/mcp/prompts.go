package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// promptDef is one mirrored prompts/list entry.
type promptDef struct {
	name        string
	description string
	args        []sdk.PromptArgument
	folder      bool // a prompt of the skills folders (folderprompts.go)
}

func (p promptDef) equal(o promptDef) bool {
	return p.name == o.name && p.description == o.description && slices.Equal(p.args, o.args) && p.folder == o.folder
}

func (p promptDef) sdkPrompt() *sdk.Prompt {
	out := &sdk.Prompt{Name: p.name, Description: p.description}
	if p.folder {
		out.Meta = folderOrigin
	}
	for _, a := range p.args {
		arg := a
		out.Arguments = append(out.Arguments, &arg)
	}
	return out
}

// fetchPrompts calls prompts::mcp-list (sorted by name), leaving out the
// prompts whose handler the registry cannot reach (a publisher that is
// gone, or on an engine this node does not bridge to): prompts/list offers
// only prompts that can render, and they return (list_changed) with their
// handler. A prompts/get of one left out still answers the registry's
// error naming where its handler is.
func (s *Server) fetchPrompts(ctx context.Context) ([]promptDef, error) {
	env, err := s.registry.MCPPrompts(ctx)
	if err != nil {
		return nil, err
	}
	handlers, err := s.registry.PromptHandlers(ctx)
	if err != nil {
		s.log.Debug("MCP: cannot tell which prompt handlers are reachable; offering every prompt", "err", err)
		handlers = nil
	}
	out := make([]promptDef, 0, len(env.Prompts))
	for _, p := range env.Prompts {
		if h, ok := handlers[p.Name]; ok && !h.Available {
			s.log.Debug("MCP: prompt left out of prompts/list", "name", p.Name, "why", h.Problem)
			continue
		}
		d := promptDef{name: p.Name, description: p.Description}
		for _, a := range p.Arguments {
			arg := sdk.PromptArgument{Name: a.Name, Required: a.Required}
			if a.Description != nil {
				arg.Description = *a.Description
			}
			d.args = append(d.args, arg)
		}
		out = append(out, d)
	}
	return out, nil
}

// syncPrompts reloads the prompt mirror; names in touched are re-added even
// when unchanged (a re-registration may have changed the handler).
func (s *Server) syncPrompts(ctx context.Context, touched ...string) error {
	s.promptSync.Lock()
	defer s.promptSync.Unlock()
	list, err := s.fetchPrompts(ctx)
	if err != nil {
		return err
	}
	s.promptMu.Lock()
	defer s.promptMu.Unlock()
	next := make(map[string]promptDef, len(list))
	for _, p := range list {
		next[p.name] = p
	}
	for _, p := range s.folderPromptDefs(next) {
		next[p.name] = p
	}
	var removed []string
	for name := range s.prompts {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		s.sdk.RemovePrompts(removed...)
	}
	var added []string
	for name, p := range next {
		old, had := s.prompts[name]
		if !had || !old.equal(p) || slices.Contains(touched, name) {
			s.sdk.AddPrompt(p.sdkPrompt(), s.getPromptHandler)
			added = append(added, name)
		}
	}
	if len(added)+len(removed) > 0 {
		s.log.Debug("MCP: prompts changed", "added", added, "removed", removed)
	}
	s.prompts = next
	return nil
}

// knownPrompt reports whether the mirror has name, resyncing it once on a
// miss (a prompt registered a moment ago).
func (s *Server) knownPrompt(ctx context.Context, name string) bool {
	lookup := func() bool {
		s.promptMu.Lock()
		defer s.promptMu.Unlock()
		_, ok := s.prompts[name]
		return ok
	}
	if lookup() {
		return true
	}
	if err := s.syncPrompts(ctx); err != nil {
		s.log.Debug("MCP: "+rules.FnPromptsMCPList+" failed", "err", err)
	}
	return lookup()
}

func (s *Server) getPromptHandler(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	return s.getPrompt(ctx, req.Params.Name, req.Params.Arguments)
}

// getPrompt renders a prompt through prompts::mcp-get. Missing required
// arguments of a known prompt are refused first (invalid params), as MCP
// asks; everything else is the registry's verdict.
func (s *Server) getPrompt(ctx context.Context, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	s.promptMu.Lock()
	def, known := s.prompts[name]
	s.promptMu.Unlock()
	if known && def.folder {
		return s.getFolderPrompt(name)
	}
	if known {
		for _, a := range def.args {
			if _, ok := args[a.Name]; a.Required && !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("Missing required argument %q for prompt %s", a.Name, name)}
			}
		}
	}
	in := registry.PromptGetInput{Name: name}
	if args != nil {
		in.Arguments, _ = json.Marshal(args) // a map of strings: never fails
	}
	out, err := s.registry.GetPrompt(ctx, in)
	if err != nil {
		return nil, registryError(rules.FnPromptsMCPGet, err)
	}
	messages := make([]*sdk.PromptMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		var msg sdk.PromptMessage
		if err := json.Unmarshal(m, &msg); err != nil {
			return nil, internalError(fmt.Sprintf("prompt %s: the handler returned messages that are not MCP prompt messages: %v", name, err))
		}
		messages = append(messages, &msg)
	}
	return &sdk.GetPromptResult{Description: out.Description, Messages: messages}, nil
}
