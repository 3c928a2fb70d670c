package search

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// The evaluation set: real skills (testdata/corpus, from 12 public
// collections, licences beside them) and queries phrased the way users
// and agents ask (testdata/eval/queries.tsv) with graded judgements.
// Queries alternate between a dev split (parameters were tuned on it) and
// a test split (only reported); a query is "paraphrased" when it shares no
// word (after stemming) with the id of any skill graded 2 for it.

type evalQuery struct {
	text  string
	rel   map[string]int
	split string // "dev" or "test"
	para  bool
}

// corpusDoc is one skill of the corpus as the ranker and the baseline see it.
type corpusDoc struct {
	id     string
	fields Fields
}

func loadCorpus(tb testing.TB) []corpusDoc {
	tb.Helper()
	dirs, err := os.ReadDir("testdata/corpus")
	if err != nil {
		tb.Fatal(err)
	}
	var docs []corpusDoc
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join("testdata/corpus", d.Name(), "SKILL.md"))
		if err != nil {
			continue // NOTICE, licences
		}
		docs = append(docs, corpusDoc{id: d.Name(), fields: FieldsOf(entryOf(tb, d.Name(), string(raw)))})
	}
	return docs
}

// entryOf builds the catalog entry a skills folder would serve for a
// SKILL.md (frontmatter parsed, summary from the body).
func entryOf(tb testing.TB, id, content string) *catalog.Entry {
	e := &catalog.Entry{ID: id}
	body := content
	if yml, b, ok := catalog.SplitFrontmatter(content); ok {
		body = b
		if fm, err := catalog.ParseFrontmatter(yml); err == nil {
			e.Frontmatter = fm
		}
	}
	e.SetSummary(body)
	e.Body = catalog.Inline(body)
	return e
}

func loadQueries(tb testing.TB, an *analyzer) []evalQuery {
	tb.Helper()
	f, err := os.Open("testdata/eval/queries.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []evalQuery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, judged, ok := strings.Cut(line, "\t")
		if !ok {
			tb.Fatalf("queries.tsv: no tab in %q", line)
		}
		q := evalQuery{text: text, rel: map[string]int{}, split: "dev", para: true}
		if len(qs)%2 == 1 {
			q.split = "test"
		}
		qt := an.queryTerms(text)
		for _, j := range strings.Split(judged, ",") {
			id, g, _ := strings.Cut(j, ":")
			grade, err := strconv.Atoi(g)
			if err != nil {
				tb.Fatalf("queries.tsv: bad grade in %q", j)
			}
			q.rel[id] = grade
			if grade == 2 {
				an.terms(id, func(_ []byte, t string) {
					if slices.Contains(qt, t) {
						q.para = false
					}
				})
			}
		}
		qs = append(qs, q)
	}
	return qs
}

