package mcp

import (
	"context"
	"errors"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FolderPrompts are the prompts of the skills folders (the directory of
// the registry's process): */prompts/*.md files with a description, whose
// body is the prompt. The folder prompt format defines no arguments, so a
// folder prompt takes none, and prompts/get answers its body as one user
// message, as written.
type FolderPrompts interface {
	// List lists them (Body unset).
	List() []FolderPrompt
	// Get reads one with its body; an *iii.InvocationError NOT_FOUND or
	// INVALID_ARGUMENTS for a name that names none.
	Get(name string) (FolderPrompt, error)
	// Subscribe calls changed after the folder prompts changed, until
	// cancel is called.
	Subscribe(changed func()) (cancel func())
}

// FolderPrompt is one folder prompt.
type FolderPrompt struct{ Name, Description, Body string }

// folderPromptDefs are the folder prompts as mirror entries, except those
// a registered prompt of the same name shadows (taken: the registered
// names), as a published skill shadows a folder skill of the same id.
func (s *Server) folderPromptDefs(taken map[string]promptDef) []promptDef {
	if s.opts.FolderPrompts == nil {
		return nil
	}
	var out []promptDef
	for _, p := range s.opts.FolderPrompts.List() {
		if _, shadowed := taken[p.Name]; shadowed {
			continue
		}
		out = append(out, promptDef{name: p.Name, description: p.Description, folder: true})
	}
	return out
}

// getFolderPrompt renders a folder prompt: its body, one user message.
func (s *Server) getFolderPrompt(name string) (*sdk.GetPromptResult, error) {
	p, err := s.opts.FolderPrompts.Get(name)
	if err != nil {
		var inv *iii.InvocationError
		if errors.As(err, &inv) && (inv.Code == rules.CodeNotFound || inv.Code == rules.CodeInvalidArguments) {
			return nil, invalidParams("%s", inv.Message) // removed a moment ago
		}
		return nil, internalError("folder prompt " + name + ": " + err.Error())
	}
	return &sdk.GetPromptResult{Description: p.Description, Messages: []*sdk.PromptMessage{
		{Role: "user", Content: &sdk.TextContent{Text: p.Body}}}}, nil
}

// followFolderPrompts resyncs the prompt mirror after every change of the
// folder prompts, one resync at a time (changes arriving meanwhile are
// covered by one more), until ctx ends.
func (s *Server) followFolderPrompts(ctx context.Context) {
	if s.opts.FolderPrompts == nil {
		return
	}
	kick := make(chan struct{}, 1)
	cancel := s.opts.FolderPrompts.Subscribe(func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	s.cleanups = append(s.cleanups, cancel)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
				if err := s.syncPrompts(ctx); err != nil {
					s.log.Warn("MCP: cannot reload prompts after a folder change", "err", err)
				}
			}
		}
	}()
}

// folderOrigin is the _meta of a folder prompt in prompts/list.
var folderOrigin = originMeta(string(catalog.OriginFolder))
