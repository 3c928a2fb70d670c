package web

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
)

// Hit is one search result: a skill id and its score (higher is better).
type Hit struct {
	ID    string
	Score float64
}

// Results is one search's answer: the hits, best first, and whether even
// the best matches the query poorly (skills::search low_confidence, which
// the CLI and the MCP tool show too).
type Results struct {
	Hits          []Hit
	LowConfidence bool
}

// Searcher finds skills by what they do. RegistrySearcher asks the ranked
// index; FilterSearcher is the plain fallback.
type Searcher interface {
	Search(ctx context.Context, query string, limit int) (Results, error)
}

// FilterSearcher matches every word of the query, case-insensitively,
// against each skill's id, title and description; a word in the id counts
// most, then the title, then the description. Every hit matches every word,
// so it never reports low confidence.
type FilterSearcher struct {
	Catalog *catalog.Catalog
}

// Search implements Searcher.
func (f FilterSearcher) Search(ctx context.Context, query string, limit int) (Results, error) {
	words := strings.Fields(strings.ToLower(query))
	if len(words) == 0 {
		return Results{}, nil
	}
	var hits []Hit
	for i, e := range f.Catalog.List() {
		if i%1024 == 0 && ctx.Err() != nil {
			return Results{}, ctx.Err()
		}
		id, title, desc := strings.ToLower(e.ID), strings.ToLower(e.Title), strings.ToLower(e.Description)
		score := 0.0
		for _, w := range words {
			s := 0.0
			if strings.Contains(id, w) {
				s += 3
			}
			if strings.Contains(title, w) {
				s += 2
			}
			if strings.Contains(desc, w) {
				s++
			}
			if s == 0 {
				score = 0
				break
			}
			score += s
		}
		if score > 0 {
			hits = append(hits, Hit{ID: e.ID, Score: score})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return Results{Hits: hits}, nil
}

// RegistrySearcher asks the registry's ranked index (core.Registry.Search,
// the index of package search).
type RegistrySearcher struct {
	Registry core.Registry
}

// Search implements Searcher.
func (f RegistrySearcher) Search(ctx context.Context, query string, limit int) (Results, error) {
	if strings.TrimSpace(query) == "" {
		return Results{}, nil
	}
	if limit <= 0 || limit > core.MaxSearchLimit {
		limit = core.MaxSearchLimit
	}
	out, err := f.Registry.Search(ctx, core.SearchInput{Query: query, Limit: limit})
	if err != nil {
		return Results{}, fmt.Errorf("%s: %w", rules.FnSkillsSearch, err)
	}
	hits := make([]Hit, 0, len(out.Results))
	for _, r := range out.Results {
		hits = append(hits, Hit{ID: r.ID, Score: r.Score})
	}
	return Results{Hits: hits, LowConfidence: out.LowConfidence}, nil
}
