package core

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// The versions of skills and prompts (docs/versions.md): listing, label
// moves, rollbacks and diffs, over package history; yanks and deprecation
// (docs/trust.md).

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

// resolve is history's Resolve with the registry's errors (a selector of
// the wrong form is INVALID_ARGUMENTS).
func (l *Local) resolve(k Kind, id, selector string) (history.Pick, error) {
	if err := registry.CheckSelector(selector); err != nil {
		return history.Pick{}, invalidArguments(err)
	}
	p, err := l.histOf(k).Resolve(id, selector)
	return p, historyError(err)
}

// Label implements Registry: it moves a label and, when it is the serve
// label and what is served changed, announces the id as registered again.
// A label move changes what the id serves, as a register does: a scoped
// token moves labels of its namespaces only, and nobody moves a label of
// an id another connection owns while it is connected.
func (l *Local) Label(ctx context.Context, c Caller, k Kind, in LabelInput) (history.LabelMove, error) {
	move, err := l.label(ctx, c, k, in)
	return move, answer(err)
}

func (l *Local) label(ctx context.Context, c Caller, k Kind, in LabelInput) (history.LabelMove, error) {
	if err := k.validate(in.ID); err != nil {
		return history.LabelMove{}, invalidArguments(err)
	}
	if err := l.authorize(ctx, k, in.ID, c); err != nil {
		return history.LabelMove{}, err
	}
	h := l.histOf(k)
	if err := history.CheckLabel(in.Label); err != nil {
		return history.LabelMove{}, historyError(err)
	}
	p, err := l.resolve(k, in.ID, in.Version)
	if err != nil {
		return history.LabelMove{}, err
	}
	if err := l.sign.checkLabelSigned(h, k, in.ID, in.Label, p.Version); err != nil {
		return history.LabelMove{}, err
	}
	before := h.Served(in.ID, l.hist.serveLabel)
	move, err := h.Label(in.ID, in.Label, p.Version, in.AdminToken)
	if err != nil {
		return history.LabelMove{}, historyError(err)
	}
	l.log.Info("label moved", "kind", string(k), "id", in.ID, "label", in.Label, "version", p.Version, "previous", move.Previous)
	if k == KindSkill && in.Label == l.hist.serveLabel {
		// Listings, the index, search and MCP describe what is served.
		h.Locked(in.ID, func() { l.skills.Repin(in.ID) })
	}
	l.cl.Announce(ctx, l.scopeOf(k), cluster.OpLabel, in.ID)
	if in.Label == l.hist.serveLabel && h.Served(in.ID, l.hist.serveLabel) != before {
		l.announce(k, registry.OpRegister, in.ID)
	}
	if k == KindSkill && move.Previous != move.Version {
		l.emit(ctx, Event{Op: EventLabel, ID: in.ID, Version: move.Version, Label: in.Label, Previous: move.Previous})
	}
	return move, nil
}

// announce tells subscribers that something about id changed: op
// register when what a read serves changed, or yank, unyank, deprecate.
func (l *Local) announce(k Kind, op, id string) {
	if k == KindSkill {
		l.index.Store(nil) // the index lists what is served
		l.skillChanged(op, id)
		if op != registry.OpRegister {
			// The skill:// listings carry yanks and deprecation.
			l.changes.publish(Change{Kind: ChangeCatalog, ID: id})
		}
		return
	}
	l.promptChanged(op, id)
}

// Rollback implements Registry: a version's content registered again as
// the newest version (history is never rewritten), with that version's
// signature checked again against the trusted keys of now. Like a label
// move, it needs the rights of a register.
func (l *Local) Rollback(ctx context.Context, c Caller, k Kind, in RollbackInput) (RollbackResult, error) {
	res, err := l.rollback(ctx, c, k, in)
	return res, answer(err)
}

