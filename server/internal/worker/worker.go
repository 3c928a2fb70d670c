package worker

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/scope"
	"github.com/iii-skills/skills/server/internal/surface"
)

// apiJSON is the upstream v0.2.2 API reference (descriptions and JSON Schema
// request/response formats of the 13 functions, descriptions of the two
// trigger types), so engine::functions::list shows the same contracts.
//
//go:embed api.json
var apiJSON []byte

type apiFunction struct {
	ID             string          `json:"id"`
	Description    string          `json:"description"`
	RequestFormat  json.RawMessage `json:"request_format"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

type apiTriggerType struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

type apiReference struct {
	Functions    []apiFunction    `json:"functions"`
	TriggerTypes []apiTriggerType `json:"trigger_types"`
}

// Worker binds a core.Local registry to an iii client: the registry's
// functions and trigger types on the engine, for workers and for surfaces
// in other processes.
type Worker struct {
	client *iii.Client
	reg    *core.Local
	log    *slog.Logger
	// stamped: whether invocation metadata carries a caller the engine
	// stamped (SetCallerStamped).
	stamped scope.Stamped

	skillSubs, promptSubs, catalogSubs *iii.TriggerTypeRef
	unsubscribe                        func()

	// obs, feed and callers: observability (observe.go).
	obs     *observe.Observer
	feed    ChangeFeed
	callers callerIDs
}

// New binds reg to client. Call Register before the client connects
// (registrations are replayed on every reconnect).
func New(client *iii.Client, reg *core.Local, log *slog.Logger) *Worker {
	if log == nil {
		log = slog.Default()
	}
	return &Worker{client: client, reg: reg, log: log, unsubscribe: func() {}}
}

// Registry is the registry the worker serves.
func (w *Worker) Registry() *core.Local { return w.reg }

// SetCallerStamped tells the worker (and the registry) whether the engine
// stamps the caller into invocation metadata: ours does; the skills binary
// finds out by calling its own probe function with a forged caller.
func (w *Worker) SetCallerStamped(v bool) {
	w.stamped.Set(v)
	w.reg.SetCallerStamped(v)
}

// Close stops firing the registry's changes to subscribers.
func (w *Worker) Close() { w.unsubscribe() }

// Register declares the trigger types (skills::on-change,
// prompts::on-change, skills::catalog-on-change), upstream's 13 functions
// in upstream's order, then ours (search, versions, the catalog view),
// the internal subscriptions (state events of the skills scope, changes
// of other registry instances, the engine's function events) on the client.
func (w *Worker) Register() error {
	var api apiReference
	if err := json.Unmarshal(apiJSON, &api); err != nil {
		return fmt.Errorf("embedded api.json: %w", err)
	}
	subs := map[string]**iii.TriggerTypeRef{rules.TriggerSkillsOnChange: &w.skillSubs, rules.TriggerPromptsOnChange: &w.promptSubs}
	// Like upstream, a binding's config is ignored: every subscriber gets
	// every event.
	for _, t := range api.TriggerTypes {
		ref, err := w.client.RegisterTriggerType(t.ID, t.Description, iii.AcceptAll(w.log, t.ID))
		if err != nil {
			return err
		}
		*subs[t.ID] = ref
	}
	handlers := w.upstreamHandlers()
	for _, f := range api.Functions {
		h, ok := handlers[f.ID]
		if !ok {
			return fmt.Errorf("no handler for %s", f.ID)
		}
		if _, err := w.client.RegisterFunction(f.ID, w.observed(f.ID, h), iii.RegisterFunctionOptions{
			Description: f.Description, RequestFormat: f.RequestFormat, ResponseFormat: f.ResponseFormat}); err != nil {
			return err
		}
	}
	ours := append(append(w.searchFunctions(), w.versionFunctions()...), w.catalogFunctions()...)
	if w.obs != nil {
		ours = append(ours, w.usageFunctions()...)
	}
	for _, f := range ours {
		if _, err := w.client.RegisterFunction(f.id, w.observed(f.id, f.handler), f.opts); err != nil {
			return err
		}
	}
	ref, err := w.client.RegisterTriggerType(rules.TriggerCatalogOnChange,
		"Fires {path} each time a skill of the catalog changes (MCP Skills extension view).", iii.AcceptAll(w.log, rules.TriggerCatalogOnChange))
	if err != nil {
		return fmt.Errorf("register %s: %w", rules.TriggerCatalogOnChange, err)
	}
	w.catalogSubs = ref
	if err := w.reg.Cluster().Register(); err != nil {
		return err
	}
	if err := w.reg.FollowFunctions(); err != nil {
		return err
	}
	if err := w.registerStateSync(); err != nil {
		return err
	}
	w.unsubscribe = w.reg.Subscribe(w.fire)
	return nil
}

// fire tells the subscribers of the registry's trigger types of one
// change, fire-and-forget like upstream: failures are logged.
func (w *Worker) fire(c core.Change) {
	ref, payload := w.skillSubs, any(registry.SkillChange{Op: c.Op, ID: c.ID})
	switch c.Kind {
	case core.ChangeHandlers:
		return // no trigger type of iii carries it
	case core.ChangePrompt:
		ref, payload = w.promptSubs, registry.PromptChange{Op: c.Op, Name: c.ID}
	case core.ChangeCatalog:
		ref, payload = w.catalogSubs, map[string]string{"path": c.ID}
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.reg.Config().StateTimeout())
	defer cancel()
	if err := ref.FireJSON(ctx, payload); err != nil {
		w.log.Warn("on-change fan-out failed", "trigger_type", ref.ID(), "err", err)
		return
	}
	w.obs.Notified(surface.III, 1)
}

// registerStateSync binds the engine's `state` trigger of the skills scope
// to an internal function: writes made straight into the scope (an
// operator cleaning up, another registry worker, a test harness) reach the
// registry (core.Local.SyncKey). Its own writes are left out by our engine
// (skip_own_writes); the real engine ignores that key and echoes them,
// and the re-read finds nothing changed.
func (w *Worker) registerStateSync() error {
	_, err := w.client.RegisterFunction(rules.FnCacheSync, func(ctx context.Context, data json.RawMessage) (any, error) {
		var ev struct {
			Scope string `json:"scope"`
			Key   string `json:"key"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("state event: %w", err)
		}
		return nil, w.reg.SyncKey(ctx, ev.Scope, ev.Key)
	}, iii.RegisterFunctionOptions{
		Description: "Internal: keeps the skills registry's in-memory index in step with state events of its scope.",
		Metadata:    iii.InternalMetadata,
	})
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(map[string]any{"scope": w.reg.Config().Scopes.Skills, "skip_own_writes": true})
	if err != nil {
		return err
	}
	return w.client.RegisterTrigger(uuid.NewString(), "state", rules.FnCacheSync, cfg)
}

// callerOf reads the caller of the invocation behind ctx: the engine's
// stamp (scope.Stamped decides how far to trust it), else the payload's
// _caller_worker_id, which the iii engine adds to every call.
func (w *Worker) callerOf(ctx context.Context, data json.RawMessage) core.Caller {
	if c, ok := w.stamped.Caller(ctx); ok {
		return core.Caller{Caller: c}
	}
	// Only the key the engine writes, exactly (a map keeps keys as sent,
	// where a struct would also match "_CALLER_WORKER_ID").
	if !bytes.Contains(data, []byte(`_caller_worker_id`)) {
		return core.Caller{}
	}
	var m map[string]json.RawMessage
	var c core.Caller
	if json.Unmarshal(data, &m) == nil && m["_caller_worker_id"] != nil {
		_ = json.Unmarshal(m["_caller_worker_id"], &c.WorkerID)
	}
	return c
}

// function is one function of ours to register.
type function struct {
	id      string
	handler iii.Handler
	opts    iii.RegisterFunctionOptions
}
