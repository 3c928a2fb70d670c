package core

import (
	"context"
	"fmt"
	"slices"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/published"
	"github.com/iii-skills/skills/server/internal/registry"
)

// RegisterSkill implements Registry.
func (l *Local) RegisterSkill(ctx context.Context, c Caller, in registry.RegisterSkillInput) (registry.RegisterSkillOutput, error) {
	if err := registry.ValidateSkillRegistration(in.ID, in.Skill); err != nil {
		return registry.RegisterSkillOutput{}, invalidArguments(err)
	}
	if err := l.claim(ctx, "skill", in.ID, c); err != nil {
		return registry.RegisterSkillOutput{}, answer(err)
	}
	if err := checkMeta(rules.FnSkillsRegister, history.Meta{Message: in.Message, Author: in.Author}); err != nil {
		return registry.RegisterSkillOutput{}, err
	}
	if err := l.checkCaps(in.ID, in.Skill); err != nil {
		return registry.RegisterSkillOutput{}, err
	}
	// The signature is checked before anything is written (signing.go).
	meta, err := l.sign.verdict(rules.FnSkillsRegister, KindSkill, in.ID, in.Skill, in.Signature)
	if err != nil {
		return registry.RegisterSkillOutput{}, err
	}
	meta.Message, meta.Author = in.Message, in.Author
	_, existed := l.skills.Source().Get(in.ID, "")
	// A changed body also becomes the skill's next version (versions.go).
	row, v, created, err := l.putSkill(ctx, in.ID, in.Skill, meta)
	if err != nil {
		return registry.RegisterSkillOutput{}, answer(err)
	}
	if op := EventVersion; !existed || created {
		if !existed {
			op = EventRegister
		}
		l.emit(ctx, Event{Op: op, ID: in.ID, Version: v.Version, Author: in.Author, Message: in.Message})
	}
	return registry.RegisterSkillOutput{ID: row.ID, RegisteredAt: row.RegisteredAt}, nil
}

// UnregisterSkill implements Registry.
func (l *Local) UnregisterSkill(ctx context.Context, c Caller, id string) (registry.UnregisterSkillOutput, error) {
	if err := registry.ValidateID(id); err != nil {
		return registry.UnregisterSkillOutput{}, invalidArguments(err)
	}
	if err := l.claim(ctx, "skill", id, c); err != nil {
		return registry.UnregisterSkillOutput{}, answer(err)
	}
	removed, err := kv.Delete(ctx, l.state, l.cfg.Scopes.Skills, id)
	if err != nil {
		return registry.UnregisterSkillOutput{}, answer(sdkError(err))
	}
	l.release("skill", id)
	l.skills.Remove(id)
	if removed {
		l.cl.Announce(ctx, l.cfg.Scopes.Skills, cluster.OpDelete, id)
		l.log.Info("skill unregistered", "id", id)
		l.skillChanged(registry.OpUnregister, id)
		l.emit(ctx, Event{Op: EventUnregister, ID: id})
	}
	return registry.UnregisterSkillOutput{ID: id, Removed: removed}, nil
}

