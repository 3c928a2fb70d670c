package core

import (
	"context"
	"encoding/hex"
	"math"
	"strings"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/search"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// searchDescriptionMax bounds each result's description (characters).
const searchDescriptionMax = 300

// searchable is what search covers: what the registry serves (built-in
// skills are not registry content, see listed).
func searchable(e *catalog.Entry) bool { return e.Origin.Kind != catalog.OriginBuiltin }

// Search implements Registry: the catalog ranked by the index of package
// search, which follows the catalog's changes.
func (l *Local) Search(_ context.Context, in SearchInput) (SearchOutput, error) {
	res := l.search.Search(search.Query{Text: in.Query, Limit: in.Limit, Namespace: in.Namespace})
	out := SearchOutput{Query: in.Query, Results: make([]SearchResult, 0, len(res.Hits)), LowConfidence: res.LowConfidence}
	for _, h := range res.Hits {
		e, ok := l.lookup(h.ID)
		if !ok { // removed since the search; the index follows shortly
			continue
		}
		r := resultOf(e, h.Score)
		if isPublished(e) {
			r.Deprecated = l.hist.skills.Deprecated(e.ID)
		}
		out.Results = append(out.Results, r)
	}
	if len(out.Results) == 0 {
		out.LowConfidence = true
	}
	return out, nil
}

func resultOf(e *catalog.Entry, score float64) SearchResult {
	title := e.Title
	if !e.HasTitle {
		title = e.ID
		if n, ok := e.Frontmatter.Fields.String("name"); ok && n != "" {
			title = n
		}
	}
	desc := e.Description
	if d, ok := e.Frontmatter.Fields.String("description"); ok && strings.TrimSpace(d) != "" {
		desc = strings.Join(strings.Fields(d), " ")
	}
	sum := skillsext.ContentDigest(e)
	return SearchResult{ID: e.ID, Title: title, Description: registry.TruncateChars(desc, searchDescriptionMax),
		Origin: string(e.Origin.Kind), URI: registry.SkillURI(e.ID), Score: math.Round(score*1000) / 1000,
		SHA256: hex.EncodeToString(sum[:])}
}
