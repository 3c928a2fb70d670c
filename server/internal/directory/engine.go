package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
)

// Engine ids the wrappers read. v0.5 read trigger types from
// engine::trigger-types::list; the engine this project embeds (and the
// current iii engine) lists types with engine::triggers::list and
// instances with engine::registered-triggers::list, so those are read.
const (
	engFunctions  = iii.FnListFunctions
	engWorkers    = iii.FnListWorkers
	engTypes      = iii.FnListTriggers
	engRegistered = iii.FnListRegisteredTriggers
)

// engType is a row of the engine's trigger types with the one schema name
// iii.TriggerTypeInfo does not hold: return_schema, which upstream read
// from engine::trigger-types::list (v0.5), for an engine that still sends it.
type engType struct {
	iii.TriggerTypeInfo
	ReturnSchema json.RawMessage `json:"return_schema"`
}

// engineList triggers an engine list function and decodes key; a list
// that fails to decode is empty, a failed call is "<id>: <error>".
func engineList[T any](ctx context.Context, c *iii.Client, id string, payload any, key string) ([]T, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf(fmtEngineList, id, err)
	}
	out, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: id, Data: data})
	if err != nil {
		return nil, fmt.Errorf(fmtEngineList, id, iii.RustDisplay(err))
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(out, &env) != nil {
		return nil, nil
	}
	var list []T
	if json.Unmarshal(env[key], &list) != nil {
		return nil, nil
	}
	return list, nil
}

func firstSegment(id string) string {
	s, _, _ := strings.Cut(id, "::")
	return s
}

