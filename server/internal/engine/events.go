package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// The engine's own trigger types besides state (docs/reference/engine-protocol.md §4.6).
const (
	functionsAvailableType = iii.TriggerFunctionsAvailable
	workersAvailableType   = iii.TriggerWorkersAvailable
	engineWorkerName       = "iii-engine-functions"

	// functionsDebounce coalesces a burst of registrations (a worker
	// replaying its functions after a reconnect) into one event. The real
	// engine polls every 5 s; reacting sooner only helps publishers.
	functionsDebounce = 100 * time.Millisecond
)

// Worker events of engine::workers-available.
const (
	eventWorkerConnected       = "worker_connected"
	eventWorkerDisconnected    = "worker_disconnected"
	eventWorkerMetadataUpdated = "worker_metadata_updated"
)

var (
	schemaEmptyConfig             = json.RawMessage(`{"type":"object","properties":{}}`)
	schemaFunctionsAvailableEvent = json.RawMessage(`{"type":"object","properties":{"event":{"const":"functions_changed"},"functions":{"type":"array","items":{"type":"object","properties":{"function_id":{"type":"string"},"namespace":{"type":"string"},"worker_name":{"type":"string"},"description":{"type":"string"},"metadata":{}},"required":["function_id"]}}},"required":["event","functions"]}`)
	schemaWorkersAvailableEvent   = json.RawMessage(`{"type":"object","properties":{"event":{"type":"string","enum":["worker_connected","worker_disconnected","worker_metadata_updated"]},"worker_id":{"type":"string"}},"required":["event","worker_id"]}`)
	functionsAvailableDescription = "Fires with the current function list whenever the set of registered functions changes"
	workersAvailableDescription   = "Fires when a worker connects, disconnects or updates its metadata"
)

// builtinTriggerTypes returns the trigger types the engine serves itself.
func builtinTriggerTypes() map[string]*triggerType {
	return map[string]*triggerType{
		stateTriggerType: {id: stateTriggerType, description: stateTriggerDescription,
			triggerReq: stateTriggerConfigSchema, callReq: stateTriggerPayloadSchema, workerName: stateWorkerName},
		functionsAvailableType: {id: functionsAvailableType, description: functionsAvailableDescription,
			triggerReq: schemaEmptyConfig, callReq: schemaFunctionsAvailableEvent, workerName: engineWorkerName},
		subscribeTriggerType: {id: subscribeTriggerType, description: subscribeDescription,
			triggerReq: schemaSubscribeConfig, callReq: schemaAny, workerName: pubsubWorkerName},
		workersAvailableType: {id: workersAvailableType, description: workersAvailableDescription,
			triggerReq: schemaEmptyConfig, callReq: schemaWorkersAvailableEvent, workerName: engineWorkerName},
	}
}

// builtinTarget is a binding served by the engine's own provider.
type builtinTarget struct {
	bindingID  string
	functionID string
	metadata   json.RawMessage
	owner      *conn // the binding's registrant: the fire runs as it
}

// builtinTargetsLocked lists the bindings of a built-in type served by the
// engine. Callers hold e.mu.
func (e *Engine) builtinTargetsLocked(typ string) []builtinTarget {
	if e.builtinBinds[typ] == 0 {
		return nil
	}
	var out []builtinTarget
	for _, b := range e.bindings {
		if b.onBuiltin && b.triggerType == typ {
			out = append(out, builtinTarget{bindingID: b.id, functionID: b.functionID, metadata: b.metadata, owner: b.owner})
		}
	}
	return out
}

// fireBuiltin delivers payload to each target through the target
// binding's own FIFO queue: engine-fired triggers wait for each call like
// the real engine, arrive in order per binding, and never hold up the code
// that noticed the event.
func (e *Engine) fireBuiltin(typ string, targets []builtinTarget, payload json.RawMessage) {
	for _, t := range targets {
		e.queues.push(bindingQueue(t.bindingID), job{fn: func() {
			if out := e.invokeAs(e.ctx, t.owner, t.functionID, payload, t.metadata); out.err != nil {
				e.log.Warn("trigger target failed", "trigger_type", typ, "function_id", t.functionID,
					"code", out.err.Code, "message", out.err.Message)
			}
		}})
	}
}

// workersEvent fires engine::workers-available.
func (e *Engine) workersEvent(event, workerID string) {
	e.mu.RLock()
	targets := e.builtinTargetsLocked(workersAvailableType)
	e.mu.RUnlock()
	if len(targets) == 0 {
		return
	}
	e.fireBuiltin(workersAvailableType, targets, mustJSON(map[string]string{"event": event, "worker_id": workerID}))
}

// functionsChanged schedules a check of the function set; a burst of
// changes yields one engine::functions-available event.
func (e *Engine) functionsChanged() {
	e.fnMu.Lock()
	defer e.fnMu.Unlock()
	if e.fnTimer == nil && !e.isClosing() {
		e.fnTimer = time.AfterFunc(functionsDebounce, e.fireFunctionsAvailable)
	}
}

// functionEventEntry is one function in an engine::functions-available
// event: the real engine's FunctionSummary (no schemas, which keeps the
// frame small for the Python client's 1 MiB limit).
type functionEventEntry struct {
	FunctionID  string          `json:"function_id"`
	Namespace   string          `json:"namespace"`
	WorkerName  string          `json:"worker_name"`
	Description string          `json:"description,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// functionEvent returns the engine::functions-available entries (the
// functions engine::functions::list shows by default) and the set of every
// function id, internal ones included (sorted, newline-joined), for change
// detection: like the real engine, which compares a hash of all its
// functions, the event fires when an internal function (a publisher's
// prompt handler or section) comes or goes too.
func (e *Engine) functionEvent() ([]functionEventEntry, string) {
	e.mu.RLock()
	views := e.functionViewsLocked()
	e.mu.RUnlock()
	entries := make([]functionEventEntry, 0, len(views))
	ids := make([]string, 0, len(views))
	for _, v := range views {
		ids = append(ids, v.id)
		if !v.internal {
			entries = append(entries, functionEventEntry{FunctionID: v.id, Namespace: defaultNamespace,
				WorkerName: v.workerName, Description: v.description, Metadata: v.metadata})
		}
	}
	slices.SortFunc(entries, func(x, y functionEventEntry) int { return strings.Compare(x.FunctionID, y.FunctionID) })
	slices.Sort(ids)
	return entries, strings.Join(ids, "\n")
}

// fireFunctionsAvailable reports the function list if its set of ids
// differs from the one reported last.
func (e *Engine) fireFunctionsAvailable() {
	e.fnMu.Lock()
	e.fnTimer = nil
	e.fnMu.Unlock()
	if e.isClosing() {
		return
	}
	entries, set := e.functionEvent()
	e.fnMu.Lock()
	changed := set != e.fnLastSet
	e.fnLastSet = set
	e.fnMu.Unlock()
	if !changed {
		return
	}
	e.mu.RLock()
	targets := e.builtinTargetsLocked(functionsAvailableType)
	e.mu.RUnlock()
	e.fireBuiltin(functionsAvailableType, targets,
		mustJSON(map[string]any{"event": "functions_changed", "functions": entries}))
}
