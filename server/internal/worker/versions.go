package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// maxMetaBytes bounds a version's message and author.
const (
	maxMessageBytes = 4096
	maxAuthorBytes  = 256
)

// versionKind is one of the two things with versions: skills, named by the
// payload field id, and prompts, named by name. Each versions function has
// one implementation that takes the kind.
type versionKind struct {
	skill    bool               // skills, else prompts
	noun     string             // "skill" or "prompt", for scoped-token refusals
	field    string             // the payload field naming the id
	validate func(string) error // the id's rules

	// Function ids and descriptions of versions, label, rollback and diff.
	fnVersions, fnLabel, fnRollback, fnDiff     string
	docVersions, docLabel, docRollback, docDiff string
}

var (
	skillKind = versionKind{skill: true, noun: "skill", field: "id", validate: registry.ValidateID,
		fnVersions: rules.FnSkillsVersions, fnLabel: rules.FnSkillsLabel, fnRollback: rules.FnSkillsRollback, fnDiff: rules.FnSkillsDiff,
		docVersions: "List a skill's kept versions, newest first, with their labels, and the label map.",
		docLabel:    "Point a label (production, staging, …; not latest) at a version of a skill. Protected labels need admin_token.",
		docRollback: "Register a version's body again as the skill's newest version (history is never rewritten).",
		docDiff:     "Unified diff between two versions of a skill."}
	promptKind = versionKind{noun: "prompt", field: "name", validate: registry.ValidateName,
		fnVersions: rules.FnPromptsVersions, fnLabel: rules.FnPromptsLabel, fnRollback: rules.FnPromptsRollback, fnDiff: rules.FnPromptsDiff,
		docVersions: "List a prompt's kept versions, newest first, with their labels, and the label map.",
		docLabel:    "Point a label (not latest) at a version of a prompt. Protected labels need admin_token.",
		docRollback: "Register a version's definition again as the prompt's newest version.",
		docDiff:     "Unified diff between two versions of a prompt's definition (JSON)."}
)

// versionFunction is one function of the versions surface.
type versionFunction struct {
	id, description, request string
	handler                  iii.Handler
}

// versionHandler is one versions function's implementation, for either kind.
type versionHandler func(w *Worker, ctx context.Context, k versionKind, data json.RawMessage) (any, error)

func (w *Worker) versionFunctions() []versionFunction {
	sel := `{"oneOf":[{"type":"integer","minimum":1},{"type":"string"}],"description":"a version number, or a label (latest, production, …)"}`
	meta := `"message":{"type":"string","maxLength":4096},"author":{"type":"string","maxLength":256}`
	var fns []versionFunction
	for _, k := range []versionKind{skillKind, promptKind} {
		bind := func(h versionHandler) iii.Handler {
			return func(ctx context.Context, data json.RawMessage) (any, error) { return h(w, ctx, k, data) }
		}
		field := strconv.Quote(k.field)
		id := field + `:{"type":"string"}`
		fns = append(fns,
			versionFunction{k.fnVersions, k.docVersions,
				`{"type":"object","required":[` + field + `],"properties":{` + id + `}}`, bind((*Worker).versions)},
			versionFunction{k.fnLabel, k.docLabel,
				`{"type":"object","required":[` + field + `,"label","version"],"properties":{` + id + `,"label":{"type":"string"},"version":` + sel + `,"admin_token":{"type":"string"}}}`, bind((*Worker).label)},
			versionFunction{k.fnRollback, k.docRollback,
				`{"type":"object","required":[` + field + `,"version"],"properties":{` + id + `,"version":` + sel + `,` + meta + `}}`, bind((*Worker).rollback)},
			versionFunction{k.fnDiff, k.docDiff,
				`{"type":"object","required":[` + field + `,"from","to"],"properties":{` + id + `,"from":` + sel + `,"to":` + sel + `}}`, bind((*Worker).diff)})
	}
	return fns
}

func (w *Worker) registerVersionFunctions() error {
	for _, f := range w.versionFunctions() {
		_, err := w.client.RegisterFunction(f.id, f.handler, iii.RegisterFunctionOptions{
			Description: f.description, RequestFormat: json.RawMessage(f.request)})
		if err != nil {
			return err
		}
	}
	return nil
}

// payload is a decoded versions-function input.
type payload struct {
	fn     string
	fields map[string]json.RawMessage
}

