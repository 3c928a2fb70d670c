package search

import (
	"math"
	"slices"
	"strings"

	"github.com/kljensen/snowball/english"
)

// plainBM25 is the baseline the evaluation reports beside our ranking:
// Okapi BM25 (k1 = 1.2, b = 0.75) over one field, the id, description and
// body joined, words lower-cased and split at anything not a letter or
// digit, English stop words dropped; stemmed only when asked.
func plainBM25(docs []corpusDoc, stem bool) func(string) []string {
	tokens := func(s string) []string {
		var out []string
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWordRune(r) }) {
			if english.IsStopWord(w) {
				continue
			}
			if stem {
				w = english.Stem(w, false)
			}
			out = append(out, w)
		}
		return out
	}
	tf := make([]map[string]int, len(docs))
	lens := make([]float64, len(docs))
	df := map[string]int{}
	total := 0.0
	for i, d := range docs {
		tf[i] = map[string]int{}
		for _, t := range tokens(d.id + " " + d.fields.Description + " " + d.fields.Body) {
			if tf[i][t] == 0 {
				df[t]++
			}
			tf[i][t]++
			lens[i]++
		}
		total += lens[i]
	}
	avg := total / float64(len(docs))
	n := float64(len(docs))
	return func(q string) []string {
		scores := make([]float64, len(docs))
		for _, t := range tokens(q) {
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			for i := range docs {
				if f := float64(tf[i][t]); f > 0 {
					scores[i] += idf * f * 2.2 / (f + 1.2*(0.25+0.75*lens[i]/avg))
				}
			}
		}
		order := make([]int, len(docs))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			if scores[a] != scores[b] {
				if scores[a] > scores[b] {
					return -1
				}
				return 1
			}
			return strings.Compare(docs[a].id, docs[b].id)
		})
		var out []string
		for _, i := range order[:5] {
			if scores[i] > 0 {
				out = append(out, docs[i].id)
			}
		}
		return out
	}
}
