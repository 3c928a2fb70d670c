package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// builtin is a function served in-process. call gets the calling
// connection (nil for engine-originated calls) and returns the result
// (nil = no "result" key) or an error body.
type builtin struct {
	id          string
	description string
	request     json.RawMessage // JSON Schema of the input
	response    json.RawMessage // JSON Schema of the result
	// call serves built-ins that only touch memory; they run inline on
	// the caller's read loop. async serves durable writes: it returns at
	// once and calls done when the write is committed, so neither the read
	// loop nor a goroutine waits for the fsync. Exactly one is set.
	async func(c *conn, data json.RawMessage, done asyncDone)
	call  func(ctx context.Context, c *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody)
}

// asyncDone receives an asynchronous built-in's outcome.
type asyncDone func(result json.RawMessage, err *wire.ErrorBody)

// The engine::* built-ins answer NOT_FOUND and INVALID_ARGUMENTS, the
// registry's codes of the same verdicts (docs/reference/engine-protocol.md §3.3).
const (
	defaultNamespace   = "default"
	maxInfoBatch       = 32
	maxWorkerTextRunes = 280
)

func (e *Engine) newBuiltins() map[string]*builtin {
	list := []*builtin{
		{id: iii.FnRegisterWorker, description: "Attach metadata (name, runtime, version, os, pid, …) to the calling worker connection",
			request: schemaWorkersRegister, response: schemaSuccess, call: e.workersRegister},
		{id: iii.FnListWorkers, description: "List connected workers that registered a pid",
			request: schemaWorkersListInput, response: schemaWorkersList, call: e.workersList},
		{id: iii.FnWorkerIdentity, description: "The calling connection's identity (worker_id, scoped token name and namespaces), or with worker_id whether that connection is alive and which token it holds",
			request: schemaWorkersIdentityInput, response: schemaWorkersIdentity, call: e.workersIdentity},
		{id: iii.FnListFunctions, description: "List registered functions with their request and response formats",
			request: schemaFunctionsListInput, response: schemaFunctionsList, call: e.functionsList},
		{id: iii.FnInfoFunctions, description: "Describe one function (function_id) or up to 32 (function_ids)",
			request: schemaFunctionsInfoInput, response: schemaFunctionDetail, call: e.functionsInfo},
		{id: iii.FnListTriggers, description: "List registered trigger types",
			request: schemaTriggersListInput, response: schemaTriggersList, call: e.triggersList},
		{id: iii.FnInfoTriggers, description: "Describe one trigger type",
			request: schemaTriggersInfoInput, response: schemaTriggerTypeDetail, call: e.triggersInfo},
		{id: iii.FnListRegisteredTriggers, description: "List trigger bindings (registered triggers)",
			request: schemaRegisteredTriggersListInput, response: schemaRegisteredTriggersList, call: e.registeredTriggersList},
	}
	list = append(list, e.stateBuiltins()...)
	list = append(list, e.pubsubBuiltins()...)
	m := make(map[string]*builtin, len(list))
	for _, b := range list {
		m[b.id] = b
	}
	return m
}

// firstSegment is the service part of a "service::name" id.
func firstSegment(id string) string {
	if i := strings.Index(id, "::"); i >= 0 {
		return id[:i]
	}
	return id
}

