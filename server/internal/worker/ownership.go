package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/scope"
)

// Ownership: a skill id (and a prompt name) belongs to the connection that
// registered it while that connection lives, or to every connection of the
// same scoped token. Another caller's register or unregister is refused
// with CodeForbidden; once the owner is gone (a publisher restarting gets a
// new connection) the next register takes the id over. A scoped token may
// only publish skills and prompts in its namespaces: another id is refused
// with CodeOutOfScope, which never clears up (publishers do not retry it).
//
// Who called comes from the engine: our engine stamps every invocation's
// metadata with the caller (scope.CallerKey), replacing whatever a client sent
// under that key, and the worker trusts the stamp only when it knows the
// engine is ours (SetCallerStamped; before it knows, a stamp naming a
// scoped token still bounds its caller, see scope.Stamped). Elsewhere it
// falls back to the payload's _caller_worker_id, which the iii engine adds
// to every call: ownership then holds as far as that engine overwrites a
// forged one, and scoped tokens do not exist. Owners are kept in memory: after a registry
// restart the first register of an id claims it again.

// CodeForbidden answers a register or unregister of an id another
// connection owns.
const CodeForbidden = scope.CodeForbidden

// CodeOutOfScope answers a register or unregister of an id outside the
// namespaces of the caller's scoped token.
const CodeOutOfScope = scope.CodeOutOfScope

// caller is who made an invocation. An empty WorkerID is unknown (the
// engine itself, or an engine that names no caller).
type caller = scope.Caller

type owner struct{ workerID, token string }

// ownership holds the owner of every published skill id and prompt name.
type ownership struct {
	mu      sync.Mutex
	owners  map[string]owner // key: kind + "\x00" + id
	stamped scope.Stamped
}

// SetCallerStamped tells the worker whether the engine stamps the caller
// into invocation metadata (ours does; the skills binary finds out by
// calling its own probe function with a forged caller).
func (w *Worker) SetCallerStamped(v bool) { w.own.stamped.Set(v) }

// callerOf reads the caller of the invocation behind ctx.
func (w *Worker) callerOf(ctx context.Context, data json.RawMessage) caller {
	if c, ok := w.own.stamped.Caller(ctx); ok {
		return c
	}
	// Only the key the engine writes, exactly (a map keeps keys as sent,
	// where a struct would also match "_CALLER_WORKER_ID").
	if !bytes.Contains(data, []byte(`_caller_worker_id`)) {
		return caller{}
	}
	var m map[string]json.RawMessage
	var c caller
	if json.Unmarshal(data, &m) == nil && m["_caller_worker_id"] != nil {
		_ = json.Unmarshal(m["_caller_worker_id"], &c.WorkerID)
	}
	return c
}

// claim checks that c may register or unregister the kind's id ("skill",
// "prompt") and, on success, records c as its owner (release undoes that
// after an unregister). what names extra ids the registration points at
// (a prompt's handler function), which a scoped token must own too.
func (w *Worker) claim(ctx context.Context, kind, id string, c caller, extra ...string) error {
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
	if c.WorkerID != "" && c.WorkerID == w.client.WorkerID() {
		// The registry's own connection acts for the operator (the web
		// page's unregister, behind its token): it may remove any id.
		w.own.mu.Lock()
		w.own.set(key, c)
		w.own.mu.Unlock()
		return nil
	}
	for {
		w.own.mu.Lock()
		o, held := w.own.owners[key]
		if !held || o.workerID == c.WorkerID && c.WorkerID != "" || o.token != "" && o.token == c.Token {
			w.own.set(key, c)
			w.own.mu.Unlock()
			return nil
		}
		w.own.mu.Unlock()
		alive, err := w.ownerStillAlive(ctx, o.workerID)
		if err != nil {
			return iii.NewInvocationError(CodeForbidden, fmt.Sprintf(
				"%s %q belongs to another worker (%s) and the engine could not say whether it is still connected: %v; try again",
				kind, id, o.workerID, err))
		}
		if alive {
			return iii.NewInvocationError(CodeForbidden, fmt.Sprintf(
				"%s %q belongs to another worker (%s); only the worker that registered it may register or unregister it while it is connected",
				kind, id, w.holder(ctx, o.workerID)))
		}
		// The owner is gone: take the id over, unless it changed hands
		// meanwhile (then look again).
		w.own.mu.Lock()
		if w.own.owners[key] == o {
			w.own.set(key, c)
			w.own.mu.Unlock()
			w.log.Info("owner of a "+kind+" is gone; the id passes to the new registrant", "id", id,
				"previous_owner", o.workerID, "worker_id", c.WorkerID)
			return nil
		}
		w.own.mu.Unlock()
	}
}

// holder names the worker that holds an id for a refusal: its id and, when
// the engine lists it, the name it gave the engine as the web page shows it
// (`3f2a…, named "resend-node"`). Publishers read the holder back from this
// text (docs/publishers.md), so its form is part of the contract.
func (w *Worker) holder(ctx context.Context, workerID string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := w.client.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.FnListWorkers, Data: json.RawMessage(`{}`)})
	var list struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	if err != nil || json.Unmarshal(out, &list) != nil {
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

// set records c as the owner of key; an unknown caller owns nothing.
// Callers hold o.mu.
func (o *ownership) set(key string, c caller) {
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
func (w *Worker) release(kind, id string) {
	w.own.mu.Lock()
	delete(w.own.owners, kind+"\x00"+id)
	w.own.mu.Unlock()
}

// workerAlive asks the engine whether a connection is still open: our
// engine answers engine::workers::identity; another engine is asked for
// engine::workers::list (which lists only workers that told their pid).
func (w *Worker) workerAlive(ctx context.Context, workerID string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if w.own.stamped.Trusted() {
		data, _ := json.Marshal(map[string]string{"worker_id": workerID})
		out, err := w.client.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.FnWorkerIdentity, Data: data})
		if err != nil {
			return false, err
		}
		var id struct {
			Connected bool `json:"connected"`
		}
		if err := json.Unmarshal(out, &id); err != nil {
			return false, err
		}
		return id.Connected, nil
	}
	out, err := w.client.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.FnListWorkers, Data: json.RawMessage(`{}`)})
	if err != nil {
		return false, err
	}
	var list struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return false, err
	}
	for _, x := range list.Workers {
		if x.StringID() == workerID {
			return true, nil
		}
	}
	return false, nil
}

// ownerGrace is how long a contested claim waits for the owner's
// connection to go: a publisher that restarts, or `skills trigger` run
// twice in a row, dials again while the engine may not yet have seen the
// old socket close.
var ownerGrace = 2 * time.Second

// ownerStillAlive reports whether workerID is still connected after
// ownerGrace, asking the engine again every 50 ms; it returns as soon as
// the owner is gone.
func (w *Worker) ownerStillAlive(ctx context.Context, workerID string) (bool, error) {
	deadline := time.Now().Add(ownerGrace)
	for {
		alive, err := w.workerAlive(ctx, workerID)
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