func containsFold(s, sub string) bool {
	return sub == "" || strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

type listFilter struct {
	Search      string `json:"search"`
	Prefix      string `json:"prefix"`
	Worker      string `json:"worker"`
	Runtime     string `json:"runtime"`
	Status      string `json:"status"`
	TriggerType string `json:"trigger_type"`
	FunctionID  string `json:"function_id"`
}

// listing is the shape the four engine list functions share: decode the
// filter (input is upstream's struct name, for its errors), read the
// engine's list, keep the rows row accepts, sorted by sortKey (nil: in the
// order read), answered as {<key>: rows}.
func listing[E, R any](ctx context.Context, data json.RawMessage, input, key string,
	read func(context.Context) ([]E, error), row func(listFilter, E) (R, bool), sortKey func(R) string) (any, error) {
	var in listFilter
	if err := decode(data, input, &in); err != nil {
		return nil, err
	}
	list, err := read(ctx)
	if err != nil {
		return nil, err
	}
	rows := []R{}
	for _, e := range list {
		if r, ok := row(in, e); ok {
			rows = append(rows, r)
		}
	}
	if sortKey != nil {
		slices.SortFunc(rows, func(a, b R) int { return strings.Compare(sortKey(a), sortKey(b)) })
	}
	return map[string]any{key: rows}, nil
}

// lookup is the shape the four engine info functions share: the key the
// request names, trimmed, must be non-empty (else upstream's empty
// message, INVALID_ARGUMENTS) and be the key of one element of the
// engine's list (else upstream's missing message with the key, NOT_FOUND).
type lookup[E any] struct {
	empty   string // "id must be non-empty"
	missing string // "trigger type not found: %s"
	read    func(context.Context) ([]E, error)
	key     func(E) string
}

// find returns the element named by requested, and the trimmed key.
func (l lookup[E]) find(ctx context.Context, requested string) (E, string, error) {
	var zero E
	key := strings.TrimSpace(requested)
	if key == "" {
		return zero, "", invalidArguments(errors.New(l.empty))
	}
	list, err := l.read(ctx)
	if err != nil {
		return zero, key, err
	}
	i := slices.IndexFunc(list, func(e E) bool { return l.key(e) == key })
	if i < 0 {
		return zero, key, notFound(fmt.Errorf(l.missing, key))
	}
	return list[i], key, nil
}

// workerOf attributes a function: the worker whose functions list holds
// it (the engine's worker_name), failing that the id's first segment.
func workerOf(f iii.FunctionInfo) string {
	if f.WorkerName != "" {
		return f.WorkerName
	}
	return firstSegment(f.FunctionID)
}

func (d *Directory) functions(ctx context.Context) ([]iii.FunctionInfo, error) {
	return engineList[iii.FunctionInfo](ctx, d.client, engFunctions, map[string]any{"include_internal": true}, "functions")
}

// functionLookup finds a function by id.
func (d *Directory) functionLookup() lookup[iii.FunctionInfo] {
	return lookup[iii.FunctionInfo]{empty: msgFunctionID, missing: fmtFunctionMissing, read: d.functions,
		key: func(f iii.FunctionInfo) string { return f.FunctionID }}
}

type functionRow struct {
	FunctionID  string `json:"function_id"`
	WorkerName  string `json:"worker_name"`
	Description string `json:"description"`
}

func (d *Directory) functionsList(ctx context.Context, data json.RawMessage) (any, error) {
	return listing(ctx, data, "FunctionsListInput", "functions", d.functions,
		func(in listFilter, f iii.FunctionInfo) (functionRow, bool) {
			w := workerOf(f)
			keep := (containsFold(f.FunctionID, in.Search) || containsFold(f.Description, in.Search)) &&
				strings.HasPrefix(f.FunctionID, in.Prefix) && (in.Worker == "" || w == in.Worker)
			return functionRow{f.FunctionID, w, f.Description}, keep
		},
		func(r functionRow) string { return r.FunctionID })
}

type functionInfo struct {
	FunctionID         string             `json:"function_id"`
	WorkerName         string             `json:"worker_name"`
	Description        string             `json:"description"`
	RequestSchema      json.RawMessage    `json:"request_schema"`
	ResponseSchema     json.RawMessage    `json:"response_schema"`
	Metadata           json.RawMessage    `json:"metadata"`
	RegisteredTriggers []iii.BoundTrigger `json:"registered_triggers"`
	HowGuide           *howGuide          `json:"how_guide,omitempty"`
	RelatedSkills      []relatedSkill     `json:"related_skills"`
}

type howGuide struct {
	Title   string `json:"title"`
	SkillID string `json:"skill_id"`
	Body    string `json:"body"`
}

type relatedSkill struct {
	Title   string `json:"title"`
	SkillID string `json:"skill_id"`
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// functionInfo details the function id (how_guide and related_skills
// with withHowTo).
func (d *Directory) functionInfo(ctx context.Context, id string, withHowTo bool) (*functionInfo, error) {
	f, id, err := d.functionLookup().find(ctx, id)
	if err != nil {
		return nil, err
	}
	regs, err := engineList[iii.TriggerInfo](ctx, d.client, engRegistered, map[string]any{"include_internal": true, "function_id": id}, "registered_triggers")
	if err != nil {
		return nil, err
	}
	info := &functionInfo{FunctionID: f.FunctionID, WorkerName: workerOf(f), Description: f.Description,
		RequestSchema: orNull(f.RequestFormat), ResponseSchema: orNull(f.ResponseFormat), Metadata: orNull(f.Metadata),
		RegisteredTriggers: []iii.BoundTrigger{}, RelatedSkills: []relatedSkill{}}
	for _, r := range regs {
		if r.FunctionID == id {
			info.RegisteredTriggers = append(info.RegisteredTriggers, iii.BoundTrigger{ID: r.ID, TriggerType: r.TriggerType, Config: orNull(r.Config)})
		}
	}
	if withHowTo {
		info.HowGuide, info.RelatedSkills = d.howTo(id)
	}
	return info, nil
}

func (d *Directory) functionsInfo(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		FunctionID string `json:"function_id"`
	}
	if err := decode(data, "FunctionInfoInput", &in); err != nil {
		return nil, err
	}
	return d.functionInfo(ctx, in.FunctionID, true)
}

// howTo finds the how-to guide and the related skills of a function among
// the folder skills (docs/reference/directory.md §1.5): frontmatter `type: how-to` with
// `functions: [...]` or `function_id:` naming it, else a body linking
// iii://fn/<path>; related skills name it in frontmatter or mention the
// fn URI or the literal id in their body.
func (d *Directory) howTo(id string) (*howGuide, []relatedSkill) {
	fnURI := "iii://fn/" + strings.ReplaceAll(id, "::", "/")
	type cand struct {
		e      *catalog.Entry
		body   string
		named  bool
		howTo  bool
		linked bool
		lit    bool
	}
	var cands []cand
	for _, e := range d.skills() {
		body, err := e.Body.String()
		if err != nil {
			continue
		}
		fm := e.Frontmatter.Fields
		named := false
		if v, ok := fm.String("function_id"); ok && v == id {
			named = true
		}
		if v, ok := fm.Get("functions"); ok {
			if list, ok := v.([]any); ok && slices.ContainsFunc(list, func(x any) bool { s, _ := x.(string); return s == id }) {
				named = true
			}
		}
		t, _ := fm.String("type")
		cands = append(cands, cand{e: e, body: body, named: named, howTo: t == "how-to",
			linked: strings.Contains(body, fnURI), lit: strings.Contains(body, id)})
	}
	title := func(c cand) string {
		if t, ok := c.e.Frontmatter.Fields.String("title"); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t)
		}
		return c.e.DisplayTitle()
	}
	var guide *howGuide
	pick := func(ok func(cand) bool) {
		for _, c := range cands { // sorted by id: the lowest wins
			if guide == nil && c.howTo && ok(c) {
				guide = &howGuide{Title: title(c), SkillID: c.e.ID, Body: strings.Trim(c.body, "\n")}
			}
		}
	}
	pick(func(c cand) bool { return c.named })
	pick(func(c cand) bool { return c.linked })
	related := []relatedSkill{}
	for _, c := range cands {
		if (guide != nil && c.e.ID == guide.SkillID) || !(c.named || c.linked || c.lit) {
			continue
		}
		related = append(related, relatedSkill{Title: title(c), SkillID: c.e.ID})
	}
	return guide, related
}

