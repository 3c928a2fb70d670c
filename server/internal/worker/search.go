package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/search"
)

// Bounds of a search request.
const (
	DefaultSearchLimit   = 10
	MaxSearchLimit       = 100
	MaxSearchQueryChars  = 1000
	searchDescriptionMax = 300 // characters of each result's description
)

const searchDescription = "Search the skill catalog (published, skills folders, bundles) by what you want to do, " +
	"in your own words: returns the best-matching skills ranked by relevance ({id, title, description, origin, uri, score}), " +
	"and low_confidence: true when nothing matches the query well. Then read a result with skill::fetch {\"uri\": uri}. " +
	"Prefer this to reading the whole iii://skills index when the catalog is large."

var searchRequestFormat = json.RawMessage(`{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "SearchSkillsInput",
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "What you want to do, in a few words (\"shrink images for the web\")."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": "Most results returned."},
    "namespace": {"type": "string", "description": "Only skills with this id or under it (\"iii\" keeps iii and iii/…)."}
  },
  "required": ["query"]
}`)

var searchResponseFormat = json.RawMessage(`{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "SearchSkillsOutput",
  "type": "object",
  "properties": {
    "query": {"type": "string"},
    "results": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "origin": {"type": "string", "enum": ["published", "folder", "bundle"]},
        "uri": {"type": "string"},
        "score": {"type": "number"}
      },
      "required": ["id", "title", "description", "origin", "uri", "score"]
    }},
    "low_confidence": {"type": "boolean"}
  },
  "required": ["query", "results", "low_confidence"]
}`)

// SearchInput is a decoded search request.
type SearchInput struct {
	Query     string
	Limit     int
	Namespace string
}

// SearchResult is one ranked skill.
type SearchResult struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Origin      string  `json:"origin"`
	URI         string  `json:"uri"`
	Score       float64 `json:"score"`
}

// SearchOutput is the answer of skills::search.
type SearchOutput struct {
	Query         string         `json:"query"`
	Results       []SearchResult `json:"results"`
	LowConfidence bool           `json:"low_confidence"`
}

const searchShape = `expected {"query": "<words>", "limit": 1..100 (optional), "namespace": "<id prefix>" (optional)}`

// DecodeSearchInput checks a search request; every refusal says what was
// wrong and what is expected.
func DecodeSearchInput(data json.RawMessage) (SearchInput, error) {
	in := SearchInput{Limit: DefaultSearchLimit}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return in, fmt.Errorf("search input must be a JSON object, %s", searchShape)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return in, fmt.Errorf("search input is not valid JSON (%v), %s", err, searchShape)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		switch k {
		case "query":
			if json.Unmarshal(v, &in.Query) != nil {
				return in, fmt.Errorf("query must be a string of words, got %s", jsonKind(v))
			}
		case "limit":
			var f float64
			if json.Unmarshal(v, &f) != nil || f != math.Trunc(f) {
				return in, fmt.Errorf("limit must be an integer from 1 to %d, got %s", MaxSearchLimit, clipJSON(v))
			}
			if f < 1 || f > MaxSearchLimit {
				return in, fmt.Errorf("limit must be an integer from 1 to %d, got %s", MaxSearchLimit, clipJSON(v))
			}
			in.Limit = int(f)
		case "namespace":
			if json.Unmarshal(v, &in.Namespace) != nil {
				return in, fmt.Errorf("namespace must be a string (a skill id prefix such as \"iii\"), got %s", jsonKind(v))
			}
			if in.Namespace != "" {
				if err := registry.ValidateID(in.Namespace); err != nil {
					return in, fmt.Errorf("namespace %q is not a skill id prefix: %v", in.Namespace, err)
				}
			}
		default:
			if strings.HasPrefix(k, "_") { // the engine's own keys (_caller_worker_id)
				continue
			}
			return in, fmt.Errorf("unknown field %q in search input, %s", k, searchShape)
		}
	}
	if _, ok := raw["query"]; !ok {
		return in, fmt.Errorf("query is required, %s", searchShape)
	}
	if strings.TrimSpace(in.Query) == "" {
		return in, errors.New("query is empty: say in a few words what the skill should do (\"shrink images for the web\")")
	}
	if n := utf8.RuneCountInString(in.Query); n > MaxSearchQueryChars {
		return in, fmt.Errorf("query too long (%d chars; max %d)", n, MaxSearchQueryChars)
	}
	return in, nil
}

func jsonKind(v json.RawMessage) string {
	switch b := bytes.TrimSpace(v); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '"':
		return "a string"
	case b[0] == '{':
		return "an object"
	case b[0] == '[':
		return "an array"
	case b[0] == 'n':
		return "null"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	default:
		return "the number " + string(b)
	}
}

func clipJSON(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// searchable is what search covers: what the registry serves (built-in
// skills are not registry content, see listed).
func searchable(e *catalog.Entry) bool { return e.Origin.Kind != catalog.OriginBuiltin }

func (w *Worker) searchSkills(_ context.Context, data json.RawMessage) (any, error) {
	in, err := DecodeSearchInput(data)
	if err != nil {
		return nil, invalidArguments(err)
	}
	res := w.search.Search(search.Query{Text: in.Query, Limit: in.Limit, Namespace: in.Namespace})
	out := SearchOutput{Query: in.Query, Results: make([]SearchResult, 0, len(res.Hits)), LowConfidence: res.LowConfidence}
	for _, h := range res.Hits {
		e, ok := w.lookup(h.ID)
		if !ok { // removed since the search; the index follows shortly
			continue
		}
		out.Results = append(out.Results, resultOf(e, h.Score))
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
	return SearchResult{ID: e.ID, Title: title, Description: registry.TruncateChars(desc, searchDescriptionMax),
		Origin: string(e.Origin.Kind), URI: registry.SkillURI(e.ID), Score: math.Round(score*1000) / 1000}
}

// registerSearch declares skills::search and skill::search and starts
// indexing the catalog (once, however often Register runs).
func (w *Worker) registerSearch() error {
	w.indexOnce.Do(func() { w.stopIndex = w.search.Follow(w.cat, searchable) })
	for _, id := range []string{rules.FnSkillsSearch, rules.FnSkillSearch} {
		if _, err := w.client.RegisterFunction(id, w.searchSkills, iii.RegisterFunctionOptions{
			Description: searchDescription, RequestFormat: searchRequestFormat, ResponseFormat: searchResponseFormat,
		}); err != nil {
			return err
		}
	}
	return nil
}

// Close stops following the catalog for search (the index is left as it
// is). The worker's functions keep answering.
func (w *Worker) Close() {
	w.indexOnce.Do(func() {}) // a later Register must not start following
	if w.stopIndex != nil {
		w.stopIndex()
	}
}
