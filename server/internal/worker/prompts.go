package worker

import (
	"context"
	"encoding/json"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

func triggerRequest(functionID string, payload json.RawMessage, timeout time.Duration) iii.TriggerRequest {
	return iii.TriggerRequest{FunctionID: functionID, Data: payload, Timeout: timeout}
}

func (w *Worker) registerPrompt(ctx context.Context, data json.RawMessage) (any, error) {
	in, err := registry.DecodeRegisterPromptInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	if err := registry.ValidatePromptRegistration(in.Name, in.Description, in.FunctionID, in.Arguments); err != nil {
		return nil, invalidArguments(err)
	}
	if err := w.claim(ctx, "prompt", in.Name, w.callerOf(ctx, data), in.FunctionID); err != nil {
		return nil, err
	}
	if err := checkMeta(rules.FnPromptsRegister, in.Message, in.Author); err != nil {
		return nil, err
	}
	// A changed definition also becomes the prompt's next version (versions.go).
	row, _, _, err := w.putPrompt(ctx, in.Name, in.Description, in.FunctionID, in.Arguments, history.Meta{Message: in.Message, Author: in.Author})
	if err != nil {
		return nil, err
	}
	return registry.RegisterPromptOutput{Name: row.Name, RegisteredAt: row.RegisteredAt}, nil
}

func (w *Worker) unregisterPrompt(ctx context.Context, data json.RawMessage) (any, error) {
	name, err := registry.DecodeUnregisterPromptInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	if err := registry.ValidateName(name); err != nil {
		return nil, invalidArguments(err)
	}
	if err := w.claim(ctx, "prompt", name, w.callerOf(ctx, data)); err != nil {
		return nil, err
	}
	removed, err := kv.Delete(ctx, w.state, w.cfg.Scopes.Prompts, name)
	if err != nil {
		return nil, sdkError(err)
	}
	w.release("prompt", name)
	w.prompts.changed(name, nil)
	if removed {
		w.cl.Announce(ctx, w.cfg.Scopes.Prompts, cluster.OpDelete, name)
		w.log.Info("prompt unregistered", "name", name)
		w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpUnregister, Name: name})
	}
	return registry.UnregisterPromptOutput{Name: name, Removed: removed}, nil
}

// storedPrompts lists the prompts scope; rows that do not decode are dropped.
func (w *Worker) storedPrompts(ctx context.Context) ([]registry.StoredPrompt, error) {
	raw, err := w.state.List(ctx, w.cfg.Scopes.Prompts)
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
func (w *Worker) servedPrompts(rows []registry.StoredPrompt) []registry.StoredPrompt {
	if w.hist.serveLabel == "" {
		return rows
	}
	for i, p := range rows {
		n, at := w.hist.prompts.LabelVersion(p.Name, w.hist.serveLabel)
		if n == 0 {
			continue
		}
		content, err := w.hist.prompts.Content(p.Name, n)
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

func (w *Worker) listPrompts(ctx context.Context, data json.RawMessage) (any, error) {
	if err := registry.DecodeEmptyInput(data, "ListPromptsInput"); err != nil {
		return nil, invalidArguments(err)
	}
	rows, err := w.storedPrompts(ctx)
	if err != nil {
		return nil, err
	}
	return registry.NewPromptList(w.servedPrompts(rows)), nil
}

func (w *Worker) mcpListPrompts(ctx context.Context, data json.RawMessage) (any, error) {
	if err := registry.DecodeEmptyInput(data, "EmptyInput"); err != nil {
		return nil, invalidArguments(err)
	}
	rows, err := w.storedPrompts(ctx)
	if err != nil {
		w.log.Warn("prompts::mcp-list: listing prompts failed", "err", err)
		rows = nil // upstream swallows it: an empty list
	}
	return registry.NewMCPPromptList(w.servedPrompts(rows)), nil
}

func (w *Worker) mcpGetPrompt(ctx context.Context, data json.RawMessage) (any, error) {
	in, err := registry.DecodePromptGetInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	if err := registry.ValidateName(in.Name); err != nil {
		return nil, invalidArguments(err)
	}
	args := registry.NormalizePromptArguments(in.Arguments)
	raw, ok, err := w.state.Get(ctx, w.cfg.Scopes.Prompts, in.Name)
	if err != nil {
		return nil, registry.ErrStateGet(sdkError(err))
	}
	if !ok {
		return nil, notFound(registry.ErrPromptNotFound(in.Name))
	}
	prompt, err := registry.DecodeStoredPrompt(raw)
	if err != nil {
		return nil, registry.ErrDecodePrompt(in.Name, err)
	}
	if n := w.hist.prompts.Served(in.Name, w.hist.serveLabel); n > 0 {
		// The serve label pins another version of the definition.
		content, err := w.hist.prompts.Content(in.Name, n)
		if err != nil {
			return nil, err
		}
		if prompt.Description, prompt.FunctionID, prompt.Arguments, err = decodePromptDefinition(content); err != nil {
			return nil, err
		}
	}
	if err := registry.CheckPromptHandler(prompt.FunctionID); err != nil {
		return nil, err // the stored row is at fault, not the caller
	}
	out, err := w.client.Trigger(ctx, triggerRequest(prompt.FunctionID, args, w.cfg.StateTimeout()))
	if err != nil {
		return nil, registry.ErrTrigger(prompt.FunctionID, sdkError(err))
	}
	messages, err := registry.NormalizePromptOutput(out)
	if err != nil {
		return nil, err
	}
	return registry.PromptGetResult{Description: prompt.Description, Messages: messages}, nil
}