type typeRow struct {
	ID          string `json:"id"`
	WorkerName  string `json:"worker_name"`
	Description string `json:"description"`
}

func (d *Directory) types(ctx context.Context) ([]engType, error) {
	return engineList[engType](ctx, d.client, engTypes, map[string]any{"include_internal": true}, "triggers")
}

// typeLookup finds a trigger type by id.
func (d *Directory) typeLookup() lookup[engType] {
	return lookup[engType]{empty: msgIDEmpty, missing: fmtTriggerMissing, read: d.types,
		key: func(t engType) string { return t.ID }}
}

func (d *Directory) triggersList(ctx context.Context, data json.RawMessage) (any, error) {
	return listing(ctx, data, "TriggersListInput", "triggers", d.types,
		func(in listFilter, t engType) (typeRow, bool) {
			w := firstSegment(t.ID)
			keep := containsFold(t.ID+" "+t.Description, in.Search) && strings.HasPrefix(t.ID, in.Prefix) &&
				(in.Worker == "" || w == in.Worker)
			return typeRow{t.ID, w, t.Description}, keep
		},
		func(r typeRow) string { return r.ID })
}

type typeInfo struct {
	ID                  string          `json:"id"`
	WorkerName          string          `json:"worker_name"`
	Description         string          `json:"description"`
	ConfigurationSchema json.RawMessage `json:"configuration_schema"`
	ReturnSchema        json.RawMessage `json:"return_schema"`
	InstanceCount       int             `json:"instance_count"`
}

// typeInfo details the trigger type id.
func (d *Directory) typeInfo(ctx context.Context, id string) (*typeInfo, error) {
	t, id, err := d.typeLookup().find(ctx, id)
	if err != nil {
		return nil, err
	}
	regs, err := engineList[iii.TriggerInfo](ctx, d.client, engRegistered, map[string]any{"include_internal": true, "trigger_type": id}, "registered_triggers")
	if err != nil {
		return nil, err
	}
	n := 0
	for _, r := range regs {
		if r.TriggerType == id {
			n++
		}
	}
	cfg := t.TriggerRequestFormat
	if len(cfg) == 0 {
		cfg = t.ConfigurationSchema
	}
	ret := t.CallRequestFormat
	if len(ret) == 0 {
		ret = t.RequestSchema
	}
	return &typeInfo{ID: t.ID, WorkerName: firstSegment(t.ID), Description: t.Description,
		ConfigurationSchema: orNull(cfg), ReturnSchema: orNull(ret), InstanceCount: n}, nil
}

func (d *Directory) triggersInfo(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decode(data, "TriggerInfoInput", &in); err != nil {
		return nil, err
	}
	return d.typeInfo(ctx, in.ID)
}

// functionWorkers maps function ids to their workers, for attributing
// registered triggers.
func (d *Directory) functionWorkers(ctx context.Context) map[string]string {
	fns, _ := d.functions(ctx)
	m := make(map[string]string, len(fns))
	for _, f := range fns {
		m[f.FunctionID] = workerOf(f)
	}
	return m
}