func decodePayload(fn string, raw json.RawMessage) (payload, error) {
	p := payload{fn: fn}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &p.fields); err != nil || p.fields == nil {
		return p, invalidArguments(fmt.Errorf("%s: the payload must be a JSON object", fn))
	}
	return p, nil
}

// str reads a string field; required ones must be present.
func (p payload) str(name string, required bool, maxBytes int) (string, error) {
	v, ok := p.fields[name]
	if !ok || string(v) == "null" {
		if required {
			return "", invalidArguments(fmt.Errorf("%s: missing field `%s` (expected a string)", p.fn, name))
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", invalidArguments(fmt.Errorf("%s: field `%s` must be a string, got %s", p.fn, name, clip(v)))
	}
	if maxBytes > 0 && len(s) > maxBytes {
		return "", invalidArguments(fmt.Errorf("%s: field `%s` is %d bytes, the limit is %d", p.fn, name, len(s), maxBytes))
	}
	return s, nil
}

// selector reads a version field: a version number (1 or more) or a label.
func (p payload) selector(name string) (string, error) {
	v, ok := p.fields[name]
	if !ok || string(v) == "null" {
		return "", invalidArguments(fmt.Errorf("%s: missing field `%s` (expected a version number or a label)", p.fn, name))
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil && v[0] != '"' {
		i, err := strconv.Atoi(n.String())
		if err != nil || i < 1 {
			return "", invalidArguments(fmt.Errorf("%s: field `%s` must be a version number of 1 or more, got %s", p.fn, name, clip(v)))
		}
		return strconv.Itoa(i), nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil || s == "" {
		return "", invalidArguments(fmt.Errorf("%s: field `%s` must be a version number or a label, got %s", p.fn, name, clip(v)))
	}
	return s, nil
}

func clip(v json.RawMessage) string {
	if len(v) > 64 {
		return string(v[:64]) + "…"
	}
	return string(v)
}

// decodeTarget decodes the payload of function fn and the id of kind k it
// names (a skill's id, a prompt's name), checked by that kind's rules.
func decodeTarget(fn string, k versionKind, data json.RawMessage) (payload, string, error) {
	p, err := decodePayload(fn, data)
	if err != nil {
		return p, "", err
	}
	id, err := p.str(k.field, true, 0)
	if err != nil {
		return p, "", err
	}
	if err := k.validate(id); err != nil {
		return p, "", invalidArguments(err)
	}
	return p, id, nil
}

func (p payload) meta() (history.Meta, error) {
	msg, err := p.str("message", false, maxMessageBytes)
	if err != nil {
		return history.Meta{}, err
	}
	author, err := p.str("author", false, maxAuthorBytes)
	return history.Meta{Message: msg, Author: author}, err
}

// checkMeta bounds a registration's message and author.
func checkMeta(fn, message, author string) error {
	if len(message) > maxMessageBytes {
		return invalidArguments(fmt.Errorf("%s: field `message` is %d bytes, the limit is %d", fn, len(message), maxMessageBytes))
	}
	if len(author) > maxAuthorBytes {
		return invalidArguments(fmt.Errorf("%s: field `author` is %d bytes, the limit is %d", fn, len(author), maxAuthorBytes))
	}
	return nil
}

func (w *Worker) histOf(k versionKind) *history.History {
	if k.skill {
		return w.hist.skills
	}
	return w.hist.prompts
}

func (w *Worker) versions(_ context.Context, k versionKind, data json.RawMessage) (any, error) {
	_, id, err := decodeTarget(k.fnVersions, k, data)
	if err != nil {
		return nil, err
	}
	l, err := w.histOf(k).Versions(id)
	if err != nil {
		return nil, historyError(err)
	}
	return l, nil
}

// label moves a label and, when it is the serve label and what is served
// changed, announces the id as registered again.
func (w *Worker) label(ctx context.Context, k versionKind, data json.RawMessage) (any, error) {
	p, id, err := w.changeTarget(ctx, k.fnLabel, k, data)
	if err != nil {
		return nil, err
	}
	label, err := p.str("label", true, 0)
	if err != nil {
		return nil, err
	}
	sel, err := p.selector("version")
	if err != nil {
		return nil, err
	}
	token, err := p.str("admin_token", false, 0)
	if err != nil {
		return nil, err
	}
	h := w.histOf(k)
	if err := history.CheckLabel(label); err != nil {
		return nil, historyError(err)
	}
	n, err := h.Resolve(id, sel)
	if err != nil {
		return nil, historyError(err)
	}
	before := h.Served(id, w.hist.serveLabel)
	move, err := h.Label(id, label, n, token)
	if err != nil {
		return nil, historyError(err)
	}
	w.log.Info("label moved", "fn", k.fnLabel, "id", id, "label", label, "version", n, "previous", move.Previous)
	if k.skill && label == w.hist.serveLabel {
		// Listings, the index, search and MCP describe what is served.
		h.Locked(id, func() { w.skills.repin(id) })
	}
	w.cl.Announce(ctx, w.scopeOf(k), cluster.OpLabel, id)
	if label == w.hist.serveLabel && h.Served(id, w.hist.serveLabel) != before {
		w.announce(ctx, k, id)
	}
	return move, nil
}

// changeTarget decodes the payload of a label move or rollback and its id,
// refused outside the namespaces of the caller's scoped token: both change
// what the id serves, as a register does.
func (w *Worker) changeTarget(ctx context.Context, fn string, k versionKind, data json.RawMessage) (payload, string, error) {
	p, id, err := decodeTarget(fn, k, data)
	if err != nil {
		return p, "", err
	}
	return p, id, w.callerOf(ctx, data).OutOfScope(k.noun, id)
}

// scopeOf is the state scope of kind k.
func (w *Worker) scopeOf(k versionKind) string {
	if k.skill {
		return w.cfg.Scopes.Skills
	}
	return w.cfg.Scopes.Prompts
}

// announce fires on-change register for id: what a read serves changed.
func (w *Worker) announce(ctx context.Context, k versionKind, id string) {
	if k.skill {
		w.index.Store(nil) // the index lists what is served
		w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpRegister, ID: id})
		return
	}
	w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpRegister, Name: id})
}

