package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/scope"
)

// Ownership: a skill id (and a prompt name) belongs to the connection that
// registered it while that connection lives, or to every connection of the
// same scoped token. Another caller's register or unregister, and any call
// that changes what the id serves or says (label, rollback, yank, unyank,
// deprecate), is refused with CodeForbidden; once the owner is gone (a publisher restarting gets a
// new connection) the next register takes the id over. A scoped token may
// only publish skills and prompts in its namespaces: another id is refused
// with CodeOutOfScope, which never clears up (publishers do not retry it).
//
// Who called is the Caller the surface passes: over iii, what the engine
// stamped on the invocation (package worker decodes it, see
// scope.Stamped); in this process, Operator for a surface that checked the
// operator's credentials. Owners are kept in memory: after a registry
// restart the first register of an id claims it again.

type owner struct{ workerID, token string }

// ownership holds the owner of every published skill id and prompt name.
type ownership struct {
	mu      sync.Mutex
	owners  map[string]owner // key: kind + "\x00" + id
	stamped scope.Stamped
}

// SetCallerStamped tells the registry whether the engine stamps the caller
// into invocation metadata (ours does; the skills binary finds out by
// calling its own probe function with a forged caller): an owner's
// connection is then looked up by id (engine::workers::identity).
func (l *Local) SetCallerStamped(v bool) { l.owners.stamped.Set(v) }

// claim checks that c may register or unregister the kind's id ("skill",
// "prompt") and, on success, records c as its owner (release undoes that
// after an unregister). what names extra ids the registration points at
// (a prompt's handler function), which a scoped token must own too.
func (l *Local) claim(ctx context.Context, kind, id string, c Caller, extra ...string) error {
	return l.own(ctx, kind, id, c, true, extra...)
}

// authorize checks that c may change what id of kind k serves or says
// (label, rollback, yank, unyank, deprecate): as claim, but an id nobody
// holds (or whose owner is gone) stays unowned.
func (l *Local) authorize(ctx context.Context, k Kind, id string, c Caller) error {
	return l.own(ctx, string(k), id, c, false)
}

// own is claim (take: record c as the owner) and authorize.
func (l *Local) own(ctx context.Context, kind, id string, c Caller, take bool, extra ...string) error {
	if c.Token != "" {
		for i, x := range append([]string{id}, extra...) {
			if i == 0 && !c.Covers(kind, x) || i > 0 && !c.CoversFunction(x) {
				what := kind
				if i > 0 {
					what = "function"
				}
				return c.OutOfScopeError(fmt.Sprintf("%s %q is outside the namespaces of token %q (%s)",
					what, x, c.Token, strings.Join(c.Namespaces, ", ")))
			}
		}
	}
	key := kind + "\x00" + id
	if c.Operator {
		// A surface of this process that checked the operator's
		// credentials (the web page, behind its token): any id, and the
		// owner stays who it was.
		return nil
	}
	for {
		l.owners.mu.Lock()
		o, held := l.owners.owners[key]
		if !held || o.workerID == c.WorkerID && c.WorkerID != "" || o.token != "" && o.token == c.Token {
			if take {
				l.owners.set(key, c)
			}
			l.owners.mu.Unlock()
			return nil
		}
		l.owners.mu.Unlock()
		alive, err := l.ownerStillAlive(ctx, o.workerID)
		if err != nil {
			return iii.NewInvocationError(rules.CodeForbidden, fmt.Sprintf(
				"%s %q belongs to another worker (%s) and the engine could not say whether it is still connected: %v; try again",
				kind, id, o.workerID, err))
		}
		if alive {
			return iii.NewInvocationError(rules.CodeForbidden, fmt.Sprintf(
				"%s %q belongs to another worker (%s); only the worker that registered it may register or unregister it while it is connected",
				kind, id, l.holder(ctx, o.workerID)))
		}
		if !take {
			return nil // the owner is gone: anyone may
		}
		// The owner is gone: take the id over, unless it changed hands
		// meanwhile (then look again).
		l.owners.mu.Lock()
		if l.owners.owners[key] == o {
			l.owners.set(key, c)
			l.owners.mu.Unlock()
			l.log.Info("owner of a "+kind+" is gone; the id passes to the new registrant", "id", id,
				"previous_owner", o.workerID, "worker_id", c.WorkerID)
			return nil
		}
		l.owners.mu.Unlock()
	}
}

