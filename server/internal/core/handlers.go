package core

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/reach"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Prompt handlers and section functions belong to publishers, and live on
// the engine each publisher is connected to. The registry follows which
// of them it can reach (package reach): its own engine, the engine across
// that engine's iii-bridge worker and, on shared state, which node's
// engine holds each.

// nodesScope holds each node's row of functions its engine holds (package
// reach), on state other registry instances share.
func nodesScope(s Scopes) string { return s.Skills + ".nodes" }

// nodeName names this registry instance to the others: the host name and
// the engine URL it dials (two nodes may run on one host). The name is
// stored in shared state and shown in errors to any caller, so the URL
// goes without user information, query or fragment.
func nodeName(engineURL string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	if engineURL == "" {
		return host
	}
	if u, err := url.Parse(engineURL); err == nil {
		u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
		engineURL = u.String()
	} else {
		engineURL = "an engine URL that does not parse"
	}
	return host + " (" + engineURL + ")"
}

func (l *Local) reachOptions() reach.Options {
	o := reach.Options{Node: nodeName(l.opts.EngineURL), Timeout: l.cfg.StateTimeout(), Logger: l.log,
		OnChange: func() { l.changes.publish(Change{Kind: ChangeHandlers}) }}
	if l.state.Shared() {
		// Several engines: handlers may be on another node's, reached
		// through this engine's iii-bridge worker when it runs one.
		scope := nodesScope(l.cfg.Scopes)
		o.Shared, o.Scope, o.UseBridge = l.state, scope, true
		o.Announce = func(ctx context.Context, key string) { l.cl.Announce(ctx, scope, cluster.OpSet, key) }
	}
	return o
}

// FollowFunctions binds the registry to the engine's function events
// (engine::functions-available), so it learns at once when a prompt
// handler or section function comes or goes. Call it before the client
// connects; without it the registry still looks at every connect and
// every reach.DefaultBackstop.
func (l *Local) FollowFunctions() error { return l.reach.Register() }

// PromptHandler says whether a registered prompt can be rendered now.
type PromptHandler struct {
	// FunctionID is the prompt's handler (of the served definition).
	FunctionID string
	// Available: the registry reaches the handler, on its engine or
	// through that engine's iii-bridge, or cannot tell yet (it has not
	// listed its engine's functions since it started).
	Available bool
	// Bridged: the handler is reached through the engine's iii-bridge
	// (another node's engine).
	Bridged bool
	// Problem says why the prompt cannot render (Available false): where
	// its handler is, and what is missing to reach it.
	Problem string
}

// PromptHandlers implements Registry: for every registered prompt (the
// definition served), where its handler is, from the sets the registry
// follows (no engine round trip per prompt).
func (l *Local) PromptHandlers(ctx context.Context) (map[string]PromptHandler, error) {
	rows, err := l.storedPrompts(ctx)
	if err != nil {
		return nil, answer(err)
	}
	out := make(map[string]PromptHandler, len(rows))
	for _, p := range l.servedPrompts(rows) {
		out[p.Name] = l.promptHandler(p.FunctionID)
	}
	return out, nil
}

func (l *Local) promptHandler(functionID string) PromptHandler {
	h := PromptHandler{FunctionID: functionID}
	if err := registry.CheckPromptHandler(functionID); err != nil {
		h.Problem = err.Error()
		return h
	}
	p := l.reach.Where(functionID)
	h.Available, h.Bridged = p.Reachable(), p.Known && !p.Local && p.Bridge
	if !h.Available {
		h.Problem = fmt.Sprintf("its handler %s is not registered on this registry's engine", functionID)
		if why := l.reach.Explain(functionID); why != "" {
			h.Problem += "; " + why
		} else {
			h.Problem += ": its publisher is not connected (it registers it again when it reconnects)"
		}
	}
	return h
}
