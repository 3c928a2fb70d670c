package search

import (
	"os"
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

// TestTune grid-searches the ranking parameters on the dev split only
// (SEARCH_TUNE=1); the test split is not looked at.
func TestTune(t *testing.T) {
	if os.Getenv("SEARCH_TUNE") == "" {
		t.Skip("SEARCH_TUNE=1 to tune")
	}
	docs := loadCorpus(t)
	var dev []evalQuery
	for _, q := range loadQueries(t, newAnalyzer()) {
		if q.split == "dev" {
			dev = append(dev, q)
		}
	}
	x := New()
	for _, d := range docs {
		_ = x.Put(d.id, d.fields)
	}
	rank := func(q string) []string {
		var ids []string
		for _, h := range x.Search(Query{Text: q, Limit: 5}).Hits {
			ids = append(ids, h.ID)
		}
		return ids
	}
	saved := [...]float32{metaWeight, coordPower, relatedWeight, fieldWeight[fName], fieldWeight[fDesc], fieldWeight[fTitle], fieldWeight[fHead]}
	defer func() {
		metaWeight, coordPower, relatedWeight = saved[0], saved[1], saved[2]
		fieldWeight[fName], fieldWeight[fDesc], fieldWeight[fTitle], fieldWeight[fHead] = saved[3], saved[4], saved[5], saved[6]
	}()
	best := 0.0
	for _, mw := range []float32{1, 2, 3, 4} {
		for _, cp := range []float32{0.5, 1, 1.5, 2, 3} {
			for _, rw := range []float32{0.2, 0.3, 0.4, 0.6} {
				for _, nw := range []float32{3, 6, 10} {
					for _, dw := range []float32{2, 3, 5} {
						metaWeight, coordPower, relatedWeight, fieldWeight[fName], fieldWeight[fDesc] = mw, cp, rw, nw, dw
						s := evaluate(dev, rank)
						if v := s["all"] + s["para"]; v > best {
							best = v
							t.Logf("dev all %.3f para %.3f: meta %v coord %v related %v name %v desc %v", s["all"], s["para"], mw, cp, rw, nw, dw)
						}
					}
				}
			}
		}
	}
}

// TestTune2 explores saturation and length normalisation on the dev split.
func TestTune2(t *testing.T) {
	if os.Getenv("SEARCH_TUNE") == "" {
		t.Skip("SEARCH_TUNE=1 to tune")
	}
	docs := loadCorpus(t)
	var dev []evalQuery
	for _, q := range loadQueries(t, newAnalyzer()) {
		if q.split == "dev" {
			dev = append(dev, q)
		}
	}
	x := New()
	for _, d := range docs {
		_ = x.Put(d.id, d.fields)
	}
	rank := func(q string) []string {
		var ids []string
		for _, h := range x.Search(Query{Text: q, Limit: 5}).Hits {
			ids = append(ids, h.ID)
		}
		return ids
	}
	savedB, savedW := fieldB, fieldWeight
	defer func() { fieldB, fieldWeight = savedB, savedW }()
	base := evaluate(dev, rank)
	t.Logf("current: dev all %.3f para %.3f", base["all"], base["para"])
	for _, bb := range []float32{0.5, 0.75, 0.9} {
		for _, bd := range []float32{0.2, 0.5, 0.8} {
			for _, hw := range []float32{0.5, 1.5, 3} {
				for _, tw := range []float32{2, 3, 5} {
					fieldB[fBody], fieldB[fDesc], fieldWeight[fHead], fieldWeight[fTitle] = bb, bd, hw, tw
					s := evaluate(dev, rank)
					if s["all"]+s["para"] > base["all"]+base["para"]+0.01 {
						t.Logf("dev all %.3f para %.3f: bodyB %v descB %v head %v title %v", s["all"], s["para"], bb, bd, hw, tw)
					}
				}
			}
		}
	}
}
