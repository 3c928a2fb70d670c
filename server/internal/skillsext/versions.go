package skillsext

import (
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// VersionReader returns the body of a registry version of a skill
// published over iii and its facts: selector is a version number ("3"), a
// label ("production") or a content pin ("sha256:<hex>"); ok is false
// when there is no such version.
type VersionReader func(id, selector string) (body string, f Facts, ok bool)

// FactsReader returns the facts of the version of published skill id
// whose body has sha256 d; ok is false when none is known.
type FactsReader func(id string, d catalog.Digest) (Facts, bool)

// SetFacts makes listings carry the registry's facts of published skills
// (version, signer, yank, deprecation). Safe to call at any time.
func (v *View) SetFacts(r FactsReader) { v.facts.Store(&r) }

// SetVersions serves the registry's versions of published skills at
// skill://<id>@<version>/SKILL.md (docs/versions.md), the same selectors
// as iii://<id>@<version>. Those paths are never listed (skills/list shows
// what is served), so a client that does not know the form meets none;
// one that asks gets an ordinary skill whose frontmatter name is still
// the id's last segment. Safe to call at any time.
func (v *View) SetVersions(r VersionReader) { v.versions.Store(&r) }

// versionView is the view of p = <id>@<selector>: a registry version of a
// published skill, or a skill with files pinned by the digest of its
// manifest (@sha256:<hex>) while it holds exactly that content; ok false
// otherwise.
func (v *View) versionView(p string) (*view, bool) {
	id, sel, ok, err := registry.SplitSelector(p)
	if !ok || err != nil || registry.ValidateID(id) != nil || registry.CheckSelector(sel) != nil {
		return nil, false
	}
	cur, ok := v.lookup(id) // the catalog first, as for the id itself
	if !ok {
		return nil, false
	}
	if cur.folder != nil {
		return cur.pinned(p, sel)
	}
	r := v.versions.Load()
	if r == nil || cur.entry.Origin.Kind != catalog.OriginPublished {
		return nil, false
	}
	body, f, ok := (*r)(id, sel)
	if !ok {
		return nil, false
	}
	e := &catalog.Entry{ID: id, Kind: cur.entry.Kind, Body: catalog.Inline(body),
		BodyDigest: catalog.DigestOfString(body), Origin: cur.entry.Origin, Modified: cur.entry.Modified}
	e.SetSummary(body)
	sv := buildPublished(e)
	sv.path, sv.facts = p, &f
	return sv, true
}

// pinned is the folder view sv served at path p = <id>@sha256:<hex> when
// its manifest has that digest; its files are checked against their
// digests as they are read (pinnedFile).
func (sv *view) pinned(p, sel string) (*view, bool) {
	if sel != registry.DigestSelectorPrefix+sv.folder.SHA256 {
		return nil, false
	}
	s := *sv.folder
	s.Path = p
	return &view{entry: sv.entry, folder: &s, path: p, exact: true}, true
}
