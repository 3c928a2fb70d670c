package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// The versions of skills and prompts (docs/versions.md): listing, label
// moves, rollbacks and diffs, over package history.

func (l *Local) histOf(k Kind) *history.History {
	if k == KindPrompt {
		return l.hist.prompts
	}
	return l.hist.skills
}

// scopeOf is the state scope of kind k.
func (l *Local) scopeOf(k Kind) string {
	if k == KindPrompt {
		return l.cfg.Scopes.Prompts
	}
	return l.cfg.Scopes.Skills
}

// ServeLabel is the label reads without a selector serve ("" for the
// newest version).
func (l *Local) ServeLabel() string { return l.hist.serveLabel }

// ProtectedLabels are the labels that move only with the admin token.
func (l *Local) ProtectedLabels() []string { return append([]string(nil), l.hist.protected...) }

// Versions implements Registry.
func (l *Local) Versions(_ context.Context, k Kind, id string) (history.Listing, error) {
	if err := k.validate(id); err != nil {
		return history.Listing{}, invalidArguments(err)
	}
	list, err := l.histOf(k).Versions(id)
	if err != nil {
		return history.Listing{}, answer(historyError(err))
	}
	return list, nil
}

// Label implements Registry: it moves a label and, when it is the serve
// label and what is served changed, announces the id as registered again.
// A scoped token may move labels of its namespaces only: a move changes
// what the id serves, as a register does.
func (l *Local) Label(ctx context.Context, c Caller, k Kind, in LabelInput) (history.LabelMove, error) {
	move, err := l.label(ctx, c, k, in)
	return move, answer(err)
}

func (l *Local) label(ctx context.Context, c Caller, k Kind, in LabelInput) (history.LabelMove, error) {
	if err := k.validate(in.ID); err != nil {
		return history.LabelMove{}, invalidArguments(err)
	}
	if err := c.OutOfScope(string(k), in.ID); err != nil {
		return history.LabelMove{}, err
	}
	h := l.histOf(k)
	if err := history.CheckLabel(in.Label); err != nil {
		return history.LabelMove{}, historyError(err)
	}
	n, err := h.Resolve(in.ID, in.Version)
	if err != nil {
		return history.LabelMove{}, historyError(err)
	}
	before := h.Served(in.ID, l.hist.serveLabel)
	move, err := h.Label(in.ID, in.Label, n, in.AdminToken)
	if err != nil {
		return history.LabelMove{}, historyError(err)
	}
	l.log.Info("label moved", "kind", string(k), "id", in.ID, "label", in.Label, "version", n, "previous", move.Previous)
	if k == KindSkill && in.Label == l.hist.serveLabel {
		// Listings, the index, search and MCP describe what is served.
		h.Locked(in.ID, func() { l.skills.Repin(in.ID) })
	}
	l.cl.Announce(ctx, l.scopeOf(k), cluster.OpLabel, in.ID)
	if in.Label == l.hist.serveLabel && h.Served(in.ID, l.hist.serveLabel) != before {
		l.announce(k, in.ID)
	}
	if k == KindSkill && move.Previous != move.Version {
		l.emit(ctx, Event{Op: EventLabel, ID: in.ID, Version: move.Version, Label: in.Label, Previous: move.Previous})
	}
	return move, nil
}

// announce tells subscribers that what a read of id serves changed.
func (l *Local) announce(k Kind, id string) {
	if k == KindSkill {
		l.index.Store(nil) // the index lists what is served
		l.skillChanged(registry.OpRegister, id)
		return
	}
	l.promptChanged(registry.OpRegister, id)
}

// Rollback implements Registry: a version's content registered again as
// the newest version (history is never rewritten). Like a label move, it
// is refused outside a scoped token's namespaces.
func (l *Local) Rollback(ctx context.Context, c Caller, k Kind, in RollbackInput) (RollbackResult, error) {
	res, err := l.rollback(ctx, c, k, in)
	return res, answer(err)
}

func (l *Local) rollback(ctx context.Context, c Caller, k Kind, in RollbackInput) (RollbackResult, error) {
	if err := k.validate(in.ID); err != nil {
		return RollbackResult{}, invalidArguments(err)
	}
	if err := c.OutOfScope(string(k), in.ID); err != nil {
		return RollbackResult{}, err
	}
	content, n, err := l.histOf(k).Select(in.ID, in.Version)
	if err != nil {
		return RollbackResult{}, historyError(err)
	}
	meta := in.Meta
	if meta.Message == "" {
		meta.Message = fmt.Sprintf("rollback to version %d", n)
	}
	var v history.Version
	var created bool
	if k == KindSkill {
		_, v, created, err = l.putSkill(ctx, in.ID, content, meta)
	} else {
		desc, fid, args, derr := decodePromptDefinition(content)
		if derr != nil {
			return RollbackResult{}, derr
		}
		_, v, created, err = l.putPrompt(ctx, in.ID, desc, fid, args, meta)
	}
	if err != nil {
		return RollbackResult{}, err
	}
	if k == KindSkill && created {
		l.emit(ctx, Event{Op: EventRollback, ID: in.ID, Version: v.Version, RolledBack: n, Author: meta.Author, Message: meta.Message})
	}
	return RollbackResult{ID: in.ID, Version: v.Version, Created: created, RolledBack: n}, nil
}