func (d *Directory) registered(ctx context.Context) ([]iii.TriggerInfo, error) {
	return engineList[iii.TriggerInfo](ctx, d.client, engRegistered, map[string]any{"include_internal": true}, "registered_triggers")
}

// summary is a config as compact JSON with newlines turned into spaces,
// cut to 80 characters plus "...".
func summary(cfg json.RawMessage) string {
	var v any
	s := string(orNull(cfg))
	if json.Unmarshal(cfg, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			s = string(b)
		}
	}
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "..."
	}
	return s
}

// registeredLookup finds a registered trigger by id.
func (d *Directory) registeredLookup() lookup[iii.TriggerInfo] {
	return lookup[iii.TriggerInfo]{empty: msgIDEmpty, missing: fmtRegMissing, read: d.registered,
		key: func(r iii.TriggerInfo) string { return r.ID }}
}

// registeredWorker attributes a registered trigger to the worker of its
// function (owners: functionWorkers), failing that the function id's
// first segment.
func registeredWorker(owners map[string]string, r iii.TriggerInfo) string {
	if w := owners[r.FunctionID]; w != "" {
		return w
	}
	return firstSegment(r.FunctionID)
}

type registeredRow struct {
	ID            string `json:"id"`
	TriggerType   string `json:"trigger_type"`
	FunctionID    string `json:"function_id"`
	WorkerName    string `json:"worker_name"`
	ConfigSummary string `json:"config_summary"`
}

func (d *Directory) registeredList(ctx context.Context, data json.RawMessage) (any, error) {
	var owners map[string]string
	read := func(ctx context.Context) ([]iii.TriggerInfo, error) {
		regs, err := d.registered(ctx)
		if err == nil {
			owners = d.functionWorkers(ctx)
		}
		return regs, err
	}
	return listing(ctx, data, "RegisteredTriggersListInput", "registered_triggers", read,
		func(in listFilter, r iii.TriggerInfo) (registeredRow, bool) {
			w := registeredWorker(owners, r)
			keep := (containsFold(r.ID, in.Search) || containsFold(r.TriggerType, in.Search) || containsFold(r.FunctionID, in.Search)) &&
				(in.TriggerType == "" || r.TriggerType == in.TriggerType) && (in.FunctionID == "" || r.FunctionID == in.FunctionID) &&
				(in.Worker == "" || w == in.Worker)
			return registeredRow{r.ID, r.TriggerType, r.FunctionID, w, summary(r.Config)}, keep
		},
		func(r registeredRow) string { return r.ID })
}

func (d *Directory) registeredInfo(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decode(data, "RegisteredTriggerInfoInput", &in); err != nil {
		return nil, err
	}
	r, _, err := d.registeredLookup().find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	w := registeredWorker(d.functionWorkers(ctx), r)
	out := struct {
		ID          string          `json:"id"`
		TriggerType string          `json:"trigger_type"`
		FunctionID  string          `json:"function_id"`
		WorkerName  string          `json:"worker_name"`
		Config      json.RawMessage `json:"config"`
		Metadata    json.RawMessage `json:"metadata"`
		Trigger     *typeInfo       `json:"trigger,omitempty"`
		Function    *functionInfo   `json:"function,omitempty"`
	}{ID: r.ID, TriggerType: r.TriggerType, FunctionID: r.FunctionID, WorkerName: w, Config: orNull(r.Config), Metadata: orNull(r.Metadata)}
	if t, err := d.typeInfo(ctx, r.TriggerType); err == nil {
		out.Trigger = t
	}
	if f, err := d.functionInfo(ctx, r.FunctionID, true); err == nil {
		out.Function = f
	}
	return out, nil
}

// workerRow is the shared row of engine and registry worker listings.
type workerRow struct {
	Name              *string         `json:"name"`
	Description       *string         `json:"description"`
	Version           json.RawMessage `json:"version"`
	ID                json.RawMessage `json:"id"`
	Runtime           string          `json:"runtime"`
	OS                json.RawMessage `json:"os"`
	Status            string          `json:"status"`
	FunctionCount     json.RawMessage `json:"function_count"`
	ConnectedAtMs     json.RawMessage `json:"connected_at_ms"`
	ActiveInvocations json.RawMessage `json:"active_invocations"`
	Isolation         json.RawMessage `json:"isolation"`
	IPAddress         json.RawMessage `json:"ip_address"`
}