// RollbackResult is the answer of skills::rollback and prompts::rollback.
type RollbackResult struct {
	ID         string `json:"id"`
	Version    int    `json:"version"`     // the version now newest
	Created    bool   `json:"created"`     // false: that content was the newest already
	RolledBack int    `json:"rolled_back"` // the version whose content it holds
}

func (w *Worker) rollback(ctx context.Context, k versionKind, data json.RawMessage) (any, error) {
	p, id, err := w.changeTarget(ctx, k.fnRollback, k, data)
	if err != nil {
		return nil, err
	}
	sel, err := p.selector("version")
	if err != nil {
		return nil, err
	}
	meta, err := p.meta()
	if err != nil {
		return nil, err
	}
	content, n, err := w.histOf(k).Select(id, sel)
	if err != nil {
		return nil, historyError(err)
	}
	if meta.Message == "" {
		meta.Message = fmt.Sprintf("rollback to version %d", n)
	}
	var v history.Version
	var created bool
	if k.skill {
		_, v, created, err = w.putSkill(ctx, id, content, meta)
	} else {
		desc, fid, args, derr := decodePromptDefinition(content)
		if derr != nil {
			return nil, derr
		}
		_, v, created, err = w.putPrompt(ctx, id, desc, fid, args, meta)
	}
	if err != nil {
		return nil, err
	}
	return RollbackResult{ID: id, Version: v.Version, Created: created, RolledBack: n}, nil
}

// DiffResult is the answer of skills::diff and prompts::diff.
type DiffResult struct {
	ID   string `json:"id"`
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"` // unified diff; "" when both are equal
}

func (w *Worker) diff(_ context.Context, k versionKind, data json.RawMessage) (any, error) {
	p, id, err := decodeTarget(k.fnDiff, k, data)
	if err != nil {
		return nil, err
	}
	from, err := p.selector("from")
	if err != nil {
		return nil, err
	}
	to, err := p.selector("to")
	if err != nil {
		return nil, err
	}
	h := w.histOf(k)
	a, na, err := h.Select(id, from)
	if err != nil {
		return nil, historyError(err)
	}
	b, nb, err := h.Select(id, to)
	if err != nil {
		return nil, historyError(err)
	}
	if !k.skill { // one line per key: a readable diff of the definition
		a, b = indentJSON(a), indentJSON(b)
	}
	name := func(n int) string { return id + registry.SelectorSep + strconv.Itoa(n) }
	return DiffResult{ID: id, From: na, To: nb, Diff: history.Unified(name(na), name(nb), a, b)}, nil
}