// set records c as the owner of key; an unknown caller owns nothing.
// Callers hold o.mu.
func (o *ownership) set(key string, c Caller) {
	if c.WorkerID == "" {
		delete(o.owners, key)
		return
	}
	if o.owners == nil {
		o.owners = map[string]owner{}
	}
	o.owners[key] = owner{workerID: c.WorkerID, token: c.Token}
}

// release forgets the owner of an id its owner unregistered.
func (l *Local) release(kind, id string) {
	l.owners.mu.Lock()
	delete(l.owners.owners, kind+"\x00"+id)
	l.owners.mu.Unlock()
}

// workerAlive asks the engine whether a connection is still open: our
// engine answers engine::workers::identity; another engine is asked for
// engine::workers::list (which lists only workers that told their pid).
func (l *Local) workerAlive(ctx context.Context, workerID string) (bool, error) {
	engine := invoke.Caller{Client: l.client, Timeout: 5 * time.Second}
	if l.owners.stamped.Trusted() {
		var id struct {
			Connected bool `json:"connected"`
		}
		if err := engine.Call(ctx, iii.FnWorkerIdentity, map[string]string{"worker_id": workerID}, &id); err != nil {
			return false, err
		}
		return id.Connected, nil
	}
	var list struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	if err := engine.Call(ctx, iii.FnListWorkers, nil, &list); err != nil {
		return false, err
	}
	for _, x := range list.Workers {
		if x.StringID() == workerID {
			return true, nil
		}
	}
	return false, nil
}

// holder names the worker that holds an id for a refusal: its id and, when
// the engine lists it, the name it gave the engine as the web page shows it
// (`3f2a…, named "resend-node"`). Publishers read the holder back from this
// text (docs/publishers.md), so its form is part of the contract.
func (l *Local) holder(ctx context.Context, workerID string) string {
	engine := invoke.Caller{Client: l.client, Timeout: 2 * time.Second}
	var list struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	if err := engine.Call(ctx, iii.FnListWorkers, nil, &list); err != nil {
		return workerID
	}
	for _, x := range list.Workers {
		if name := iii.ShowName(x.StringName()); x.StringID() == workerID && name != "" {
			q, _ := json.Marshal(name)
			return workerID + ", named " + string(q)
		}
	}
	return workerID
}

// DefaultOwnerGrace is how long a contested claim waits for the owner's
// connection to go (Options.OwnerGrace): a publisher that restarts, or
// `skills trigger` run twice in a row, dials again while the engine may
// not yet have seen the old socket close.
const DefaultOwnerGrace = 2 * time.Second

// ownerStillAlive reports whether workerID is still connected after the
// owner grace, asking the engine again every 50 ms; it returns as soon as
// the owner is gone.
func (l *Local) ownerStillAlive(ctx context.Context, workerID string) (bool, error) {
	grace := l.opts.OwnerGrace
	if grace <= 0 {
		grace = DefaultOwnerGrace
	}
	deadline := time.Now().Add(grace)
	for {
		alive, err := l.workerAlive(ctx, workerID)
		if err != nil || !alive || time.Now().After(deadline) {
			return alive, err
		}
		select {
		case <-ctx.Done():
			return true, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PublisherOf says which connection published the kind's ("skill" or
// "prompt") id and under which scoped token ("" for none), as ownership
// recorded it. ok is false when no owner is known: the id is not
// published, the engine named no caller, or the registry restarted since
// (owners live in memory). It is a map read under the ownership lock, cheap
// enough to call once per row of a page.
func (l *Local) PublisherOf(kind, id string) (workerID, token string, ok bool) {
	l.owners.mu.Lock()
	o, ok := l.owners.owners[kind+"\x00"+id]
	l.owners.mu.Unlock()
	return o.workerID, o.token, ok
}
