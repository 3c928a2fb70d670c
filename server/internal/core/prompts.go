package core

import (
	"context"
	"fmt"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// RegisterPrompt implements Registry.
func (l *Local) RegisterPrompt(ctx context.Context, c Caller, in registry.RegisterPromptInput) (registry.RegisterPromptOutput, error) {
	if err := registry.ValidatePromptRegistration(in.Name, in.Description, in.FunctionID, in.Arguments); err != nil {
		return registry.RegisterPromptOutput{}, invalidArguments(err)
	}
	if err := l.claim(ctx, "prompt", in.Name, c, in.FunctionID); err != nil {
		return registry.RegisterPromptOutput{}, answer(err)
	}
	if err := checkMeta(rules.FnPromptsRegister, history.Meta{Message: in.Message, Author: in.Author}); err != nil {
		return registry.RegisterPromptOutput{}, err
	}
	// The signature covers the prompt's canonical JSON (history.go).
	def := promptDefinition(in.Description, in.FunctionID, in.Arguments)
	meta, err := l.sign.verdict(rules.FnPromptsRegister, KindPrompt, in.Name, def, in.Signature)
	if err != nil {
		return registry.RegisterPromptOutput{}, err
	}
	meta.Message, meta.Author = in.Message, in.Author
	// A changed definition also becomes the prompt's next version (versions.go).
	row, _, _, err := l.putPrompt(ctx, in.Name, in.Description, in.FunctionID, in.Arguments, meta)
	if err != nil {
		return registry.RegisterPromptOutput{}, answer(err)
	}
	l.reach.Expect(in.FunctionID)
	return registry.RegisterPromptOutput{Name: row.Name, RegisteredAt: row.RegisteredAt}, nil
}

// UnregisterPrompt implements Registry.
func (l *Local) UnregisterPrompt(ctx context.Context, c Caller, name string) (registry.UnregisterPromptOutput, error) {
	if err := registry.ValidateName(name); err != nil {
		return registry.UnregisterPromptOutput{}, invalidArguments(err)
	}
	if err := l.claim(ctx, "prompt", name, c); err != nil {
		return registry.UnregisterPromptOutput{}, answer(err)
	}
	removed, err := kv.Delete(ctx, l.state, l.cfg.Scopes.Prompts, name)
	if err != nil {
		return registry.UnregisterPromptOutput{}, answer(sdkError(err))
	}
	l.release("prompt", name)
	l.prompts.changed(name, nil)
	if removed {
		l.cl.Announce(ctx, l.cfg.Scopes.Prompts, cluster.OpDelete, name)
		l.log.Info("prompt unregistered", "name", name)
		l.promptChanged(registry.OpUnregister, name)
	}
	return registry.UnregisterPromptOutput{Name: name, Removed: removed}, nil
}

// storedPrompts lists the prompts scope; rows that do not decode are dropped.
func (l *Local) storedPrompts(ctx context.Context) ([]registry.StoredPrompt, error) {
	raw, err := l.state.List(ctx, l.cfg.Scopes.Prompts)
	if err != nil {
		return nil, sdkError(err)
	}
	rows := make([]registry.StoredPrompt, 0, len(raw))
	for _, r := range raw {
		if p, err := registry.DecodeStoredPrompt(r); err == nil {
			rows = append(rows, p)
		}
	}
	return rows, nil
}

// servedPrompts is rows as a read serves them: where the serve label
// pins another version of a prompt's definition, or the newest versions
// are yanked, that definition and time; a prompt whose every version is
// yanked is left out.
func (l *Local) servedPrompts(rows []registry.StoredPrompt) []registry.StoredPrompt {
	out := rows[:0]
	for _, p := range rows {
		n, pinned, withdrawn := l.hist.prompts.Serving(p.Name, l.hist.serveLabel)
		if withdrawn != "" {
			continue
		}
		if pinned {
			if content, err := l.hist.prompts.Content(p.Name, n); err == nil && content != promptDefinition(p.Description, p.FunctionID, p.Arguments) {
				if desc, fid, args, err := decodePromptDefinition(content); err == nil {
					p.Description, p.FunctionID, p.Arguments = desc, fid, args
					p.RegisteredAt = registry.Timestamp(l.hist.prompts.VersionTime(p.Name, n))
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// ListPrompts implements Registry.
func (l *Local) ListPrompts(ctx context.Context) (registry.PromptList, error) {
	rows, err := l.storedPrompts(ctx)
	if err != nil {
		return registry.PromptList{}, answer(err)
	}
	return registry.NewPromptList(l.servedPrompts(rows)), nil
}

// MCPPrompts implements Registry.
func (l *Local) MCPPrompts(ctx context.Context) (registry.MCPPromptList, error) {
	rows, err := l.storedPrompts(ctx)
	if err != nil {
		l.log.Warn(rules.FnPromptsMCPList+": listing prompts failed", "err", err)
		rows = nil // upstream swallows it: an empty list
	}
	return registry.NewMCPPromptList(l.servedPrompts(rows)), nil
}

// GetPrompt implements Registry: the prompt's handler renders it.
func (l *Local) GetPrompt(ctx context.Context, in registry.PromptGetInput) (registry.PromptGetResult, error) {
	out, err := l.getPrompt(ctx, in)
	return out, answer(err)
}

func (l *Local) getPrompt(ctx context.Context, in registry.PromptGetInput) (registry.PromptGetResult, error) {
	if err := registry.ValidateName(in.Name); err != nil {
		return registry.PromptGetResult{}, invalidArguments(err)
	}
	args := registry.NormalizePromptArguments(in.Arguments)
	raw, ok, err := l.state.Get(ctx, l.cfg.Scopes.Prompts, in.Name)
	if err != nil {
		return registry.PromptGetResult{}, registry.ErrState(iii.StateGet, sdkError(err))
	}
	if !ok {
		return registry.PromptGetResult{}, notFound(registry.ErrPromptNotFound(in.Name))
	}
	prompt, err := registry.DecodeStoredPrompt(raw)
	if err != nil {
		return registry.PromptGetResult{}, registry.ErrDecodePrompt(in.Name, err)
	}
	n, pinned, withdrawn := l.hist.prompts.Serving(in.Name, l.hist.serveLabel)
	if withdrawn != "" {
		return registry.PromptGetResult{}, notFound(fmt.Errorf("%s: every kept version of prompt %s is yanked (%s)", registry.ErrPromptNotFound(in.Name), in.Name, withdrawn))
	}
	if pinned {
		// The serve label, or a yank, makes another version served.
		content, err := l.hist.prompts.Content(in.Name, n)
		if err != nil {
			return registry.PromptGetResult{}, historyError(err)
		}
		if prompt.Description, prompt.FunctionID, prompt.Arguments, err = decodePromptDefinition(content); err != nil {
			return registry.PromptGetResult{}, err
		}
	}
	if err := registry.CheckPromptHandler(prompt.FunctionID); err != nil {
		return registry.PromptGetResult{}, err // the stored row is at fault, not the caller
	}
	// Where the handler is: this engine, or another node's through the
	// engine's iii-bridge (package reach).
	out, err := l.reach.Trigger(ctx, iii.TriggerRequest{FunctionID: prompt.FunctionID, Data: args, Timeout: l.cfg.StateTimeout()})
	if err != nil {
		return registry.PromptGetResult{}, registry.ErrTrigger(prompt.FunctionID, sdkError(err))
	}
	messages, err := registry.NormalizePromptOutput(out)
	if err != nil {
		return registry.PromptGetResult{}, err
	}
	l.countedPrompt(ctx, in.Name)
	return registry.PromptGetResult{Description: prompt.Description, Messages: messages}, nil
}
