package search

import (
	_ "embed"
	"slices"
	"strings"
)

//go:embed related.txt
var relatedTable string

// related maps a stem to the stems of every group it belongs to.
type related map[string][]string

// loadRelated reads the table: one comma-separated group per line, '#'
// comments. Each word is analysed like document text; a word that is a
// stop word (or analyses to several terms) is skipped in that group.
func loadRelated(a *analyzer, table string) related {
	out := related{}
	for _, line := range strings.Split(table, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		var group []string
		for _, w := range strings.Split(line, ",") {
			var terms []string
			a.terms(w, func(_ []byte, t string) { terms = append(terms, t) })
			if len(terms) == 1 && !slices.Contains(group, terms[0]) {
				group = append(group, terms[0])
			}
		}
		for _, t := range group {
			for _, u := range group {
				if u != t && !slices.Contains(out[t], u) {
					out[t] = append(out[t], u)
				}
			}
		}
	}
	return out
}
