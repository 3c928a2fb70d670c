package skillsprotocol

import (
	"slices"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// SkillHistory returns the body of a version of a skill published over iii
// (the registry's history, docs/versions.md): selector is a version number
// ("3") or a label ("production"). ok is false when the skill has no such
// version or label.
type SkillHistory func(id, selector string) (body string, ok bool)

// SetSkillHistory lets describe_skill and read_skill_file serve the
// registry's versions of published skills: their `version` then also takes
// a registry version number or label. Safe to call at any time.
func (r *Runtime) SetSkillHistory(h SkillHistory) { r.history.Store(&h) }

// SkillVersionList lists the registry versions of published skill id,
// newest first, as version selectors ("3", "2", …).
type SkillVersionList func(id string) []string

// SetSkillVersionList makes describe_skill list the registry versions of
// published skills in `versions`, after the catalog's own (the served
// content, "0.0.0"): every version describe_skill and read_skill_file
// accept. Safe to call at any time.
func (r *Runtime) SetSkillVersionList(l SkillVersionList) { r.historyList.Store(&l) }

// registryVersions are the registry versions of id when it is a published
// skill, else nil.
func (r *Runtime) registryVersions(id string, have []string) []string {
	l := r.historyList.Load()
	if l == nil {
		return nil
	}
	if e, ok := r.entry(id); !ok || e.Origin.Kind != catalog.OriginPublished {
		return nil
	}
	var out []string
	for _, v := range (*l)(id) {
		if !slices.Contains(have, v) {
			out = append(out, v)
		}
	}
	return out
}

// historyView is version (a registry version or label) of the published
// skill id, as a view; ok false when there is none.
func (r *Runtime) historyView(id, version string) (skillView, bool) {
	h := r.history.Load()
	if h == nil {
		return skillView{}, false
	}
	e, ok := r.entry(id)
	if !ok || e.Origin.Kind != catalog.OriginPublished {
		return skillView{}, false
	}
	body, ok := (*h)(id, version)
	if !ok {
		return skillView{}, false
	}
	old := &catalog.Entry{ID: e.ID, Version: version, Kind: e.Kind, Body: catalog.Inline(body),
		BodyDigest: catalog.DigestOfString(body), Origin: e.Origin, Modified: e.Modified}
	old.SetSummary(body)
	v := viewOf(old)
	v.selector = version
	return v, true
}

// SkillFacts are the registry's facts of a version of a published skill
// (docs/trust.md): its number, who signed it (SignedBy "" unsigned or
// untrusted, Key "" unsigned), its yank reason, the skill's deprecation.
type SkillFacts struct {
	Version                           int
	SignedBy, Key, Yanked, Deprecated string
}

// SkillFactsReader returns the facts of the version of published skill
// id that selector reads ("": the served one); ok false when unknown.
type SkillFactsReader func(id, selector string) (SkillFacts, bool)

// SetSkillFacts makes describe_skill show who signed a published skill's
// version, its yank and the skill's deprecation. Safe to call at any time.
func (r *Runtime) SetSkillFacts(f SkillFactsReader) { r.facts.Store(&f) }

// addFacts adds v's registry facts to a describe_skill answer:
// registry_version, signed_by (null when unsigned), key, yanked,
// deprecated.
func (r *Runtime) addFacts(out map[string]any, v skillView) {
	f := r.facts.Load()
	if f == nil || v.e.Origin.Kind != catalog.OriginPublished {
		return
	}
	facts, ok := (*f)(v.e.ID, v.selector)
	if !ok {
		return
	}
	out["registry_version"] = facts.Version
	out["signed_by"] = nil
	if facts.SignedBy != "" {
		out["signed_by"] = facts.SignedBy
	}
	if facts.Key != "" {
		out["key"] = facts.Key
	}
	if facts.Yanked != "" {
		out["yanked"] = facts.Yanked
	}
	if facts.Deprecated != "" {
		out["deprecated"] = facts.Deprecated
	}
}
