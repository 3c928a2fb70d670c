package search

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"pdf-processing":            {"pdf", "processing"},
		"snake_case_name":           {"snake", "case", "name"},
		"parseHTTPResponse":         {"parse", "HTTP", "Response"},
		"camelCase iii/mcp-builder": {"camel", "Case", "iii", "mcp", "builder"},
		"k8s oauth2 S3":             {"k8s", "oauth2", "S3"},
		"café—naïve":                {"café", "naïve"},
		"":                          nil,
	} {
		var got []string
		splitWords(in, func(w string) { got = append(got, w) })
		if !slices.Equal(got, want) {
			t.Errorf("splitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerms(t *testing.T) {
	a := newAnalyzer()
	var got []string
	a.terms("Optimizing the Images_for webPages, a k8s deployment", func(_ []byte, t string) { got = append(got, t) })
	want := []string{"optim", "imag", "web", "page", "k8s", "deploy"}
	if !slices.Equal(got, want) {
		t.Fatalf("terms = %q, want %q", got, want)
	}
	if q := a.queryTerms("please help me optimize optimized images"); !slices.Equal(q, []string{"optim", "imag"}) {
		t.Fatalf("queryTerms = %q", q)
	}
}

func TestRelatedTable(t *testing.T) {
	x := New()
	if !slices.Contains(x.related["shrink"], "compress") || !slices.Contains(x.related["compress"], "shrink") {
		t.Fatalf("shrink ~ compress missing: %q", x.related["shrink"])
	}
	for term, rel := range x.related {
		if slices.Contains(rel, term) {
			t.Fatalf("%s is related to itself", term)
		}
	}
}

func hitIDs(r Result) []string {
	var ids []string
	for _, h := range r.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

func TestIndexPutReplaceRemove(t *testing.T) {
	x := New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(x.Put("image-optimization", Fields{Name: "image-optimization", Title: "Image optimization",
		Description: "Compress and resize PNG and JPEG images so web pages load fast.", Body: "Use sharp."}))
	must(x.Put("pdf-processing", Fields{Name: "pdf-processing", Description: "Extract text from PDF files.", Body: "Use pypdf to read pages."}))
	must(x.Put("team/deploy", Fields{Name: "team/deploy", Description: "Ship a release to production."}))

	r := x.Search(Query{Text: "shrink images for the web", Limit: 10})
	if ids := hitIDs(r); len(ids) == 0 || ids[0] != "image-optimization" || r.LowConfidence {
		t.Fatalf("paraphrase: %+v", r)
	}
	// Replacing a document replaces its terms.
	must(x.Put("pdf-processing", Fields{Name: "pdf-processing", Description: "Merge documents."}))
	if ids := hitIDs(x.Search(Query{Text: "pypdf", Limit: 10})); len(ids) != 0 {
		t.Fatalf("old terms still found: %v", ids)
	}
	if ids := hitIDs(x.Search(Query{Text: "merge documents", Limit: 10})); len(ids) == 0 || ids[0] != "pdf-processing" {
		t.Fatalf("new terms not found: %v", ids)
	}
	// Namespace and limit.
	if ids := hitIDs(x.Search(Query{Text: "release production images", Limit: 10, Namespace: "team"})); !slices.Equal(ids, []string{"team/deploy"}) {
		t.Fatalf("namespace: %v", ids)
	}
	if ids := hitIDs(x.Search(Query{Text: "release production images", Limit: 1})); len(ids) != 1 {
		t.Fatalf("limit: %v", ids)
	}
	// Nothing matches: empty and flagged; a partial match is flagged.
	if r := x.Search(Query{Text: "zygote xylophone", Limit: 10}); len(r.Hits) != 0 || !r.LowConfidence {
		t.Fatalf("no match: %+v", r)
	}
	if r := x.Search(Query{Text: "deploy zygote xylophone quokka", Limit: 10}); len(r.Hits) == 0 || !r.LowConfidence {
		t.Fatalf("weak match not flagged: %+v", r)
	}
	if !x.Remove("image-optimization") || x.Remove("image-optimization") {
		t.Fatal("Remove reports wrongly")
	}
	if ids := hitIDs(x.Search(Query{Text: "images", Limit: 10})); len(ids) != 0 {
		t.Fatalf("removed document found: %v", ids)
	}
	if x.Len() != 2 {
		t.Fatalf("Len = %d", x.Len())
	}
	// Every posting list stays sorted and free of removed slots.
	for tid, ps := range x.postings {
		for i, p := range ps {
			if !x.slots[p>>slotShift].live || i > 0 && ps[i-1]>>slotShift >= p>>slotShift {
				t.Fatalf("term %q: bad postings %v", x.terms[tid], ps)
			}
		}
	}
}

// TestFollowCatalog: the index follows catalog changes (put, replace,
// remove, a better-ranked source shadowing another) and skips what keep
// refuses; searches run concurrently with changes (go test -race).
func TestFollowCatalog(t *testing.T) {
	cat := catalog.New()
	folder, _ := cat.AddSource("folder", catalog.RankFolder)
	pub, _ := cat.AddSource("published", catalog.RankPublished)
	builtin, _ := cat.AddSource("builtin", catalog.RankBuiltin)
	entry := func(id, body string, kind catalog.OriginKind) *catalog.Entry {
		e := &catalog.Entry{ID: id, Body: catalog.Inline(body), Origin: catalog.Origin{Kind: kind}}
		e.SetSummary(body)
		return e
	}
	_ = folder.Put(entry("alpha", "# Alpha\n\nAbout quokkas.\n", catalog.OriginFolder))
	_ = builtin.Put(entry("guide", "# Guide\n\nAbout quokkas too.\n", catalog.OriginBuiltin))
	x := New()
	stop := x.Follow(cat, func(e *catalog.Entry) bool { return e.Origin.Kind != catalog.OriginBuiltin })
	defer stop()
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	found := func(q string) []string { return hitIDs(x.Search(Query{Text: q, Limit: 10})) }
	if ids := found("quokkas"); !slices.Equal(ids, []string{"alpha"}) {
		t.Fatalf("initial load: %v", ids)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() { // concurrent searches
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				x.Search(Query{Text: "quokkas wombats", Limit: 5})
			}
		}
	}()
	for i := range 50 {
		_ = folder.Put(entry(fmt.Sprintf("bulk/%d", i), "# Bulk\n\nwombats\n", catalog.OriginFolder))
	}
	_ = pub.Put(entry("alpha", "# Alpha\n\nAbout wombats now.\n", catalog.OriginPublished))
	wait("the published alpha replaces the folder's", func() bool {
		ids := found("wombats")
		return len(found("quokkas")) == 0 && slices.Contains(ids, "alpha") && x.Len() == 51
	})
	pub.Remove("alpha")
	wait("the folder's alpha is back", func() bool { return slices.Equal(found("quokkas"), []string{"alpha"}) })
	folder.Remove("alpha")
	wait("alpha is gone", func() bool { return len(found("quokkas")) == 0 })
	close(done)
	wg.Wait()
}

// A query of many distinct words is cut to maxQueryTerms terms.
func TestLongQueryIsBounded(t *testing.T) {
	var b []byte
	for i := range 200 {
		b = fmt.Appendf(b, "word%d ", i)
	}
	if n := len(newAnalyzer().queryTerms(string(b))); n != maxQueryTerms {
		t.Fatalf("%d terms, want %d", n, maxQueryTerms)
	}
}