func (d *Directory) workers(ctx context.Context) ([]workerRow, error) {
	ws, err := engineList[iii.WorkerInfo](ctx, d.client, engWorkers, map[string]any{}, "workers")
	if err != nil {
		return nil, err
	}
	rows := make([]workerRow, 0, len(ws))
	for _, w := range ws {
		rows = append(rows, workerRow{Name: w.Name, Version: orNull(w.Version), ID: orNull(w.ID), Runtime: w.Runtime,
			OS: orNull(w.OS), Status: w.Status, FunctionCount: orNull(w.FunctionCount), ConnectedAtMs: orNull(w.ConnectedAtMs),
			ActiveInvocations: orNull(w.ActiveInvocations), Isolation: orNull(w.Isolation), IPAddress: orNull(w.IPAddress)})
	}
	// A missing name sorts first.
	slices.SortStableFunc(rows, func(a, b workerRow) int {
		switch {
		case a.Name == nil && b.Name == nil:
			return 0
		case a.Name == nil:
			return -1
		case b.Name == nil:
			return 1
		}
		return strings.Compare(*a.Name, *b.Name)
	})
	return rows, nil
}

// workerName is a worker's name, "" when it has none.
func workerName(w workerRow) string {
	if w.Name == nil {
		return ""
	}
	return *w.Name
}

// workerLookup finds a connected worker by name.
func (d *Directory) workerLookup() lookup[workerRow] {
	// A worker without a name has key "", which no request names.
	return lookup[workerRow]{empty: msgNameEmpty, missing: fmtWorkerMissing, read: d.workers, key: workerName}
}

func (d *Directory) workersList(ctx context.Context, data json.RawMessage) (any, error) {
	// Not re-sorted: workers() orders them, a missing name first.
	return listing(ctx, data, "WorkersListInput", "workers", d.workers,
		func(in listFilter, w workerRow) (workerRow, bool) {
			keep := containsFold(workerName(w), in.Search) && (in.Runtime == "" || w.Runtime == in.Runtime) &&
				(in.Status == "" || w.Status == in.Status)
			return w, keep
		}, nil)
}

func (d *Directory) workersInfo(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(data, "WorkerInfoInput", &in); err != nil {
		return nil, err
	}
	worker, name, err := d.workerLookup().find(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	fns, err := d.functions(ctx)
	if err != nil {
		return nil, err
	}
	types, err := d.types(ctx)
	if err != nil {
		return nil, err
	}
	regs, err := d.registered(ctx)
	if err != nil {
		return nil, err
	}
	type fnRow struct {
		FunctionID  string `json:"function_id"`
		Description string `json:"description"`
	}
	type ttRow struct {
		ID          string `json:"id"`
		Description string `json:"description"`
	}
	type regRow struct {
		ID          string `json:"id"`
		TriggerType string `json:"trigger_type"`
		FunctionID  string `json:"function_id"`
	}
	out := struct {
		Worker             workerRow `json:"worker"`
		Functions          []fnRow   `json:"functions"`
		TriggerTypes       []ttRow   `json:"trigger_types"`
		RegisteredTriggers []regRow  `json:"registered_triggers"`
	}{Worker: worker, Functions: []fnRow{}, TriggerTypes: []ttRow{}, RegisteredTriggers: []regRow{}}
	owned := map[string]bool{}
	for _, f := range fns {
		if workerOf(f) == name {
			owned[f.FunctionID] = true
			out.Functions = append(out.Functions, fnRow{f.FunctionID, f.Description})
		}
	}
	for _, t := range types {
		if strings.HasPrefix(t.ID, name+"::") || firstSegment(t.ID) == name {
			out.TriggerTypes = append(out.TriggerTypes, ttRow{t.ID, t.Description})
		}
	}
	for _, r := range regs {
		if owned[r.FunctionID] {
			out.RegisteredTriggers = append(out.RegisteredTriggers, regRow{r.ID, r.TriggerType, r.FunctionID})
		}
	}
	slices.SortFunc(out.Functions, func(a, b fnRow) int { return strings.Compare(a.FunctionID, b.FunctionID) })
	slices.SortFunc(out.TriggerTypes, func(a, b ttRow) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(out.RegisteredTriggers, func(a, b regRow) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