// Diff implements Registry.
func (l *Local) Diff(_ context.Context, k Kind, in DiffInput) (DiffResult, error) {
	if err := k.validate(in.ID); err != nil {
		return DiffResult{}, invalidArguments(err)
	}
	h := l.histOf(k)
	a, na, err := h.Select(in.ID, in.From)
	if err != nil {
		return DiffResult{}, answer(historyError(err))
	}
	b, nb, err := h.Select(in.ID, in.To)
	if err != nil {
		return DiffResult{}, answer(historyError(err))
	}
	if k == KindPrompt { // one line per key: a readable diff of the definition
		a, b = indentJSON(a), indentJSON(b)
	}
	name := func(n int) string { return in.ID + registry.SelectorSep + strconv.Itoa(n) }
	return DiffResult{ID: in.ID, From: na, To: nb, Diff: history.Unified(name(na), name(nb), a, b)}, nil
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
func (l *Local) putSkill(ctx context.Context, id, body string, meta history.Meta) (registry.StoredSkill, history.Version, bool, error) {
	row := registry.NewStoredSkill(id, body, time.Now())
	served := kv.Write{Scope: l.cfg.Scopes.Skills, Key: id, Value: appendSkillRow(make([]byte, 0, len(body)+len(body)/16+2*len(id)+64), row)}
	// The mirror follows under the id's history lock: mirror order is write order.
	v, created, err := l.hist.skills.Record(id, body, meta, []kv.Write{served}, func() { l.skills.Put(row) })
	if err != nil {
		return row, v, false, err
	}
	l.log.Info("skill registered", "id", row.ID, "bytes", len(row.Skill), "version", v.Version, "new_version", created)
	l.log.Debug("skill body", "id", row.ID, "body", row.Skill)
	l.cl.Announce(ctx, l.cfg.Scopes.Skills, cluster.OpSet, id)
	l.skillChanged(registry.OpRegister, id)
	return row, v, created, nil
}

// putPrompt is putSkill for a prompt.
func (l *Local) putPrompt(ctx context.Context, name, desc, fid string, args []registry.PromptArgument, meta history.Meta) (registry.StoredPrompt, history.Version, bool, error) {
	row := registry.NewStoredPrompt(name, desc, fid, args, time.Now())
	value, err := json.Marshal(row)
	if err != nil {
		return row, history.Version{}, false, fmt.Errorf("encode prompt %s: %w", name, err)
	}
	def := promptDefinition(desc, fid, args)
	served := kv.Write{Scope: l.cfg.Scopes.Prompts, Key: name, Value: value}
	v, created, err := l.hist.prompts.Record(name, def, meta, []kv.Write{served}, nil)
	if err != nil {
		return row, v, false, err
	}
	l.log.Info("prompt registered", "name", row.Name, "function_id", row.FunctionID, "version", v.Version, "new_version", created)
	l.prompts.changed(name, &row)
	l.cl.Announce(ctx, l.cfg.Scopes.Prompts, cluster.OpSet, name)
	l.promptChanged(registry.OpRegister, name)
	return row, v, created, nil
}

// readSelected serves iii://{id}@{selector}.
func (l *Local) readSelected(ctx context.Context, id, selector string) (string, error) {
	if err := registry.ValidateID(id); err != nil {
		return "", invalidArguments(err)
	}
	body, n, err := l.hist.skills.Select(id, selector)
	if err != nil {
		return "", historyError(err)
	}
	l.countedSelected(ctx, id, n)
	return body, nil
}

// servedVersion returns the body the serve label pins for a published
// skill, or ok false to serve the newest one.
func (l *Local) servedVersion(id string) (string, bool, error) {
	n := l.hist.skills.Served(id, l.hist.serveLabel)
	if n == 0 {
		return "", false, nil
	}
	body, err := l.hist.skills.Content(id, n)
	if err != nil {
		return "", false, err
	}
	return body, true, nil
}

// SkillVersionBody returns the body of a version (number or label) of
// skill id from the history, for the Skills Protocol's `version`.
func (l *Local) SkillVersionBody(id, selector string) (string, bool) {
	body, _, err := l.hist.skills.Select(id, selector)
	return body, err == nil
}

// SkillVersionNumbers lists the kept registry versions of skill id,
// newest first, as the selectors that read them ("3", "2", …), for the
// Skills Protocol's describe_skill `versions`.
func (l *Local) SkillVersionNumbers(id string) []string {
	nums := l.hist.skills.Numbers(id)
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// splitSkillSelector is registry.SplitSelector with the registry's errors.
func splitSkillSelector(id string) (string, string, bool, error) {
	base, sel, ok, err := registry.SplitSelector(id)
	if err != nil {
		return "", "", false, invalidArguments(err)
	}
	return base, strings.TrimSpace(sel), ok, nil
}
