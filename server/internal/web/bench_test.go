package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// tenThousand is a catalog of 10 000 skills in 100 namespaces, published
// by 50 workers (every row names its publisher).
func tenThousand(b *testing.B) *Server {
	entries := make([]*catalog.Entry, 0, 10000)
	pubs := fakePublishers{}
	var workers []string
	for i := range 50 {
		workers = append(workers, fmt.Sprintf(`{"id":"worker-%02d-0000","name":"publisher-%02d"}`, i, i))
	}
	for i := range 10000 {
		id := fmt.Sprintf("team-%02d/area-%d/skill-%05d", i%100, i%7, i)
		entries = append(entries, published(id,
			fmt.Sprintf("# Skill %d\n\nDoes task number %d for the team, with a description long enough to look real.", i, i)))
		pubs["skill "+id] = [2]string{fmt.Sprintf("worker-%02d-0000", i%50), ""}
	}
	s, _, fc := newTestServerWith(b, "", pubs, entries...)
	fc.answers["engine::workers::list"] = `{"workers":[` + strings.Join(workers, ",") + `]}`
	return s
}

func benchPage(b *testing.B, target string) {
	s := tenThousand(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1"+target, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	if per := b.Elapsed() / time.Duration(b.N); per > pageBudget {
		b.Errorf("%s took %v per page, over the %v budget", target, per, pageBudget)
	}
}

// pageBudget is the server time a page of a 10 000-skill catalog may take.
const pageBudget = 200 * time.Millisecond

// The catalog page of a 10 000-skill registry (target: ≤ 200 ms server time).
func BenchmarkIndex10K(b *testing.B) { benchPage(b, "/") }

// One namespace's last page.
func BenchmarkIndexNamespace10K(b *testing.B) { benchPage(b, "/?ns=team-42&page=2") }

// A search across 10 000 skills with the plain filter.
func BenchmarkSearch10K(b *testing.B) { benchPage(b, "/?q=task+team") }

// A skill page.
func BenchmarkSkill10K(b *testing.B) { benchPage(b, "/skill/team-07/area-0/skill-00007") }

// The catalog page right after a change (the tree order is rebuilt).
func BenchmarkIndexAfterChange10K(b *testing.B) {
	s := tenThousand(b)
	src := s.cat.Source("published")
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if err := src.Put(published("team-00/area-0/skill-00000", fmt.Sprintf("# Skill 0\n\nVersion %d.", i))); err != nil {
			b.Fatal(err)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	if per := b.Elapsed() / time.Duration(b.N); per > pageBudget {
		b.Errorf("a page after a change took %v, over the %v budget", per, pageBudget)
	}
}

// A published skill's page with 50 versions and a diff (the registry
// answered by an in-memory fake: this is the page's own cost).
func BenchmarkSkillVersions10K(b *testing.B) {
	s := tenThousand(b)
	hc := newHistoryCaller()
	for n := 3; n <= 50; n++ {
		hc.bodies[n] = fmt.Sprintf("# A\n\nVersion %d.\n", n)
	}
	s.opts.Registry, s.opts.Engine = over(hc), hc
	target := "/skill/team-07/area-0/skill-00007?from=1&to=50"
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1"+target, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	if per := b.Elapsed() / time.Duration(b.N); per > pageBudget {
		b.Errorf("%s took %v per page, over the %v budget", target, per, pageBudget)
	}
}
