package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
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

// Searcher finds skills by what they do. FunctionSearcher asks the ranked
// index (skills::search); FilterSearcher is the plain fallback.
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

// FunctionSearcher asks the registry's ranked index through skills::search,
// as any client would (server/internal/search behind server/internal/worker).
type FunctionSearcher struct {
	Caller Caller
	// Timeout bounds one call (default 10 s).
	Timeout time.Duration
}

// maxFunctionHits is the most results skills::search returns at once.
const maxFunctionHits = 100

// Search implements Searcher.
func (f FunctionSearcher) Search(ctx context.Context, query string, limit int) (Results, error) {
	if strings.TrimSpace(query) == "" {
		return Results{}, nil
	}
	if limit <= 0 || limit > maxFunctionHits {
		limit = maxFunctionHits
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	data, err := json.Marshal(map[string]any{"query": query, "limit": limit})
	if err != nil {
		return Results{}, err
	}
	raw, err := f.Caller.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsSearch, Data: data, Timeout: timeout})
	if err != nil {
		return Results{}, fmt.Errorf("%s: %w", rules.FnSkillsSearch, err)
	}
	var out struct {
		Results []struct {
			ID    string  `json:"id"`
			Score float64 `json:"score"`
		} `json:"results"`
		LowConfidence bool `json:"low_confidence"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return Results{}, fmt.Errorf("%s answered unexpected JSON: %w", rules.FnSkillsSearch, err)
	}
	res := Results{Hits: make([]Hit, 0, len(out.Results)), LowConfidence: out.LowConfidence}
	for _, r := range out.Results {
		res.Hits = append(res.Hits, Hit{ID: r.ID, Score: r.Score})
	}
	return res, nil
}
