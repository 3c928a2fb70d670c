package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/registry"
)

func triggerRequest(functionID string, payload json.RawMessage, timeout time.Duration) iii.TriggerRequest {
	return iii.TriggerRequest{FunctionID: functionID, Payload: payload, Timeout: timeout}
}

func (w *Worker) registerPrompt(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		FunctionID  string            `json:"function_id"`
		Arguments   []json.RawMessage `json:"arguments"`
	}
	if err := decodeInput(data, "RegisterPromptInput", &in, "name", "description", "function_id"); err != nil {
		return nil, err
	}
	args, err := decodeArguments(data, in.Arguments)
	if err != nil {
		return nil, err
	}
	if err := registry.ValidatePromptRegistration(in.Name, in.Description, in.FunctionID, args); err != nil {
		return nil, err
	}
	row := registry.NewStoredPrompt(in.Name, in.Description, in.FunctionID, args, time.Now())
	if err := w.state.set(ctx, w.cfg.Scopes.Prompts, in.Name, row); err != nil {
		return nil, sdkError(err)
	}
	w.log.Info("prompt registered", "name", row.Name, "function_id", row.FunctionID)
	w.notify(ctx, w.promptSubs, registry.PromptChange{Op: "register", Name: in.Name})
	return registry.RegisterPromptOutput{Name: row.Name, RegisteredAt: row.RegisteredAt}, nil
}

// decodeArguments decodes the optional "arguments" list. Absent means none;
// an explicit null is refused like serde's Vec does.
func decodeArguments(data json.RawMessage, items []json.RawMessage) ([]registry.PromptArgument, error) {
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(data, &keys)
	if raw, ok := keys["arguments"]; ok && bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, fmt.Errorf("invalid type: null, expected a sequence")
	}
	args := make([]registry.PromptArgument, 0, len(items))
	for _, it := range items {
		a, err := registry.DecodePromptArgument(it)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	return args, nil
}

func (w *Worker) unregisterPrompt(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeInput(data, "UnregisterPromptInput", &in, "name"); err != nil {
		return nil, err
	}
	if err := registry.ValidateName(in.Name); err != nil {
		return nil, err
	}
	old, err := w.state.delete(ctx, w.cfg.Scopes.Prompts, in.Name)
	if err != nil {
		return nil, sdkError(err)
	}
	removed := old != nil
	if removed {
		w.log.Info("prompt unregistered", "name", in.Name)
		w.notify(ctx, w.promptSubs, registry.PromptChange{Op: "unregister", Name: in.Name})
	}
	return registry.UnregisterPromptOutput{Name: in.Name, Removed: removed}, nil
}

// storedPrompts lists the prompts scope; rows that do not decode are dropped.
func (w *Worker) storedPrompts(ctx context.Context) ([]registry.StoredPrompt, error) {
	raw, err := w.state.list(ctx, w.cfg.Scopes.Prompts)
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

func (w *Worker) listPrompts(ctx context.Context, data json.RawMessage) (any, error) {
	if err := decodeInput(data, "ListPromptsInput", &struct{}{}); err != nil {
		return nil, err
	}
	rows, err := w.storedPrompts(ctx)
	if err != nil {
		return nil, err
	}
	return registry.NewPromptList(rows), nil
}

func (w *Worker) mcpListPrompts(ctx context.Context, data json.RawMessage) (any, error) {
	if err := decodeInput(data, "EmptyInput", &struct{}{}); err != nil {
		return nil, err
	}
	rows, err := w.storedPrompts(ctx)
	if err != nil {
		w.log.Warn("prompts::mcp-list: listing prompts failed", "err", err)
		rows = nil // upstream swallows it: an empty list
	}
	return registry.NewMCPPromptList(rows), nil
}

func (w *Worker) mcpGetPrompt(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeInput(data, "PromptGetInput", &in, "name"); err != nil {
		return nil, err
	}
	if err := registry.ValidateName(in.Name); err != nil {
		return nil, err
	}
	args := registry.NormalizePromptArguments(in.Arguments)
	raw, err := w.state.get(ctx, w.cfg.Scopes.Prompts, in.Name)
	if err != nil {
		return nil, registry.ErrStateGet(sdkError(err))
	}
	if raw == nil {
		return nil, registry.ErrPromptNotFound(in.Name)
	}
	prompt, err := registry.DecodeStoredPrompt(raw)
	if err != nil {
		return nil, registry.ErrDecodePrompt(in.Name, err)
	}
	if err := registry.CheckPromptHandler(prompt.FunctionID); err != nil {
		return nil, err
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