func (l *Local) rollback(ctx context.Context, c Caller, k Kind, in RollbackInput) (RollbackResult, error) {
	if err := k.validate(in.ID); err != nil {
		return RollbackResult{}, invalidArguments(err)
	}
	if err := l.authorize(ctx, k, in.ID, c); err != nil {
		return RollbackResult{}, err
	}
	p, err := l.resolve(k, in.ID, in.Version)
	if err != nil {
		return RollbackResult{}, err
	}
	if p.Yanked != "" {
		return RollbackResult{}, invalidArguments(fmt.Errorf("version %d of %s %s is yanked (%s): unyank it before rolling back to it", p.Version, k, in.ID, p.Yanked))
	}
	h := l.histOf(k)
	content, err := h.Content(in.ID, p.Version)
	if err != nil {
		return RollbackResult{}, historyError(err)
	}
	old, err := h.VersionOf(in.ID, p.Version)
	if err != nil {
		return RollbackResult{}, historyError(err)
	}
	fn := k.Function("rollback")
	meta, err := l.sign.verdict(fn, k, in.ID, content, old.Signature)
	if err != nil {
		return RollbackResult{}, err
	}
	meta.Message, meta.Author = in.Meta.Message, in.Meta.Author
	if meta.Message == "" {
		meta.Message = fmt.Sprintf("rollback to version %d", p.Version)
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
		l.emit(ctx, Event{Op: EventRollback, ID: in.ID, Version: v.Version, RolledBack: p.Version, Author: meta.Author, Message: meta.Message})
	}
	return RollbackResult{ID: in.ID, Version: v.Version, Created: created, RolledBack: p.Version}, nil
}

// Diff implements Registry.
func (l *Local) Diff(_ context.Context, k Kind, in DiffInput) (DiffResult, error) {
	if err := k.validate(in.ID); err != nil {
		return DiffResult{}, invalidArguments(err)
	}
	h := l.histOf(k)
	pa, err := l.resolve(k, in.ID, in.From)
	if err != nil {
		return DiffResult{}, answer(err)
	}
	pb, err := l.resolve(k, in.ID, in.To)
	if err != nil {
		return DiffResult{}, answer(err)
	}
	a, err := h.Content(in.ID, pa.Version)
	if err != nil {
		return DiffResult{}, answer(historyError(err))
	}
	b, err := h.Content(in.ID, pb.Version)
	if err != nil {
		return DiffResult{}, answer(historyError(err))
	}
	if k == KindPrompt { // one line per key: a readable diff of the definition
		a, b = indentJSON(a), indentJSON(b)
	}
	name := func(n int) string { return in.ID + registry.SelectorSep + strconv.Itoa(n) }
	return DiffResult{ID: in.ID, From: pa.Version, To: pb.Version, Diff: history.Unified(name(pa.Version), name(pb.Version), a, b)}, nil
}

func indentJSON(s string) string {
	var out bytes.Buffer
	if json.Indent(&out, []byte(s), "", "  ") != nil {
		return s
	}
	return out.String() + "\n"
}

// Yank implements Registry: version in.Version of in.ID is taken out of
// service with a reason (reads by label and without a selector fall back
// to the newest version not yanked; pins still read it, with the reason).
// It needs the rights of a label move, and the admin token when a
// protected label points at the version.
func (l *Local) Yank(ctx context.Context, c Caller, k Kind, in YankInput) (YankResult, error) {
	res, err := l.yank(ctx, c, k, in, true)
	return res, answer(err)
}

// Unyank implements Registry: the version is back in service.
func (l *Local) Unyank(ctx context.Context, c Caller, k Kind, in YankInput) (YankResult, error) {
	res, err := l.yank(ctx, c, k, in, false)
	return res, answer(err)
}

