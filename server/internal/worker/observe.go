package worker

import (
	"context"
	"encoding/json"
	"sync"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/changefeed"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
	"github.com/iii-skills/skills/server/internal/usage"
)

// ChangeFeed is the ordered feed skills::changes serves (changefeed.Feed).
type ChangeFeed interface {
	Read(ctx context.Context, after int64, limit int) (changefeed.Page, error)
}

// Observe makes every function the worker registers report to o (calls,
// traces, the reads they serve) and serves skills::usage from o's read
// counter and skills::changes from feed (nil: not served). Call it before
// Register.
func (w *Worker) Observe(o *observe.Observer, feed ChangeFeed) {
	w.obs, w.feed = o, feed
}

// readFunctions are the functions whose reads are counted by caller.
var readFunctions = map[string]bool{
	rules.FnSkillFetch: true, rules.FnSkillsFetchSkill: true, rules.FnSkillsResourcesRead: true,
	rules.FnPromptsMCPGet: true, rules.FnCatalogFile: true,
}

// observed wraps the handler of function id: a call counted and traced,
// continuing the invocation's trace context, and for reads the caller
// that reads.
func (w *Worker) observed(id string, h iii.Handler) iii.Handler {
	o := w.obs
	if o == nil {
		return h
	}
	reads := readFunctions[id] && o.Usage() != nil
	return func(ctx context.Context, data json.RawMessage) (any, error) {
		ctx, call := o.Start(ctx, id, surface.III, tracing.FromInvocation(ctx))
		if reads {
			ctx = observe.WithInvocation(ctx, data, w.callerID)
		}
		out, err := h(ctx, data)
		call.End(observe.IIICode(err), err)
		return out, err
	}
}

// Function ids are the ids of the functions the worker registers (for
// metrics.Options.Functions): upstream's 13, ours, and the internal ones.
func FunctionIDs() []string {
	return []string{rules.FnSkillsRegister, rules.FnSkillsUnregister, rules.FnSkillsList, rules.FnSkillsResourcesList,
		rules.FnSkillsResourcesRead, rules.FnSkillsResourcesTemplates, rules.FnSkillsFetchSkill, rules.FnSkillFetch,
		rules.FnPromptsRegister, rules.FnPromptsUnregister, rules.FnPromptsList, rules.FnPromptsMCPList, rules.FnPromptsMCPGet,
		rules.FnSkillsVersions, rules.FnSkillsLabel, rules.FnSkillsRollback, rules.FnSkillsDiff,
		rules.FnPromptsVersions, rules.FnPromptsLabel, rules.FnPromptsRollback, rules.FnPromptsDiff,
		rules.FnSkillsSearch, rules.FnSkillSearch, rules.FnCatalogList, rules.FnCatalogGet, rules.FnCatalogFile,
		rules.FnSkillsUsage, rules.FnSkillsChanges}
}

// callerIDs caches the connection id of an invocation's stamped metadata:
// on an engine that stamps, the metadata of one connection's calls are
// the same bytes, decoded once.
type callerIDs struct {
	mu sync.RWMutex
	m  map[string]string
}

// maxCallerIDs bounds the cache (a new connection, new metadata); past it
// the cache starts again.
const maxCallerIDs = 1024

// callerID is the connection that made the invocation behind ctx (see
// callerOf), for usage counts.
func (w *Worker) callerID(ctx context.Context, data json.RawMessage) string {
	meta, ok := iii.MetadataFromContext(ctx)
	if !ok || !w.stamped.Trusted() {
		return w.callerOf(ctx, data).WorkerID
	}
	c := &w.callers
	c.mu.RLock()
	id, hit := c.m[string(meta)]
	c.mu.RUnlock()
	if hit {
		return id
	}
	id = w.callerOf(ctx, data).WorkerID
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCallerIDs {
		c.m = make(map[string]string)
	}
	c.m[string(meta)] = id
	c.mu.Unlock()
	return id
}

// usageFunctions are skills::usage and skills::changes.
func (w *Worker) usageFunctions() []function {
	fns := []function{{rules.FnSkillsUsage, func(ctx context.Context, data json.RawMessage) (any, error) {
		in, err := core.DecodeUsageInput(rules.FnSkillsUsage, data)
		if err != nil {
			return nil, err
		}
		c := w.obs.Usage()
		if c == nil {
			return nil, iii.NewInvocationError(iii.CodeInvocationFailed,
				rules.FnSkillsUsage+": usage counting is off on this registry (config usage.disabled)")
		}
		rep, err := c.Usage(ctx, usage.Query{ID: in.ID, Since: in.Since, Limit: in.Limit})
		if err != nil {
			return nil, iii.NewInvocationError(iii.CodeInvocationFailed, rules.FnSkillsUsage+": "+err.Error())
		}
		return rep, nil
	}, iii.RegisterFunctionOptions{Description: "Reads per skill and version, summed over every registry instance: " +
		"{id?, since?: \"YYYY-MM-DD\", limit?} → {skills: [{id, version?, reads, by_surface, by_client, last_read_at, days? (with id)}]}, most read first; " +
		"prompt gets are counted under prompt:<name>.",
		RequestFormat: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"since":{"type":"string"},"limit":{"type":"integer","minimum":1}}}`)}}}
	if w.feed != nil {
		fns = append(fns, function{rules.FnSkillsChanges, func(ctx context.Context, data json.RawMessage) (any, error) {
			in, err := core.DecodeChangesInput(rules.FnSkillsChanges, data)
			if err != nil {
				return nil, err
			}
			page, err := w.feed.Read(ctx, in.After, in.Limit)
			if err != nil {
				return nil, iii.NewInvocationError(iii.CodeInvocationFailed, rules.FnSkillsChanges+": "+err.Error())
			}
			return page, nil
		}, iii.RegisterFunctionOptions{Description: "The ordered feed of skill changes (register, version, label, rollback, yank, unregister) " +
			"for clients that poll: {after?: <cursor>, limit?: 1..1000} → {changes: [{cursor, type, id, version?, label?, at, …}], next, truncated?}; " +
			"pass next as after to continue. Cursors mean the same on every registry instance sharing state.",
			RequestFormat: json.RawMessage(`{"type":"object","properties":{"after":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":1000}}}`)}})
	}
	return fns
}