// served lists what the registry serves, sorted by id: the catalog's
// effective entries (published skills beside folder skills) once the
// published mirror is loaded; before that, the skills scope read from
// state (undecodable rows dropped, like upstream) with the folder skills
// it does not shadow.
func (l *Local) served(ctx context.Context) ([]*catalog.Entry, error) {
	if l.skills.Ready() {
		return l.listed(), nil
	}
	raw, err := l.state.List(ctx, l.cfg.Scopes.Skills)
	if err != nil {
		return nil, sdkError(err)
	}
	byID := map[string]*catalog.Entry{}
	for _, r := range raw {
		if s, err := registry.DecodeStoredSkill(r); err == nil {
			byID[s.ID] = l.skills.EntryFor(s) // what a read serves (the serve label)
		}
	}
	for _, e := range l.listed() {
		if _, ok := byID[e.ID]; ok {
			continue
		}
		if f := l.folderEntry(e); f != nil {
			byID[e.ID] = f
		}
	}
	out := make([]*catalog.Entry, 0, len(byID))
	for _, e := range byID {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *catalog.Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// folderEntry is the best entry at e's id that does not come from the
// published mirror (which is stale while it is not loaded), or nil.
func (l *Local) folderEntry(e *catalog.Entry) *catalog.Entry {
	if e.SourceName() != published.Source {
		return e
	}
	for _, h := range l.cat.Holders(e.ID) {
		if h.SourceName() != published.Source {
			return h
		}
	}
	return nil
}

// isPublished reports whether e came from the skills state scope.
func isPublished(e *catalog.Entry) bool {
	return e.Origin.Kind == catalog.OriginPublished
}

// originOf renders where a non-published entry comes from, for listings.
func originOf(e *catalog.Entry) *SkillOrigin {
	if isPublished(e) {
		return nil
	}
	return &SkillOrigin{Kind: string(e.Origin.Kind), Path: e.Origin.Path, Source: catalog.DisplaySource(e.Origin.Source)}
}

// ListSkills implements Registry.
func (l *Local) ListSkills(ctx context.Context) (SkillList, error) {
	entries, err := l.served(ctx)
	if err != nil {
		return SkillList{}, answer(err)
	}
	shadows := map[string][]SkillOrigin{}
	for _, sh := range l.cat.Shadowed() {
		for _, e := range sh.Entries {
			shadows[sh.ID] = append(shadows[sh.ID], SkillOrigin{Kind: string(e.Origin.Kind), Path: e.Origin.Path, Source: catalog.DisplaySource(e.Origin.Source)})
		}
	}
	ready := l.skills.Ready()
	rows := make([]SkillListRow, 0, len(entries))
	for _, e := range entries {
		row := SkillListRow{ID: e.ID, Origin: originOf(e), Bytes: int(e.Body.Size())}
		if row.Origin == nil {
			row.RegisteredAt = published.ServedAt(e)
		} else if !e.Modified.IsZero() { // unknown: "", like iii-directory's modified_at
			row.RegisteredAt = registry.Timestamp(e.Modified)
		}
		if ready {
			row.Shadows = shadows[e.ID]
		}
		rows = append(rows, row)
	}
	return SkillList{Skills: rows}, nil
}

// Resources implements Registry.
func (l *Local) Resources(ctx context.Context) (Resources, error) {
	entries, err := l.served(ctx)
	if err != nil {
		// Upstream swallows the state error: the index entry alone.
		l.log.Warn(rules.FnSkillsResourcesList+": listing skills failed", "err", err)
		entries = nil
	}
	out := make([]Resource, 0, len(entries)+1)
	out = append(out, Resource{Resource: registry.IndexResource()})
	for _, e := range entries {
		r := Resource{Resource: registry.SkillResource(e.IndexEntry())}
		if o := originOf(e); o != nil {
			r.Origin = o.Kind
		}
		out = append(out, r)
	}
	return Resources{Resources: out}, nil
}

// Templates implements Registry.
func (l *Local) Templates(context.Context) (registry.ResourceTemplates, error) {
	return registry.Templates(), nil
}

// Read implements Registry. A read pinned to a yanked version (iii://id@3,
// @sha256:…) carries the reason in the content's "yanked" (ours; no other
// read has the field).
func (l *Local) Read(ctx context.Context, uri string) (registry.ReadResult, error) {
	text, mime, yanked, err := l.read(ctx, uri)
	if err != nil {
		return registry.ReadResult{}, answer(err)
	}
	res := registry.NewReadResult(uri, mime, text)
	res.Contents[0].Yanked = yanked
	return res, nil
}

// read resolves one iii:// URI to its text and MIME type (docs/reference/skills-worker.md §2.2),
// and the yank reason of a pinned read of a yanked version.
func (l *Local) read(ctx context.Context, uri string) (text, mime, yanked string, err error) {
	target, err := registry.ParseURI(uri)
	if err != nil {
		return "", "", "", invalidArguments(err)
	}
	switch target.Kind {
	case registry.TargetIndex:
		return l.renderIndex(ctx), registry.MimeMarkdown, "", nil
	case registry.TargetSkill:
		if text, mime, ok, err := l.skillFile(ctx, target.ID); ok {
			return text, mime, "", err
		}
		if id, sel, ok, err := splitSkillSelector(target.ID); err != nil || ok {
			if err != nil {
				return "", "", "", err
			}
			body, yanked, err := l.readSelected(ctx, id, sel)
			return body, registry.MimeMarkdown, yanked, err
		}
		body, err := l.skillBody(ctx, target.ID)
		return body, registry.MimeMarkdown, "", err
	default:
		text, mime, err := l.readSection(ctx, target.FunctionID)
		return text, mime, "", err
	}
}

// renderedIndex caches the iii://skills body for one catalog generation.
type renderedIndex struct {
	gen  uint64
	body string
}

func (l *Local) renderIndex(ctx context.Context) string {
	if l.skills.Ready() {
		gen := l.cat.Generation() // before List: a newer list only re-renders sooner
		if c := l.index.Load(); c != nil && c.gen == gen {
			return c.body
		}
		body := renderEntries(l.listed())
		l.index.Store(&renderedIndex{gen: gen, body: body})
		return body
	}
	entries, err := l.served(ctx)
	if err != nil {
		return registry.RenderIndexError(err.Error())
	}
	return renderEntries(entries)
}

func renderEntries(entries []*catalog.Entry) string {
	ies := make([]registry.IndexEntry, len(entries))
	for i, e := range entries {
		ies[i] = e.IndexEntry()
	}
	return registry.RenderIndex(ies)
}

func (l *Local) skillBody(ctx context.Context, id string) (string, error) {
	if err := registry.ValidateID(id); err != nil {
		return "", invalidArguments(err)
	}
	if l.skills.Ready() {
		e, ok := l.lookup(id)
		if !ok {
			if _, _, withdrawn := l.hist.skills.Serving(id, l.hist.serveLabel); withdrawn != "" {
				if _, has := l.skills.Row(id); has {
					return "", notFound(fmt.Errorf("%s: every kept version of skill %s is yanked (%s)", registry.ErrSkillNotFound(id), id, withdrawn))
				}
			}
			return "", notFound(registry.ErrSkillNotFound(id))
		}
		l.countedEntry(ctx, e)
		if isPublished(e) {
			if body, ok, err := l.servedVersion(id); err != nil || ok {
				return body, err
			}
		}
		return e.Body.String()
	}
	raw, ok, err := l.state.Get(ctx, l.cfg.Scopes.Skills, id)
	if err != nil {
		return "", registry.ErrState(iii.StateGet, sdkError(err))
	}
	if !ok {
		if e, ok := l.lookup(id); ok {
			if f := l.folderEntry(e); f != nil {
				l.countedEntry(ctx, f)
				return f.Body.String()
			}
		}
		return "", notFound(registry.ErrSkillNotFound(id))
	}
	row, err := registry.DecodeStoredSkill(raw)
	if err != nil {
		return "", registry.ErrDecodeSkill(id, err)
	}
	l.counted(ctx, id, l.ReadVersion(id, ""))
	return row.Skill, nil
}

// skillFile serves iii://<skill>/<path>, a file of a skill that has files
// (an Agent Skills folder, a bundle), when id is not itself a served skill
// (see registry.SplitSkillFile). ok is false otherwise, and id is then
// read as an ordinary skill id with upstream's rules and messages.
func (l *Local) skillFile(ctx context.Context, id string) (text, mime string, ok bool, err error) {
	// Lookup first: ValidateID of an id that is not one (iii://id@1, a
	// file path) builds an error message, which cost a selector read more
	// than the history read itself.
	if _, served := l.lookup(id); served && registry.ValidateID(id) == nil {
		return "", "", false, nil
	}
	var e *catalog.Entry
	_, file, ok, err := registry.SplitSkillFile(id, func(s string) bool {
		e, ok = l.lookup(s)
		return ok && len(e.Files) > 0
	})
	if err != nil {
		return "", "", true, invalidArguments(err)
	}
	if !ok {
		return "", "", false, nil
	}
	// A path that is no file of the skill keeps upstream's id error
	// (ok false), which names the segment.
	if file == e.Main {
		l.countedEntry(ctx, e)
	}
	return catalog.FileText(e, file)
}

// readSection calls the function behind an iii://fn/… URI with {} (within
// the section limits) and serves its output.
func (l *Local) readSection(ctx context.Context, functionID string) (string, string, error) {
	if err := registry.CheckSection(functionID); err != nil {
		return "", "", invalidArguments(err)
	}
	out, err := l.sections.Call(ctx, functionID)
	if err != nil {
		return "", "", err
	}
	text, mime := registry.NormalizeSectionOutput(out)
	return text, mime, nil
}

// Fetch implements Registry.
func (l *Local) Fetch(ctx context.Context, in registry.FetchInput) (string, error) {
	uris, err := registry.SelectFetchURIs(in.URI, in.URIs, !l.opts.StrictFetch)
	if err != nil {
		return "", invalidArguments(err)
	}
	sections := make([]string, 0, len(uris))
	for _, u := range uris {
		text, _, _, err := l.read(ctx, u)
		if err != nil {
			return "", answer(err) // the first failure aborts the batch, like upstream
		}
		sections = append(sections, registry.FormatFetchSection(u, text))
	}
	return registry.JoinFetchSections(sections), nil
}

// listed is what the iii registry surface lists: every effective catalog
// entry except the server's built-in skills (the Skills Protocol guide),
// which are not registry content and would change v0.2.2's listings.
func (l *Local) listed() []*catalog.Entry {
	all := l.cat.List()
	out := all[:0:0]
	for _, e := range all {
		if e.Origin.Kind != catalog.OriginBuiltin {
			out = append(out, e)
		}
	}
	return out
}

// lookup is Get restricted to what the registry surface serves (see listed).
func (l *Local) lookup(id string) (*catalog.Entry, bool) {
	e, ok := l.cat.Get(id)
	if !ok || e.Origin.Kind == catalog.OriginBuiltin {
		return nil, false
	}
	return e, true
}