func (l *Local) yank(ctx context.Context, c Caller, k Kind, in YankInput, yank bool) (YankResult, error) {
	if err := k.validate(in.ID); err != nil {
		return YankResult{}, invalidArguments(err)
	}
	if err := l.authorize(ctx, k, in.ID, c); err != nil {
		return YankResult{}, err
	}
	h := l.histOf(k)
	var n int
	if v, err := strconv.Atoi(in.Version); err == nil {
		n = v // a pin: the version itself, yanked or not
	} else if p, err := l.resolve(k, in.ID, in.Version); err != nil {
		return YankResult{}, err
	} else {
		n = p.Version
	}
	for _, label := range h.ProtectedAt(in.ID, n) {
		if err := h.CheckAdmin(label, in.AdminToken); err != nil {
			return YankResult{}, invalidArguments(fmt.Errorf("version %d of %s %s is under protected label %q: %w", n, k, in.ID, label, err))
		}
	}
	before, _, _ := h.Serving(in.ID, l.hist.serveLabel)
	var changed bool
	var err error
	op := registry.OpYank
	if yank {
		changed, err = h.Yank(in.ID, n, in.Reason)
	} else {
		op = registry.OpUnyank
		changed, err = h.Unyank(in.ID, n)
	}
	if err != nil {
		return YankResult{}, historyError(err)
	}
	res := YankResult{ID: in.ID, Version: n, Changed: changed}
	if f, ok := h.Facts(in.ID, n); ok && f.Yanked != "" {
		res.Yanked = &f.Yanked
	}
	after, _, withdrawn := h.Serving(in.ID, l.hist.serveLabel)
	if withdrawn == "" && after > 0 {
		res.Served = &after
	}
	if !changed {
		return res, nil
	}
	l.log.Info("version "+op, "kind", string(k), "id", in.ID, "version", n, "reason", in.Reason, "served", after)
	if k == KindSkill && after != before {
		h.Locked(in.ID, func() { l.skills.Repin(in.ID) })
	}
	l.cl.Announce(ctx, l.scopeOf(k), cluster.OpLabel, in.ID)
	l.announce(k, op, in.ID)
	if k == KindSkill {
		if yank {
			l.emit(ctx, Event{Op: EventYank, ID: in.ID, Version: n, Reason: in.Reason})
		} else {
			l.emit(ctx, Event{Op: EventUnyank, ID: in.ID, Version: n})
		}
	}
	return res, nil
}

// Deprecate implements Registry: id keeps being served, with message in
// its listings ("" removes it).
func (l *Local) Deprecate(ctx context.Context, c Caller, k Kind, in DeprecateInput) (DeprecateResult, error) {
	res, err := l.deprecate(ctx, c, k, in)
	return res, answer(err)
}

func (l *Local) deprecate(ctx context.Context, c Caller, k Kind, in DeprecateInput) (DeprecateResult, error) {
	if err := k.validate(in.ID); err != nil {
		return DeprecateResult{}, invalidArguments(err)
	}
	if err := l.authorize(ctx, k, in.ID, c); err != nil {
		return DeprecateResult{}, err
	}
	prev, err := l.histOf(k).Deprecate(in.ID, in.Message)
	if err != nil {
		return DeprecateResult{}, historyError(err)
	}
	res := DeprecateResult{ID: in.ID}
	if in.Message != "" {
		res.Deprecated = &in.Message
	}
	if prev != "" {
		res.Previous = &prev
	}
	if prev == in.Message {
		return res, nil
	}
	l.log.Info("deprecation changed", "kind", string(k), "id", in.ID, "message", in.Message)
	l.cl.Announce(ctx, l.scopeOf(k), cluster.OpLabel, in.ID)
	l.announce(k, registry.OpDeprecate, in.ID)
	if k == KindSkill {
		l.emit(ctx, Event{Op: EventDeprecate, ID: in.ID, Message: in.Message})
	}
	return res, nil
}

