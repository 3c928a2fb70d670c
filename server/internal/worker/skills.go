package worker

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

func (w *Worker) registerSkill(ctx context.Context, data json.RawMessage) (any, error) {
	in, err := registry.DecodeRegisterSkillInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	if err := registry.ValidateSkillRegistration(in.ID, in.Skill); err != nil {
		return nil, invalidArguments(err)
	}
	if err := w.claim(ctx, "skill", in.ID, w.callerOf(ctx, data)); err != nil {
		return nil, err
	}
	if err := checkMeta(rules.FnSkillsRegister, in.Message, in.Author); err != nil {
		return nil, err
	}
	// A changed body also becomes the skill's next version (versions.go).
	row, _, _, err := w.putSkill(ctx, in.ID, in.Skill, history.Meta{Message: in.Message, Author: in.Author})
	if err != nil {
		return nil, err
	}
	return registry.RegisterSkillOutput{ID: row.ID, RegisteredAt: row.RegisteredAt}, nil
}

func (w *Worker) unregisterSkill(ctx context.Context, data json.RawMessage) (any, error) {
	id, err := registry.DecodeUnregisterSkillInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	if err := registry.ValidateID(id); err != nil {
		return nil, invalidArguments(err)
	}
	if err := w.claim(ctx, "skill", id, w.callerOf(ctx, data)); err != nil {
		return nil, err
	}
	removed, err := kv.Delete(ctx, w.state, w.cfg.Scopes.Skills, id)
	if err != nil {
		return nil, sdkError(err)
	}
	w.release("skill", id)
	w.skills.remove(id)
	if removed {
		w.cl.Announce(ctx, w.cfg.Scopes.Skills, cluster.OpDelete, id)
		w.log.Info("skill unregistered", "id", id)
		w.notify(ctx, w.skillSubs, registry.SkillChange{Op: registry.OpUnregister, ID: id})
	}
	return registry.UnregisterSkillOutput{ID: id, Removed: removed}, nil
}

