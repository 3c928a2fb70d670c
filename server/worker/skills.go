package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/iii-skills/skills/server/registry"
)

func (w *Worker) registerSkill(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		ID    string `json:"id"`
		Skill string `json:"skill"`
	}
	if err := decodeInput(data, "RegisterSkillInput", &in, "id", "skill"); err != nil {
		return nil, err
	}
	if err := registry.ValidateSkillRegistration(in.ID, in.Skill); err != nil {
		return nil, err
	}
	row := registry.NewStoredSkill(in.ID, in.Skill, time.Now())
	if err := w.state.set(ctx, w.cfg.Scopes.Skills, in.ID, row); err != nil {
		return nil, sdkError(err)
	}
	w.skills.put(row)
	w.log.Info("skill registered", "id", row.ID, "bytes", len(row.Skill))
	w.log.Debug("skill body", "id", row.ID, "body", row.Skill)
	w.notify(ctx, w.skillSubs, registry.SkillChange{Op: "register", ID: in.ID})
	return registry.RegisterSkillOutput{ID: row.ID, RegisteredAt: row.RegisteredAt}, nil
}

func (w *Worker) unregisterSkill(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decodeInput(data, "UnregisterSkillInput", &in, "id"); err != nil {
		return nil, err
	}
	if err := registry.ValidateID(in.ID); err != nil {
		return nil, err
	}
	old, err := w.state.delete(ctx, w.cfg.Scopes.Skills, in.ID)
	if err != nil {
		return nil, sdkError(err)
	}
	w.skills.remove(in.ID)
	removed := old != nil
	if removed {
		w.log.Info("skill unregistered", "id", in.ID)
		w.notify(ctx, w.skillSubs, registry.SkillChange{Op: "unregister", ID: in.ID})
	}
	return registry.UnregisterSkillOutput{ID: in.ID, Removed: removed}, nil
}

// storedSkills lists the skills scope from the cache, or from state while the
// cache is not loaded (undecodable rows dropped, like upstream).
func (w *Worker) storedSkills(ctx context.Context) ([]registry.StoredSkill, error) {
	if rows, ok := w.skills.list(); ok {
		return rows, nil
	}
	raw, err := w.state.list(ctx, w.cfg.Scopes.Skills)
	if err != nil {
		return nil, sdkError(err)
	}
	rows := make([]registry.StoredSkill, 0, len(raw))
	for _, r := range raw {
		if s, err := registry.DecodeStoredSkill(r); err == nil {
			rows = append(rows, s)
		}
	}
	return rows, nil
}

// indexEntries is the summary of every skill, from the cache or from state.
func (w *Worker) indexEntries(ctx context.Context) ([]registry.IndexEntry, error) {
	if entries, ok := w.skills.entries(); ok {
		return entries, nil
	}
	rows, err := w.storedSkills(ctx)
	if err != nil {
		return nil, err
	}
	entries := make([]registry.IndexEntry, 0, len(rows))
	for _, r := range rows {
		entries = append(entries, registry.NewIndexEntry(r.ID, r.Skill))
	}
	return entries, nil
}

func (w *Worker) listSkills(ctx context.Context, data json.RawMessage) (any, error) {
	if err := decodeInput(data, "ListSkillsInput", &struct{}{}); err != nil {
		return nil, err
	}
	rows, err := w.storedSkills(ctx)
	if err != nil {
		return nil, err
	}
	return registry.NewSkillList(rows), nil
}

func (w *Worker) resourcesList(ctx context.Context, data json.RawMessage) (any, error) {
	if err := decodeInput(data, "EmptyInput", &struct{}{}); err != nil {
		return nil, err
	}
	entries, err := w.indexEntries(ctx)
	if err != nil {
		// Upstream swallows the state error: the index entry alone.
		w.log.Warn("skills::resources-list: listing skills failed", "err", err)
		entries = nil
	}
	return registry.NewResourcesList(entries), nil
}

func (w *Worker) resourcesTemplates(_ context.Context, data json.RawMessage) (any, error) {
	if err := decodeInput(data, "EmptyInput", &struct{}{}); err != nil {
		return nil, err
	}
	return registry.Templates(), nil
}

func (w *Worker) resourcesRead(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		URI string `json:"uri"`
	}
	if err := decodeInput(data, "ReadResourceInput", &in, "uri"); err != nil {
		return nil, err
	}
	text, mime, err := w.read(ctx, in.URI)
	if err != nil {
		return nil, err
	}
	return registry.NewReadResult(in.URI, mime, text), nil
}

// read resolves one iii:// URI to its text and MIME type (reference §2.2).
func (w *Worker) read(ctx context.Context, uri string) (text, mime string, err error) {
	target, err := registry.ParseURI(uri)
	if err != nil {
		return "", "", err
	}
	switch target.Kind {
	case registry.TargetIndex:
		return w.renderIndex(ctx), registry.MimeMarkdown, nil
	case registry.TargetSkill:
		body, err := w.skillBody(ctx, target.ID)
		return body, registry.MimeMarkdown, err
	default:
		return w.readSection(ctx, target.FunctionID)
	}
}

func (w *Worker) renderIndex(ctx context.Context) string {
	if body, ok := w.skills.renderIndex(); ok {
		return body
	}
	rows, err := w.storedSkills(ctx)
	if err != nil {
		return registry.RenderIndexError(err.Error())
	}
	entries := make([]registry.IndexEntry, 0, len(rows))
	for _, r := range rows {
		entries = append(entries, registry.NewIndexEntry(r.ID, r.Skill))
	}
	return registry.RenderIndex(entries)
}

func (w *Worker) skillBody(ctx context.Context, id string) (string, error) {
	if err := registry.ValidateID(id); err != nil {
		return "", err
	}
	if row, found, ready := w.skills.get(id); ready {
		if !found {
			return "", registry.ErrSkillNotFound(id)
		}
		return row.Skill, nil
	}
	raw, err := w.state.get(ctx, w.cfg.Scopes.Skills, id)
	if err != nil {
		return "", registry.ErrStateGet(sdkError(err))
	}
	if raw == nil {
		return "", registry.ErrSkillNotFound(id)
	}
	row, err := registry.DecodeStoredSkill(raw)
	if err != nil {
		return "", registry.ErrDecodeSkill(id, err)
	}
	return row.Skill, nil
}

// readSection triggers the function behind an iii://fn/… URI with {} and
// serves its output.
func (w *Worker) readSection(ctx context.Context, functionID string) (string, string, error) {
	if err := registry.CheckSection(functionID); err != nil {
		return "", "", err
	}
	out, err := w.client.Trigger(ctx, triggerRequest(functionID, json.RawMessage("{}"), w.cfg.StateTimeout()))
	if err != nil {
		return "", "", registry.ErrTrigger(functionID, sdkError(err))
	}
	text, mime := registry.NormalizeSectionOutput(out)
	return text, mime, nil
}

func (w *Worker) fetchSkill(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		URI  *string  `json:"uri"`
		URIs []string `json:"uris"`
	}
	if err := decodeInput(data, "FetchSkillInput", &in); err != nil {
		return nil, err
	}
	uris, err := registry.SelectFetchURIs(in.URI, in.URIs, !w.opts.StrictFetch)
	if err != nil {
		return nil, err
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