// putSkill stores body as skill id's served row and newest version (one
// durable commit for both), updates the mirror and announces it.
func (l *Local) putSkill(ctx context.Context, id, body string, meta history.Meta) (registry.StoredSkill, history.Version, bool, error) {
	var row registry.StoredSkill
	serve := func(content string, v history.Version) ([]kv.Write, func()) {
		at, err := time.Parse(time.RFC3339Nano, v.RegisteredAt)
		if err != nil {
			at = time.Now()
		}
		r := registry.NewStoredSkill(id, content, at)
		if content == body {
			row = r
		}
		value := appendSkillRow(make([]byte, 0, len(content)+len(content)/16+2*len(id)+64), r)
		// The mirror follows under the id's history lock: mirror order is write order.
		return []kv.Write{{Scope: l.cfg.Scopes.Skills, Key: id, Value: value}}, func() { l.skills.Put(r) }
	}
	v, created, err := l.hist.skills.Record(id, body, meta, serve)
	if err != nil {
		return row, v, false, err
	}
	if row.ID == "" { // another instance's newer version is served
		row = registry.NewStoredSkill(id, body, time.Now())
		row.RegisteredAt = v.RegisteredAt
	}
	l.log.Info("skill registered", "id", id, "bytes", len(body), "version", v.Version, "new_version", created, "signed_by", meta.SignedBy, "key", meta.Key)
	l.log.Debug("skill body", "id", id, "body", body)
	l.cl.Announce(ctx, l.cfg.Scopes.Skills, cluster.OpSet, id)
	l.skillChanged(registry.OpRegister, id)
	return row, v, created, nil
}

// putPrompt is putSkill for a prompt.
func (l *Local) putPrompt(ctx context.Context, name, desc, fid string, args []registry.PromptArgument, meta history.Meta) (registry.StoredPrompt, history.Version, bool, error) {
	row := registry.NewStoredPrompt(name, desc, fid, args, time.Now())
	def := promptDefinition(desc, fid, args)
	serve := func(content string, _ history.Version) ([]kv.Write, func()) {
		r := row
		if content != def {
			// Another instance's newer definition is served.
			d, f, a, err := decodePromptDefinition(content)
			if err != nil {
				return nil, nil
			}
			r = registry.NewStoredPrompt(name, d, f, a, time.Now())
		}
		value, err := json.Marshal(r)
		if err != nil {
			return nil, nil
		}
		return []kv.Write{{Scope: l.cfg.Scopes.Prompts, Key: name, Value: value}}, func() { l.prompts.changed(name, &r) }
	}
	v, created, err := l.hist.prompts.Record(name, def, meta, serve)
	if err != nil {
		return row, v, false, err
	}
	l.log.Info("prompt registered", "name", row.Name, "function_id", row.FunctionID, "version", v.Version, "new_version", created, "signed_by", meta.SignedBy, "key", meta.Key)
	l.cl.Announce(ctx, l.cfg.Scopes.Prompts, cluster.OpSet, name)
	l.promptChanged(registry.OpRegister, name)
	return row, v, created, nil
}

// readSelected serves iii://{id}@{selector}: a registry version of a
// published skill (yanked: its reason), or a skill with files pinned by the
// digest of its manifest while it holds exactly that content.
func (l *Local) readSelected(ctx context.Context, id, selector string) (body, yanked string, err error) {
	if err := registry.ValidateID(id); err != nil {
		return "", "", invalidArguments(err)
	}
	if err := registry.CheckSelector(selector); err != nil {
		return "", "", invalidArguments(err)
	}
	if e, ok := l.lookup(id); ok && len(e.Files) > 0 && strings.HasPrefix(selector, registry.DigestSelectorPrefix) {
		body, err := pinnedFolderBody(e, selector)
		if err == nil && l.obs.reads.Load() != nil {
			l.counted(ctx, id, l.entryVersion(e))
		}
		return body, "", err
	}
	body, p, err := l.hist.skills.Select(id, selector)
	if err != nil {
		return "", "", historyError(err)
	}
	l.countedSelected(ctx, id, p.Version)
	return body, p.Yanked, nil
}