// ndcgAt5 scores a ranking against graded judgements (gain 2^g - 1).
func ndcgAt5(ranked []string, rel map[string]int) float64 {
	dcg := 0.0
	for i, id := range ranked[:min(5, len(ranked))] {
		dcg += (math.Pow(2, float64(rel[id])) - 1) / math.Log2(float64(i+2))
	}
	grades := make([]int, 0, len(rel))
	for _, g := range rel {
		grades = append(grades, g)
	}
	slices.Sort(grades)
	slices.Reverse(grades)
	idcg := 0.0
	for i, g := range grades[:min(5, len(grades))] {
		idcg += (math.Pow(2, float64(g)) - 1) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// evalScores are mean nDCG@5 values by subset.
type evalScores map[string]float64

func evaluate(qs []evalQuery, rank func(q string) []string) evalScores {
	sum, n := map[string]float64{}, map[string]int{}
	for _, q := range qs {
		v := ndcgAt5(rank(q.text), q.rel)
		keys := []string{"all", q.split}
		if q.para {
			keys = append(keys, "para", q.split+"/para")
		}
		for _, k := range keys {
			sum[k] += v
			n[k]++
		}
	}
	out := evalScores{}
	for k := range sum {
		out[k] = sum[k] / float64(n[k])
	}
	out["n/para"] = float64(n["para"])
	out["n/all"] = float64(n["all"])
	return out
}

func ourRanking(tb testing.TB, docs []corpusDoc) func(string) []string {
	x := New()
	for _, d := range docs {
		if err := x.Put(d.id, d.fields); err != nil {
			tb.Fatal(err)
		}
	}
	return func(q string) []string {
		var ids []string
		for _, h := range x.Search(Query{Text: q, Limit: 5}).Hits {
			ids = append(ids, h.ID)
		}
		return ids
	}
}

// evalFloors are a little below the measured scores (docs/search.md), so
// a change that makes ranking worse fails.
var evalFloors = evalScores{"all": 0.79, "para": 0.75, "test": 0.78, "test/para": 0.73}

func TestRelevance(t *testing.T) {
	docs := loadCorpus(t)
	qs := loadQueries(t, newAnalyzer())
	ours := evaluate(qs, ourRanking(t, docs))
	plain := evaluate(qs, plainBM25(docs, false))
	stemmed := evaluate(qs, plainBM25(docs, true))
	t.Logf("%d skills, %d queries (%v paraphrased)", len(docs), len(qs), ours["n/para"])
	t.Logf("%-22s %7s %7s %7s %7s %7s %7s", "nDCG@5", "all", "para", "dev", "dev/para", "test", "test/para")
	for _, r := range []struct {
		name string
		s    evalScores
	}{{"plain BM25", plain}, {"BM25 + stemming", stemmed}, {"ours", ours}} {
		t.Logf("%-22s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f", r.name, r.s["all"], r.s["para"], r.s["dev"], r.s["dev/para"], r.s["test"], r.s["test/para"])
	}
	for k, floor := range evalFloors {
		if ours[k] < floor {
			t.Errorf("nDCG@5 on %s = %.3f, below the floor %.3f", k, ours[k], floor)
		}
	}
}

// A confidence query is a task and whether some skill is for it.
type confidenceQuery struct {
	text   string
	rel    map[string]int // judgements, when answerable
	answer bool
}

// loadNoAnswer reads tasks no skill of the corpus is for, one a line.
func loadNoAnswer(tb testing.TB, file string) []confidenceQuery {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata/eval", file))
	if err != nil {
		tb.Fatal(err)
	}
	var out []confidenceQuery
	for _, q := range strings.Split(string(raw), "\n") {
		if q != "" && !strings.HasPrefix(q, "#") {
			out = append(out, confidenceQuery{text: q})
		}
	}
	return out
}

// loadHeldOut reads heldout.tsv: query<TAB>judgements, empty when no
// skill is for the task; a query is answerable when a skill is graded 2.
func loadHeldOut(tb testing.TB) []confidenceQuery {
	tb.Helper()
	raw, err := os.ReadFile("testdata/eval/heldout.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	var out []confidenceQuery
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, judged, ok := strings.Cut(line, "\t")
		if !ok {
			tb.Fatalf("heldout.tsv: no tab in %q", line)
		}
		q := confidenceQuery{text: text, rel: map[string]int{}}
		for _, j := range strings.Split(judged, ",") {
			if j == "" {
				continue
			}
			id, g, _ := strings.Cut(j, ":")
			grade, err := strconv.Atoi(g)
			if err != nil {
				tb.Fatalf("heldout.tsv: bad grade in %q", j)
			}
			q.rel[id] = grade
			q.answer = q.answer || grade == 2
		}
		if len(q.rel) > 0 && !q.answer {
			tb.Fatalf("heldout.tsv: %q has no skill graded 2 (leave such tasks out)", text)
		}
		out = append(out, q)
	}
	return out
}

// confidenceRates count low_confidence on one split.
type confidenceRates struct {
	answerable, flagged int // answerable queries, and those flagged low_confidence
	flaggedRight        int // flagged although the top hit was relevant
	noAnswer, caught    int // tasks no skill is for, and those flagged (or answered empty)
}

func (r confidenceRates) falseLow() float64   { return float64(r.flagged) / float64(r.answerable) }
func (r confidenceRates) caughtRate() float64 { return float64(r.caught) / float64(r.noAnswer) }

func (r confidenceRates) String() string {
	return fmt.Sprintf("low_confidence on %d of %d answerable (%.1f %%; %d with a relevant skill first), on %d of %d no-answer tasks (%.0f %%)",
		r.flagged, r.answerable, 100*r.falseLow(), r.flaggedRight, r.caught, r.noAnswer, 100*r.caughtRate())
}

func measureConfidence(tb testing.TB, x *Index, qs []confidenceQuery) confidenceRates {
	var r confidenceRates
	for _, q := range qs {
		res := x.Search(Query{Text: q.text, Limit: 5})
		if !q.answer {
			r.noAnswer++
			if res.LowConfidence {
				r.caught++
			} else {
				tb.Logf("confident answer to a task no skill is for: %q → %v", q.text, hitIDs(res))
			}
			continue
		}
		r.answerable++
		if res.LowConfidence {
			r.flagged++
			if len(res.Hits) > 0 && q.rel[res.Hits[0].ID] > 0 {
				r.flaggedRight++
			}
		}
	}
	return r
}

// The bounds of low_confidence's rates on each split (docs/search.md), a
// little worse than measured (tuning: 1.6 % and 86 %; held-out: 1.0 % and
// 48 %): a change to ranking or to the confidence rule that makes either
// rate worse past them fails. The held-out split was not tuned on; tasks
// close to the corpus's subjects that no skill is for ("set up a Kafka
// cluster") are the hard part for a ranker that matches words.
var confidenceBounds = map[string]struct{ maxFalseLow, minCaught float64 }{
	"tuning":   {maxFalseLow: 0.03, minCaught: 0.80},
	"held-out": {maxFalseLow: 0.04, minCaught: 0.40},
}

// TestLowConfidence: tasks no skill is for are answered empty or flagged,
// while answerable queries are not flagged, on the tuning split
// (queries.tsv; unanswerable.txt and tune-unanswerable.txt) and on the
// held-out split (heldout.tsv, written without the catalog in view).
func TestLowConfidence(t *testing.T) {
	docs := loadCorpus(t)
	x := New()
	for _, d := range docs {
		_ = x.Put(d.id, d.fields)
	}
	var tuning []confidenceQuery
	for _, q := range loadQueries(t, newAnalyzer()) {
		tuning = append(tuning, confidenceQuery{text: q.text, rel: q.rel, answer: true})
	}
	// Tasks from other walks of life (baking, cars) are all flagged.
	if r := measureConfidence(t, x, loadNoAnswer(t, "unanswerable.txt")); r.caught != r.noAnswer {
		t.Errorf("unanswerable.txt: %d of %d flagged low_confidence, want all", r.caught, r.noAnswer)
	}
	tuning = append(tuning, loadNoAnswer(t, "unanswerable.txt")...)
	tuning = append(tuning, loadNoAnswer(t, "tune-unanswerable.txt")...)
	for _, split := range []struct {
		name string
		qs   []confidenceQuery
	}{{"tuning", tuning}, {"held-out", loadHeldOut(t)}} {
		r := measureConfidence(t, x, split.qs)
		t.Logf("%s: %v", split.name, r)
		b := confidenceBounds[split.name]
		if r.falseLow() > b.maxFalseLow {
			t.Errorf("%s: low_confidence on %.1f %% of answerable queries, above the bound %.0f %%", split.name, 100*r.falseLow(), 100*b.maxFalseLow)
		}
		if r.caughtRate() < b.minCaught {
			t.Errorf("%s: only %.0f %% of tasks no skill is for flagged low_confidence, below the bound %.0f %%", split.name, 100*r.caughtRate(), 100*b.minCaught)
		}
	}
}
