package skillsext

import (
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// VersionReader returns the body of a registry version of a skill
// published over iii: selector is a version number ("3") or a label
// ("production"); ok is false when there is no such version or label.
type VersionReader func(id, selector string) (body string, ok bool)

// SetVersions serves the registry's versions of published skills at
// skill://<id>@<version>/SKILL.md (docs/versions.md), the same selectors
// as iii://<id>@<version>. Those paths are never listed (skills/list shows
// what is served), so a client that does not know the form meets none;
// one that asks gets an ordinary skill whose frontmatter name is still
// the id's last segment. Safe to call at any time.
func (v *View) SetVersions(r VersionReader) { v.versions.Store(&r) }

// versionView is the view of p = <id>@<selector> when id is a published
// skill with that version; ok false otherwise.
func (v *View) versionView(p string) (*view, bool) {
	r := v.versions.Load()
	if r == nil {
		return nil, false
	}
	id, sel, ok, err := registry.SplitSelector(p)
	if !ok || err != nil || registry.ValidateID(id) != nil {
		return nil, false
	}
	v.mu.RLock()
	cur, ok := v.byID[id]
	v.mu.RUnlock()
	if !ok || cur.folder != nil || cur.entry.Origin.Kind != catalog.OriginPublished {
		return nil, false
	}
	body, ok := (*r)(id, sel)
	if !ok {
		return nil, false
	}
	e := &catalog.Entry{ID: id, Kind: cur.entry.Kind, Body: catalog.Inline(body),
		BodyDigest: catalog.DigestOfString(body), Origin: cur.entry.Origin, Modified: cur.entry.Modified}
	e.SetSummary(body)
	sv := buildPublished(e)
	sv.path = p
	return sv, true
}