// pinnedFolderBody is the body of skill e (with files) when the digest of
// its manifest is the one selector pins and its main file still holds the
// bytes that digest covers; NOT_FOUND otherwise.
func pinnedFolderBody(e *catalog.Entry, selector string) (string, error) {
	sum := skillsext.ContentDigest(e)
	if selector != registry.DigestSelectorPrefix+hex.EncodeToString(sum[:]) {
		return "", notFound(fmt.Errorf("skill %s has no content with %s (it serves sha256:%s)", e.ID, selector, hex.EncodeToString(sum[:])))
	}
	main, ok := e.MainFile()
	if !ok {
		return e.Body.String()
	}
	b, err := main.Content.Bytes()
	if err != nil {
		return "", err
	}
	if catalog.DigestOf(b) != main.Digest {
		return "", notFound(fmt.Errorf("skill %s has no content with %s: %s changed on disk since", e.ID, selector, main.Path))
	}
	return e.Body.String()
}

// servedVersion returns the body a read without a selector serves for a
// published skill when it is not the newest version (the serve label's,
// or the newest one not yanked), or ok false to serve the row.
func (l *Local) servedVersion(id string) (string, bool, error) {
	n := l.hist.skills.Served(id, l.hist.serveLabel)
	if n == 0 {
		return "", false, nil
	}
	body, err := l.hist.skills.Content(id, n)
	if err != nil {
		return "", false, historyError(err)
	}
	return body, true, nil
}

// skillVersion is the MCP Skills extension's reader of registry versions
// (skill://<id>@<selector>/SKILL.md), with the version's facts.
func (l *Local) skillVersion(id, selector string) (string, skillsext.Facts, bool) {
	if registry.CheckSelector(selector) != nil {
		return "", skillsext.Facts{}, false
	}
	body, p, err := l.hist.skills.Select(id, selector)
	if err != nil {
		return "", skillsext.Facts{}, false
	}
	return body, l.factsOf(KindSkill, id, p.Version), true
}

// factsOf are the facts of version n of id.
func (l *Local) factsOf(k Kind, id string, n int) skillsext.Facts {
	f, _ := l.histOf(k).Facts(id, n)
	return skillsext.Facts{Version: n, SignedBy: f.SignedBy, Key: f.Key, Yanked: f.Yanked, Deprecated: l.histOf(k).Deprecated(id)}
}

// servedFacts are the facts of the version a published skill serves, the
// one whose body has digest d (only the deprecation when history has no
// such version, as for content written straight into state).
func (l *Local) servedFacts(id string, d catalog.Digest) (skillsext.Facts, bool) {
	h := l.hist.skills
	n, _, _ := h.Serving(id, l.hist.serveLabel)
	f, ok := h.Facts(id, n)
	if n == 0 || !ok || f.SHA256 != "" && f.SHA256 != hex.EncodeToString(d[:]) {
		return skillsext.Facts{Deprecated: h.Deprecated(id)}, true
	}
	return l.factsOf(KindSkill, id, n), true
}

// SkillVersionBody returns the body of a version (number, label or
// sha256:<hex>) of skill id from the history, for the Skills Protocol's
// `version`.
func (l *Local) SkillVersionBody(id, selector string) (string, bool) {
	body, _, ok := l.skillVersion(id, selector)
	return body, ok
}

// SkillFacts are the facts describe_skill shows of a published skill:
// the version selector reads (the served one when selector is ""), who
// signed it, its yank and the skill's deprecation. ok is false for an id
// without history or a selector that names no version.
func (l *Local) SkillFacts(id, selector string) (history.Facts, bool) {
	h := l.hist.skills
	var n int
	if selector == "" {
		n, _, _ = h.Serving(id, l.hist.serveLabel)
	} else if registry.CheckSelector(selector) == nil {
		if p, err := h.Resolve(id, selector); err == nil {
			n = p.Version
		}
	}
	if n == 0 {
		return history.Facts{}, false
	}
	return h.Facts(id, n)
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
