package worker

import (
	"time"

	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/registry"
)

// CatalogSource is the name of the catalog source the registry feeds with
// the skills workers register (rank catalog.RankPublished).
const CatalogSource = "published"

// publishedEntry is a registered skill as the catalog holds it.
func publishedEntry(s registry.StoredSkill) *catalog.Entry {
	e := &catalog.Entry{ID: s.ID, Body: catalog.Inline(s.Skill), BodyDigest: catalog.DigestOfString(s.Skill),
		Origin: catalog.Origin{Kind: catalog.OriginPublished, Source: CatalogSource}}
	if t, err := time.Parse(time.RFC3339Nano, s.RegisteredAt); err == nil {
		e.Modified = t
	}
	e.SetSummary(s.Skill)
	return e
}

// feedPut, feedRemove and feedReplace mirror the cache into the catalog's
// published source (when Options.Catalog is set). Rows the catalog refuses
// (ids upstream accepted before today's rules) stay out of it.
func (c *skillCache) feedPut(s registry.StoredSkill) {
	if c.pub != nil {
		_ = c.pub.Put(publishedEntry(s))
	}
}

func (c *skillCache) feedRemove(id string) {
	if c.pub != nil {
		c.pub.Remove(id)
	}
}

func (c *skillCache) feedReplace(rows map[string]registry.StoredSkill) {
	if c.pub == nil {
		return
	}
	entries := make([]*catalog.Entry, 0, len(rows))
	for _, s := range rows {
		if catalog.CheckEntry(&catalog.Entry{ID: s.ID}) == nil {
			entries = append(entries, publishedEntry(s))
		}
	}
	_ = c.pub.Replace(entries)
}