// served lists what the registry serves, sorted by id: the catalog's
// effective entries (published skills beside folder skills) once the
// published mirror is loaded; before that, the skills scope read from
// state (undecodable rows dropped, like upstream) with the folder skills
// it does not shadow.
func (w *Worker) served(ctx context.Context) ([]*catalog.Entry, error) {
	if w.skills.isReady() {
		return w.listed(), nil
	}
	raw, err := w.state.List(ctx, w.cfg.Scopes.Skills)
	if err != nil {
		return nil, sdkError(err)
	}
	byID := map[string]*catalog.Entry{}
	for _, r := range raw {
		if s, err := registry.DecodeStoredSkill(r); err == nil {
			byID[s.ID] = w.skills.entryFor(s) // what a read serves (the serve label)
		}
	}
	for _, e := range w.listed() {
		if _, ok := byID[e.ID]; ok {
			continue
		}
		if f := w.folderEntry(e); f != nil {
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
func (w *Worker) folderEntry(e *catalog.Entry) *catalog.Entry {
	if e.SourceName() != PublishedSource {
		return e
	}
	for _, h := range w.cat.Holders(e.ID) {
		if h.SourceName() != PublishedSource {
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
func originOf(e *catalog.Entry) *skillOrigin {
	if isPublished(e) {
		return nil
	}
	return &skillOrigin{Kind: string(e.Origin.Kind), Path: e.Origin.Path, Source: e.Origin.Source}
}

// skillOrigin marks a listed skill that a worker did not publish, and a
// skill another source's entry hides.
type skillOrigin struct {
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"`
	Source string `json:"source"`
}

// skillListRow is a skills::list row. Published skills keep v0.2.2's
// exact three keys; other origins add "origin", and a row that hides
// another source's skill at its id adds "shadows".
type skillListRow struct {
	Bytes        int           `json:"bytes"`
	ID           string        `json:"id"`
	Origin       *skillOrigin  `json:"origin,omitempty"`
	RegisteredAt string        `json:"registered_at"`
	Shadows      []skillOrigin `json:"shadows,omitempty"`
}

func (w *Worker) listSkills(ctx context.Context, data json.RawMessage) (any, error) {
	if err := registry.DecodeEmptyInput(data, "ListSkillsInput"); err != nil {
		return nil, invalidArguments(err)
	}
	entries, err := w.served(ctx)
	if err != nil {
		return nil, err
	}
	shadows := map[string][]skillOrigin{}
	for _, sh := range w.cat.Shadowed() {
		for _, e := range sh.Entries {
			shadows[sh.ID] = append(shadows[sh.ID], skillOrigin{Kind: string(e.Origin.Kind), Path: e.Origin.Path, Source: e.Origin.Source})
		}
	}
	rows := make([]skillListRow, 0, len(entries))
	for _, e := range entries {
		row := skillListRow{ID: e.ID, Origin: originOf(e), Bytes: int(e.Body.Size())}
		if row.Origin == nil {
			row.RegisteredAt = servedAt(e)
		} else if !e.Modified.IsZero() { // unknown: "", like iii-directory's modified_at
			row.RegisteredAt = registry.Timestamp(e.Modified)
		}
		if w.skills.isReady() {
			row.Shadows = shadows[e.ID]
		}
		rows = append(rows, row)
	}
	return struct {
		Skills []skillListRow `json:"skills"`
	}{rows}, nil
}

// resource is a resources-list entry; skills a worker did not publish
// carry their origin kind ("folder", "bundle", "builtin").
type resource struct {
	registry.Resource
	Origin string `json:"origin,omitempty"`
}

func (w *Worker) resourcesList(ctx context.Context, data json.RawMessage) (any, error) {
	if err := registry.DecodeEmptyInput(data, "EmptyInput"); err != nil {
		return nil, invalidArguments(err)
	}
	entries, err := w.served(ctx)
	if err != nil {
		// Upstream swallows the state error: the index entry alone.
		w.log.Warn("skills::resources-list: listing skills failed", "err", err)
		entries = nil
	}
	out := make([]resource, 0, len(entries)+1)
	out = append(out, resource{Resource: registry.IndexResource()})
	for _, e := range entries {
		r := resource{Resource: registry.SkillResource(e.IndexEntry())}
		if o := originOf(e); o != nil {
			r.Origin = o.Kind
		}
		out = append(out, r)
	}
	return struct {
		Resources []resource `json:"resources"`
	}{out}, nil
}

func (w *Worker) resourcesTemplates(_ context.Context, data json.RawMessage) (any, error) {
	if err := registry.DecodeEmptyInput(data, "EmptyInput"); err != nil {
		return nil, invalidArguments(err)
	}
	return registry.Templates(), nil
}

func (w *Worker) resourcesRead(ctx context.Context, data json.RawMessage) (any, error) {
	uri, err := registry.DecodeReadResourceInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	text, mime, err := w.read(ctx, uri)
	if err != nil {
		return nil, err
	}
	return registry.NewReadResult(uri, mime, text), nil
}

// read resolves one iii:// URI to its text and MIME type (docs/reference/skills-worker.md §2.2).
func (w *Worker) read(ctx context.Context, uri string) (text, mime string, err error) {
	target, err := registry.ParseURI(uri)
	if err != nil {
		return "", "", invalidArguments(err)
	}
	switch target.Kind {
	case registry.TargetIndex:
		return w.renderIndex(ctx), registry.MimeMarkdown, nil
	case registry.TargetSkill:
		if text, mime, ok, err := w.skillFile(target.ID); ok {
			return text, mime, err
		}
		if id, sel, ok, err := splitSkillSelector(target.ID); err != nil || ok {
			if err != nil {
				return "", "", err
			}
			body, err := w.readSelected(id, sel)
			return body, registry.MimeMarkdown, err
		}
		body, err := w.skillBody(ctx, target.ID)
		return body, registry.MimeMarkdown, err
	default:
		return w.readSection(ctx, target.FunctionID)
	}
}

// renderedIndex caches the iii://skills body for one catalog generation.
type renderedIndex struct {
	gen  uint64
	body string
}

func (w *Worker) renderIndex(ctx context.Context) string {
	if w.skills.isReady() {
		gen := w.cat.Generation() // before List: a newer list only re-renders sooner
		if c := w.index.Load(); c != nil && c.gen == gen {
			return c.body
		}
		body := renderEntries(w.listed())
		w.index.Store(&renderedIndex{gen: gen, body: body})
		return body
	}
	entries, err := w.served(ctx)
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

func (w *Worker) skillBody(ctx context.Context, id string) (string, error) {
	if err := registry.ValidateID(id); err != nil {
		return "", invalidArguments(err)
	}
	if w.skills.isReady() {
		e, ok := w.lookup(id)
		if !ok {
			return "", notFound(registry.ErrSkillNotFound(id))
		}
		if isPublished(e) {
			if body, ok, err := w.servedVersion(id); err != nil || ok {
				return body, err
			}
		}
		return e.Body.String()
	}
	raw, ok, err := w.state.Get(ctx, w.cfg.Scopes.Skills, id)
	if err != nil {
		return "", registry.ErrStateGet(sdkError(err))
	}
	if !ok {
		if e, ok := w.lookup(id); ok {
			if f := w.folderEntry(e); f != nil {
				return f.Body.String()
			}
		}
		return "", notFound(registry.ErrSkillNotFound(id))
	}
	row, err := registry.DecodeStoredSkill(raw)
	if err != nil {
		return "", registry.ErrDecodeSkill(id, err)
	}
	return row.Skill, nil
}

// skillFile serves iii://<skill>/<path>, a file of a skill that has files
// (an Agent Skills folder, a bundle), when id is not itself a served skill
// (see registry.SplitSkillFile). ok is false otherwise, and id is then
// read as an ordinary skill id with upstream's rules and messages.
func (w *Worker) skillFile(id string) (text, mime string, ok bool, err error) {
	// Lookup first: ValidateID of an id that is not one (iii://id@1, a
	// file path) builds an error message, which cost a selector read more
	// than the history read itself.
	if _, served := w.lookup(id); served && registry.ValidateID(id) == nil {
		return "", "", false, nil
	}
	var e *catalog.Entry
	_, file, ok := registry.SplitSkillFile(id, func(s string) bool {
		e, ok = w.lookup(s)
		return ok && len(e.Files) > 0
	})
	if !ok {
		return "", "", false, nil
	}
	return catalog.FileText(e, file)
}

// readSection triggers the function behind an iii://fn/… URI with {} and
// serves its output.
func (w *Worker) readSection(ctx context.Context, functionID string) (string, string, error) {
	if err := registry.CheckSection(functionID); err != nil {
		return "", "", invalidArguments(err)
	}
	out, err := w.triggerSection(ctx, functionID)
	if err != nil {
		return "", "", err
	}
	text, mime := registry.NormalizeSectionOutput(out)
	return text, mime, nil
}

func (w *Worker) fetchSkill(ctx context.Context, data json.RawMessage) (any, error) {
	in, err := registry.DecodeFetchInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	uris, err := registry.SelectFetchURIs(in.URI, in.URIs, !w.opts.StrictFetch)
	if err != nil {
		return nil, invalidArguments(err)
	}
	sections := make([]string, 0, len(uris))
	for _, u := range uris {
		text, _, err := w.read(ctx, u)
		if err != nil {
			return nil, err // the first failure aborts the batch, like upstream
		}
		sections = append(sections, registry.FormatFetchSection(u, text))
	}
	return registry.JoinFetchSections(sections), nil
}

// listed is what the iii registry surface lists: every effective catalog
// entry except the server's built-in skills (the Skills Protocol guide),
// which are not registry content and would change v0.2.2's listings.
func (w *Worker) listed() []*catalog.Entry {
	all := w.cat.List()
	out := all[:0:0]
	for _, e := range all {
		if e.Origin.Kind != catalog.OriginBuiltin {
			out = append(out, e)
		}
	}
	return out
}

// lookup is Get restricted to what the registry surface serves (see listed).
func (w *Worker) lookup(id string) (*catalog.Entry, bool) {
	e, ok := w.cat.Get(id)
	if !ok || e.Origin.Kind == catalog.OriginBuiltin {
		return nil, false
	}
	return e, true
}