func indentJSON(s string) string {
	var out bytes.Buffer
	if json.Indent(&out, []byte(s), "", "  ") != nil {
		return s
	}
	return out.String() + "\n"
}

// putSkill stores body as skill id's served row and newest version (one
// durable commit for both), updates the mirror and announces it.
func (w *Worker) putSkill(ctx context.Context, id, body string, meta history.Meta) (registry.StoredSkill, history.Version, bool, error) {
	row := registry.NewStoredSkill(id, body, time.Now())
	served := kv.Write{Scope: w.cfg.Scopes.Skills, Key: id, Value: appendSkillRow(make([]byte, 0, len(body)+len(body)/16+2*len(id)+64), row)}
	// The mirror follows under the id's history lock: mirror order is write order.
	v, created, err := w.hist.skills.Record(id, body, meta, []kv.Write{served}, func() { w.skills.put(row) })
	if err != nil {
		return row, v, false, err
	}
	w.log.Info("skill registered", "id", row.ID, "bytes", len(row.Skill), "version", v.Version, "new_version", created)
	w.log.Debug("skill body", "id", row.ID, "body", row.Skill)
	w.cl.Announce(ctx, w.cfg.Scopes.Skills, cluster.OpSet, id)
	w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpRegister, ID: id})
	return row, v, created, nil
}

// putPrompt is putSkill for a prompt.
func (w *Worker) putPrompt(ctx context.Context, name, desc, fid string, args []registry.PromptArgument, meta history.Meta) (registry.StoredPrompt, history.Version, bool, error) {
	row := registry.NewStoredPrompt(name, desc, fid, args, time.Now())
	value, err := json.Marshal(row)
	if err != nil {
		return row, history.Version{}, false, fmt.Errorf("encode prompt %s: %w", name, err)
	}
	def := promptDefinition(desc, fid, args)
	served := kv.Write{Scope: w.cfg.Scopes.Prompts, Key: name, Value: value}
	v, created, err := w.hist.prompts.Record(name, def, meta, []kv.Write{served}, nil)
	if err != nil {
		return row, v, false, err
	}
	w.log.Info("prompt registered", "name", row.Name, "function_id", row.FunctionID, "version", v.Version, "new_version", created)
	w.prompts.changed(name, &row)
	w.cl.Announce(ctx, w.cfg.Scopes.Prompts, cluster.OpSet, name)
	w.notify(ctx, w.promptSubs, registry.PromptChange{Op: registry.OpRegister, Name: name})
	return row, v, created, nil
}

// readSelected serves iii://{id}@{selector}.
func (w *Worker) readSelected(id, selector string) (string, error) {
	if err := registry.ValidateID(id); err != nil {
		return "", invalidArguments(err)
	}
	body, _, err := w.hist.skills.Select(id, selector)
	if err != nil {
		return "", historyError(err)
	}
	return body, nil
}

// servedVersion returns the body the serve label pins for a published
// skill, or ok false to serve the newest one.
func (w *Worker) servedVersion(id string) (string, bool, error) {
	n := w.hist.skills.Served(id, w.hist.serveLabel)
	if n == 0 {
		return "", false, nil
	}
	body, err := w.hist.skills.Content(id, n)
	if err != nil {
		return "", false, err
	}
	return body, true, nil
}

// SkillVersionBody returns the body of a version (number or label) of
// skill id from the history, for the Skills Protocol's `version`.
func (w *Worker) SkillVersionBody(id, selector string) (string, bool) {
	body, _, err := w.hist.skills.Select(id, selector)
	return body, err == nil
}

// SkillVersionNumbers lists the kept registry versions of skill id,
// newest first, as the selectors that read them ("3", "2", …), for the
// Skills Protocol's describe_skill `versions`.
func (w *Worker) SkillVersionNumbers(id string) []string {
	nums := w.hist.skills.Numbers(id)
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// splitSkillSelector is registry.SplitSelector with the worker's errors.
func splitSkillSelector(id string) (string, string, bool, error) {
	base, sel, ok, err := registry.SplitSelector(id)
	if err != nil {
		return "", "", false, invalidArguments(err)
	}
	return base, strings.TrimSpace(sel), ok, nil
}
