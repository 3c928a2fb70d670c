package web

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/iii-skills/skills/server/internal/core"
)

// A skill's page is rendered once and served from memory while nothing it
// shows changed: each browser still gets its own CSRF value; a new body in
// the catalog, or a change of versions or labels, renders it again.
func TestSkillPageIsKeptUntilItChanges(t *testing.T) {
	var mu sync.Mutex
	var fire func(kind core.Kind, id string)
	subscribe := func(fn func(core.Kind, string)) func() {
		mu.Lock()
		defer mu.Unlock()
		fire = fn
		return func() {}
	}
	s, hc := newHistoryServer(t, Options{VersionChanges: subscribe}, published("a", "# A\n\nFirst body."))
	csrfOf := func(res *http.Response) string {
		for _, c := range res.Cookies() {
			if c.Name == csrfCookie {
				return c.Value
			}
		}
		return ""
	}
	var tokens []string
	for range 2 { // two browsers, no cookies yet
		res := get(t, s, "/skill/a", signedIn)
		html := bodyOf(t, res)
		tok := csrfOf(res)
		if res.StatusCode != http.StatusOK || tok == "" || !strings.Contains(html, `value="`+tok+`"`) || !strings.Contains(html, "First body.") {
			t.Fatalf("page: status %d, csrf %q in the page: %v", res.StatusCode, tok, strings.Contains(html, tok))
		}
		if strings.Contains(html, string(s.pages.placeholder)) {
			t.Fatal("the CSRF placeholder reached a browser")
		}
		tokens = append(tokens, tok)
	}
	if tokens[0] == tokens[1] {
		t.Fatal("two browsers got one CSRF value")
	}
	if n := len(hc.called("skills::versions")); n != 1 {
		t.Fatalf("the registry's versions were read %d times for two views of an unchanged page; want 1", n)
	}

	// A change of versions or labels renders the page again.
	mu.Lock()
	fire(core.KindSkill, "a")
	mu.Unlock()
	bodyOf(t, get(t, s, "/skill/a", signedIn))
	if n := len(hc.called("skills::versions")); n != 2 {
		t.Fatalf("after a versions change the versions were read %d times; want 2", n)
	}

	// So does a new body in the catalog.
	if err := s.cat.Source("published").Put(published("a", "# A\n\nSecond body.")); err != nil {
		t.Fatal(err)
	}
	if html := bodyOf(t, get(t, s, "/skill/a", signedIn)); !strings.Contains(html, "Second body.") || strings.Contains(html, "First body.") {
		t.Fatal("the page of a changed skill was served from memory")
	}
}
