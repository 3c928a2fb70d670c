// Package search ranks the skill catalog for a task described in words:
// the index behind skills::search, skill::search, the MCP search_skills
// tool and `skills search`.
//
// # Index
//
// An Index holds one document per skill id with five fields: Name (the id
// and frontmatter name), Title (first H1), Description (frontmatter
// description or first paragraph), Headings (the body's ## headings) and
// Body. Text is split at anything that is not a letter or digit (so
// kebab-case, snake_case and path segments split) and at camelCase humps,
// lower-cased, English stop words dropped, and stemmed with the Snowball
// English (Porter2) stemmer of github.com/kljensen/snowball (MIT). A
// posting packs the document's slot and its per-field term frequencies
// into 32 bits, so the index stays near 0.3× the bodies' bytes.
//
// Put and Remove change one document: the cost of that document, not of
// the catalog. Follow loads a catalog and applies its change events in
// order (hot reload of skills folders, registrations, bundles) until
// stopped.
//
// # Ranking
//
// BM25F over the short fields (weighted: name 10, title 3, description 2,
// headings 0.5) saturated apart from BM25 over the body, so a long body
// cannot drown a name match; then multiplied by the square root of the
// share of the query's idf the skill matched. Paraphrases: related.txt,
// a hand-written table of related words (CC0), widens each query word to
// its group at weight 0.6 ("shrink images" also looks for compress,
// optimize, resize…). Parameters were tuned on the dev half of the
// evaluation set (testdata/eval) and reported on the test half.
//
// # Confidence
//
// Result.LowConfidence is set when nothing matched, or when the best hit's
// score per unit of the query's weight (the sum of its words' idf) is
// below LowConfidenceStrength: the query's words are in its body in
// passing, or not in it at all. Callers show it, so an agent is not handed
// a confident wrong answer. The rule was calibrated on one split of
// testdata/eval and is measured on a held-out split (TestLowConfidence).
package search