// sanitizeWorkerText strips control and bidi-override characters, caps the
// length and trims, as the real engine does for worker names/descriptions.
func sanitizeWorkerText(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || isBidiControl(r) {
			continue
		}
		if n == maxWorkerTextRunes {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

func isBidiControl(r rune) bool {
	return r == 0x061C || r == 0x200E || r == 0x200F || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// nullToNil turns an explicit JSON null into "absent".
func nullToNil(v json.RawMessage) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(v), jsonNull) {
		return nil
	}
	return v
}

// ---- engine::workers::register / list ----

func (e *Engine) workersRegister(_ context.Context, c *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	const fn = iii.FnRegisterWorker
	if c == nil {
		return nil, &wire.ErrorBody{Code: rules.CodeInvalidArguments, Message: fn + " must be called by a worker connection"}
	}
	a, errb := parseArgs(fn, data, false, `{"name":"host:pid","runtime":"go","pid":123}`)
	if errb != nil {
		return nil, errb
	}
	info := &workerInfo{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"name", &info.Name}, {"description", &info.Description}, {"runtime", &info.Runtime},
		{"version", &info.Version}, {"os", &info.OS}, {"isolation", &info.Isolation}} {
		v, errb := a.optStr(f.name)
		if errb != nil {
			return nil, errb
		}
		*f.dst = v
	}
	info.Name = sanitizeWorkerText(info.Name)
	info.Description = sanitizeWorkerText(info.Description)
	if info.Runtime == "" {
		info.Runtime = "unknown"
	}
	var pid uint32
	if ok, errb := a.into("pid", "a non-negative integer", &pid); errb != nil {
		return nil, errb
	} else if ok {
		info.PID = &pid
	}
	var t workerTelemtry
	if ok, errb := a.into("telemetry", "an object {language?, project_name?, framework?}", &t); errb != nil {
		return nil, errb
	} else if ok {
		info.Telemetry = &t
	}
	e.mu.Lock()
	refused := e.nameReservedLocked(c, info.Name)
	if refused != "" {
		info.Name = ""
	}
	first := c.info == nil
	c.info = info
	e.mu.Unlock()
	if refused != "" {
		e.log.Warn("worker name refused: "+refused, "worker_id", c.id, "remote", c.remoteIP)
		e.workersEvent(eventWorkerMetadataUpdated, c.id)
		return nil, &wire.ErrorBody{Code: rules.CodeForbidden, Message: fn + ": " + refused}
	}
	if first {
		// One line per publisher that joins; its functions are at debug.
		e.log.Info("worker joined", "name", info.Name, "runtime", info.Runtime, "version", info.Version, "worker_id", c.id)
	}
	e.workersEvent(eventWorkerMetadataUpdated, c.id)
	return json.RawMessage(`{"success":true}`), nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rawString and rawOptional encode the raw fields of iii.WorkerInfo; an
// empty optional text is null.
func rawString(s string) json.RawMessage { return mustJSON(s) }

func rawOptional(s string) json.RawMessage {
	if s == "" {
		return jsonNull
	}
	return mustJSON(s)
}

func rawInt(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }

func (e *Engine) workersList(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	in, errb := parseListInput(iii.FnListWorkers, data, `{"search":"skills"}`, false, "search", "runtime", "status")
	if errb != nil {
		return nil, errb
	}
	search, runtime, status := in.filters[0], in.filters[1], in.filters[2]

	e.mu.RLock()
	counts := make(map[*conn]int)
	for _, f := range e.functions {
		counts[f.owner]++
	}
	const connected = "connected" // the status of every listed worker
	type row struct {
		id, name string // the sort keys, which info holds encoded
		info     iii.WorkerInfo
	}
	var rows []row
	for _, c := range e.conns {
		if c.info == nil || c.info.PID == nil {
			continue // like the real engine: connections without pid are hidden
		}
		in := c.info
		if (search != "" && !strings.Contains(strings.ToLower(in.Name), search)) ||
			(runtime != "" && in.Runtime != runtime) || (status != "" && connected != status) {
			continue
		}
		name := in.Name
		rows = append(rows, row{id: c.id, name: name, info: iii.WorkerInfo{
			ID: rawString(c.id), Name: &name, Description: optional(in.Description), Runtime: in.Runtime,
			Version: rawOptional(in.Version), OS: rawOptional(in.OS), PID: *in.PID, Status: connected,
			FunctionCount: rawInt(int64(counts[c])), ConnectedAtMs: rawInt(c.connectedAt.UnixMilli()),
			ActiveInvocations: rawInt(c.active.Load()), Namespace: defaultNamespace,
			Isolation: rawOptional(in.Isolation), IPAddress: rawString(c.remoteIP),
		}})
	}
	e.mu.RUnlock()
	slices.SortFunc(rows, func(x, y row) int {
		if c := strings.Compare(x.name, y.name); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	workers := make([]iii.WorkerInfo, len(rows))
	for i, r := range rows {
		workers[i] = r.info
	}
	return mustJSON(map[string]any{"workers": workers}), nil
}

// ---- engine::functions::list / info ----

// fnView is a function as the introspection built-ins show it.
type fnView struct {
	id          string
	description string
	request     json.RawMessage
	response    json.RawMessage
	metadata    json.RawMessage
	workerName  string
	internal    bool
}

// functionViewsLocked merges worker functions and built-ins (a worker
// registration shadows a built-in of the same id). Callers hold e.mu.
func (e *Engine) functionViewsLocked() map[string]fnView {
	out := make(map[string]fnView, len(e.functions)+len(e.builtins))
	for id, b := range e.builtins {
		out[id] = fnView{id: id, description: b.description, request: b.request, response: b.response,
			workerName: firstSegment(id), internal: isEngineInternal(id)}
	}
	for id, f := range e.functions {
		wn := f.owner.name()
		if wn == "" {
			wn = firstSegment(id)
		}
		out[id] = fnView{id: id, description: f.description, request: f.requestFormat, response: f.responseFormat,
			metadata: f.metadata, workerName: wn, internal: isEngineInternal(id) || iii.MetadataInternal(f.metadata)}
	}
	return out
}

// isEngineInternal: engine::* ids are hidden by default, except the queue API.
func isEngineInternal(id string) bool {
	return strings.HasPrefix(id, "engine::") && !strings.HasPrefix(id, "engine::queue::")
}

func (e *Engine) functionsList(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	in, errb := parseListInput(iii.FnListFunctions, data, `{"prefix":"skills::"}`, true, "search", "prefix", "worker")
	if errb != nil {
		return nil, errb
	}
	search, prefix, worker, includeInternal := in.filters[0], in.filters[1], in.filters[2], in.includeInternal
	workers, haveWorkers, errb := in.optStrings("workers")
	if errb != nil {
		return nil, errb
	}

	e.mu.RLock()
	views := e.functionViewsLocked()
	e.mu.RUnlock()
	out := []iii.FunctionInfo{}
	for _, v := range views {
		switch {
		case v.internal && !includeInternal,
			prefix != "" && !strings.HasPrefix(v.id, prefix),
			worker != "" && v.workerName != worker,
			haveWorkers && !slices.Contains(workers, v.workerName),
			search != "" && !strings.Contains(strings.ToLower(v.id), search) &&
				!strings.Contains(strings.ToLower(v.description), search):
			continue
		}
		out = append(out, iii.FunctionInfo{FunctionID: v.id, Namespace: defaultNamespace, WorkerName: v.workerName,
			Description: v.description, RequestFormat: v.request, ResponseFormat: v.response, Metadata: v.metadata})
	}
	slices.SortFunc(out, func(x, y iii.FunctionInfo) int { return strings.Compare(x.FunctionID, y.FunctionID) })
	return mustJSON(map[string]any{"functions": out}), nil
}

func (e *Engine) functionsInfo(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	const fn = iii.FnInfoFunctions
	a, errb := parseArgs(fn, data, true, `{"function_id":"`+iii.FnListWorkers+`"}`)
	if errb != nil {
		return nil, errb
	}
	_, single := a.raw("function_id")
	ids, batch, errb := a.optStrings("function_ids")
	if errb != nil {
		return nil, errb
	}
	if single == batch {
		return nil, &wire.ErrorBody{Code: rules.CodeInvalidArguments,
			Message: fn + ": provide exactly one of `function_id` (string) or `function_ids` (array of strings)"}
	}
	var id string
	if single {
		if id, errb = a.str("function_id"); errb != nil {
			return nil, errb
		}
	} else {
		ids = dedupe(ids)
		if len(ids) == 0 || len(ids) > maxInfoBatch {
			return nil, &wire.ErrorBody{Code: rules.CodeInvalidArguments,
				Message: fmt.Sprintf("%s: `function_ids` must hold 1 to %d ids, got %d", fn, maxInfoBatch, len(ids))}
		}
	}

	e.mu.RLock()
	views := e.functionViewsLocked()
	detail := func(id string) (iii.FunctionDetail, bool) {
		v, ok := views[id]
		if !ok {
			return iii.FunctionDetail{}, false
		}
		d := iii.FunctionDetail{FunctionID: id, Namespace: defaultNamespace, WorkerName: v.workerName,
			Description: v.description, RequestSchema: nullToNil(v.request), ResponseSchema: nullToNil(v.response),
			Metadata: v.metadata, RegisteredTriggers: []iii.BoundTrigger{}}
		for _, b := range e.bindings {
			if b.functionID == id {
				d.RegisteredTriggers = append(d.RegisteredTriggers, iii.BoundTrigger{ID: b.id, TriggerType: b.triggerType, Config: configOrEmpty(b.config)})
			}
		}
		slices.SortFunc(d.RegisteredTriggers, func(x, y iii.BoundTrigger) int { return strings.Compare(x.ID, y.ID) })
		return d, true
	}
	defer e.mu.RUnlock()
	if single {
		d, ok := detail(id)
		if !ok {
			return nil, &wire.ErrorBody{Code: rules.CodeNotFound, Message: fmt.Sprintf("Function %s not found", id)}
		}
		return mustJSON(d), nil
	}
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		if d, ok := detail(id); ok {
			out = append(out, d)
		} else {
			out = append(out, map[string]string{"function_id": id, "error": "not_found"})
		}
	}
	return mustJSON(map[string]any{"functions": out}), nil
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func configOrEmpty(c json.RawMessage) json.RawMessage {
	if len(c) == 0 {
		return emptyObject
	}
	return c
}

// ---- engine::triggers::list / info, engine::registered-triggers::list ----

// typeWorkerNameLocked names the worker providing tt. Callers hold e.mu.
func typeWorkerNameLocked(tt *triggerType) string {
	if tt.provider == nil {
		return tt.workerName
	}
	if n := tt.provider.name(); n != "" {
		return n
	}
	return firstSegment(tt.id)
}

func (e *Engine) triggersList(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	in, errb := parseListInput(iii.FnListTriggers, data, `{"prefix":"skills::"}`, true, "search", "prefix", "worker")
	if errb != nil {
		return nil, errb
	}
	search, prefix, worker, includeInternal := in.filters[0], in.filters[1], in.filters[2], in.includeInternal
	out := []iii.TriggerTypeInfo{}
	e.mu.RLock()
	for _, tt := range e.triggerTypes {
		s := iii.TriggerTypeInfo{ID: tt.id, Namespace: defaultNamespace, WorkerName: typeWorkerNameLocked(tt), Description: tt.description}
		switch {
		case !includeInternal && strings.HasPrefix(tt.id, "engine::"),
			prefix != "" && !strings.HasPrefix(tt.id, prefix),
			worker != "" && s.WorkerName != worker,
			search != "" && !strings.Contains(strings.ToLower(tt.id), search) &&
				!strings.Contains(strings.ToLower(tt.description), search):
			continue
		}
		out = append(out, s)
	}
	e.mu.RUnlock()
	slices.SortFunc(out, func(x, y iii.TriggerTypeInfo) int { return strings.Compare(x.ID, y.ID) })
	return mustJSON(map[string]any{"triggers": out}), nil
}

func (e *Engine) triggersInfo(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	a, errb := parseArgs(iii.FnInfoTriggers, data, true, `{"id":"`+iii.TriggerFunctionsAvailable+`"}`)
	if errb != nil {
		return nil, errb
	}
	id, errb := a.str("id")
	if errb != nil {
		return nil, errb
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	tt := e.triggerTypes[id]
	if tt == nil {
		return nil, &wire.ErrorBody{Code: rules.CodeNotFound, Message: fmt.Sprintf("Trigger type %s not found", id)}
	}
	provider := "" // the engine's own type
	if tt.provider != nil {
		provider = tt.provider.id
	}
	d := iii.TriggerTypeDetail{TriggerTypeInfo: iii.TriggerTypeInfo{ID: tt.id, Namespace: defaultNamespace,
		WorkerName: typeWorkerNameLocked(tt), Description: tt.description,
		ConfigurationSchema: nullToNil(tt.triggerReq), RequestSchema: nullToNil(tt.callReq)},
		ProviderWorkerID: &provider}
	for _, b := range e.bindings {
		if b.triggerType == id {
			d.InstanceCount++
		}
	}
	return mustJSON(d), nil
}

func (e *Engine) registeredTriggersList(_ context.Context, _ *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	in, errb := parseListInput(iii.FnListRegisteredTriggers, data, `{"trigger_type":"state"}`, true,
		"search", "trigger_type", "function_id", "worker")
	if errb != nil {
		return nil, errb
	}
	search, triggerType, functionID, worker := in.filters[0], in.filters[1], in.filters[2], in.filters[3]
	includeInternal := in.includeInternal
	out := []iii.TriggerInfo{}
	e.mu.RLock()
	for _, b := range e.bindings {
		wn := b.owner.name()
		if wn == "" {
			wn = firstSegment(b.functionID)
		}
		switch {
		case !includeInternal && (strings.HasPrefix(b.triggerType, "engine::") || isEngineInternal(b.functionID)),
			triggerType != "" && b.triggerType != triggerType,
			functionID != "" && b.functionID != functionID,
			worker != "" && wn != worker,
			search != "" && !strings.Contains(strings.ToLower(b.id+" "+b.triggerType+" "+b.functionID), search):
			continue
		}
		cfg := configOrEmpty(b.config)
		out = append(out, iii.TriggerInfo{ID: b.id, TriggerType: b.triggerType, FunctionID: b.functionID,
			WorkerName: wn, Config: cfg, ConfigSummary: summarize(cfg)})
	}
	e.mu.RUnlock()
	slices.SortFunc(out, func(x, y iii.TriggerInfo) int { return strings.Compare(x.ID, y.ID) })
	return mustJSON(map[string]any{"registered_triggers": out}), nil
}

// summarize renders a config as compact one-line JSON of at most 120 runes.
func summarize(cfg json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, cfg); err != nil {
		return string(cfg)
	}
	s := buf.String()
	if utf8.RuneCountInString(s) <= 120 {
		return s
	}
	r := []rune(s)
	return string(r[:119]) + "…"
}
