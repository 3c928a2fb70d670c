package core

import (
	"context"

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
	meta := history.Meta{Message: in.Message, Author: in.Author}
	if err := checkMeta(rules.FnPromptsRegister, meta); err != nil {
		return registry.RegisterPromptOutput{}, err
	}
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

// servedPrompts is rows as a read serves them: where the serve label pins
// another version of a prompt's definition, that definition and time.
func (l *Local) servedPrompts(rows []registry.StoredPrompt) []registry.StoredPrompt {
	if l.hist.serveLabel == "" {
		return rows
	}
	for i, p := range rows {
		n, at := l.hist.prompts.LabelVersion(p.Name, l.hist.serveLabel)
		if n == 0 {
			continue
		}
		content, err := l.hist.prompts.Content(p.Name, n)
		if err != nil || content == promptDefinition(p.Description, p.FunctionID, p.Arguments) {
			continue
		}
		desc, fid, args, err := decodePromptDefinition(content)
		if err != nil {
			continue
		}
		rows[i].Description, rows[i].FunctionID, rows[i].Arguments = desc, fid, args
		rows[i].RegisteredAt = registry.Timestamp(at)
	}
	return rows
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
	if n := l.hist.prompts.Served(in.Name, l.hist.serveLabel); n > 0 {
		// The serve label pins another version of the definition.
		content, err := l.hist.prompts.Content(in.Name, n)
		if err != nil {
			return registry.PromptGetResult{}, err
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
