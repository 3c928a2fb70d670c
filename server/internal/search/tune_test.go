package search

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestShowMisses lists dev queries whose nDCG@5 is low (SEARCH_TUNE=1).
func TestShowMisses(t *testing.T) {
	if os.Getenv("SEARCH_TUNE") == "" {
		t.Skip("SEARCH_TUNE=1 to list misses")
	}
	docs := loadCorpus(t)
	qs := loadQueries(t, newAnalyzer())
	rank := ourRanking(t, docs)
	for _, q := range qs {
		if q.split != "dev" {
			continue
		}
		r := rank(q.text)
		if v := ndcgAt5(r, q.rel); v < 0.6 {
			t.Logf("%.2f %q para=%v got %v want %v", v, q.text, q.para, r, q.rel)
		}
	}
}

// TestTune grid-searches the weights of fields and of matching (SEARCH_TUNE=1).
func TestTune(t *testing.T) {
	tune(t,
		tuneParam{"meta", &metaWeight, []float32{1, 2, 3, 4}},
		tuneParam{"coord", &coordPower, []float32{0.5, 1, 1.5, 2, 3}},
		tuneParam{"related", &relatedWeight, []float32{0.2, 0.3, 0.4, 0.6}},
		tuneParam{"name", &fieldWeight[fName], []float32{3, 6, 10}},
		tuneParam{"desc", &fieldWeight[fDesc], []float32{2, 3, 5}})
}

// TestTune2 explores saturation and length normalisation (SEARCH_TUNE=1).
func TestTune2(t *testing.T) {
	tune(t,
		tuneParam{"bodyB", &fieldB[fBody], []float32{0.5, 0.75, 0.9}},
		tuneParam{"descB", &fieldB[fDesc], []float32{0.2, 0.5, 0.8}},
		tuneParam{"head", &fieldWeight[fHead], []float32{0.5, 1.5, 3}},
		tuneParam{"title", &fieldWeight[fTitle], []float32{2, 3, 5}})
}

// tuneParam is one ranking parameter of a grid search and the values it tries.
type tuneParam struct {
	name   string
	at     *float32
	values []float32
}

// tune grid-searches params on the dev split only (the test split is not
// looked at): it logs the current score, then each combination that beats
// the best so far, and restores the parameters afterwards. The index reads
// the parameters at query time, so one index serves every combination.
func tune(t *testing.T, params ...tuneParam) {
	if os.Getenv("SEARCH_TUNE") == "" {
		t.Skip("SEARCH_TUNE=1 to tune")
	}
	var dev []evalQuery
	for _, q := range loadQueries(t, newAnalyzer()) {
		if q.split == "dev" {
			dev = append(dev, q)
		}
	}
	rank := ourRanking(t, loadCorpus(t))
	for _, p := range params {
		defer func(saved float32) { *p.at = saved }(*p.at)
	}
	score := func() (evalScores, float64) { s := evaluate(dev, rank); return s, s["all"] + s["para"] }
	base, best := score()
	t.Logf("current: dev all %.3f para %.3f", base["all"], base["para"])
	var try func(i int)
	try = func(i int) {
		if i < len(params) {
			for _, v := range params[i].values {
				*params[i].at = v
				try(i + 1)
			}
			return
		}
		if s, v := score(); v > best {
			best = v
			var set []string
			for _, p := range params {
				set = append(set, fmt.Sprintf("%s %v", p.name, *p.at))
			}
			t.Logf("dev all %.3f para %.3f: %s", s["all"], s["para"], strings.Join(set, " "))
		}
	}
	try(0)
}
