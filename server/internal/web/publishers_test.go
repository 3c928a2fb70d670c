package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// fakePublishers answers PublisherOf from a table keyed "kind id" (unit
// tests only; the worker's own is tested over a real engine).
type fakePublishers map[string][2]string

func (f fakePublishers) PublisherOf(kind, id string) (string, string, bool) {
	p, ok := f[kind+" "+id]
	return p[0], p[1], ok
}

const (
	teamWorker = "1a2b3c4d-0000-4000-8000-000000000001"
	goneWorker = "9f8e7d6c-0000-4000-8000-000000000002"
)

// publishedByServer serves three published skills: one from a connected
// worker, one under a scoped token, one from a worker that has left, and
// one whose publisher is not known (a registry restart).
func publishedByServer(t *testing.T) (*Server, *catalog.Source, fakePublishers, *fakeCaller) {
	pubs := fakePublishers{
		"skill team/doc":     {teamWorker, ""},
		"skill acme/crm":     {teamWorker, "acme"},
		"skill old/gone":     {goneWorker, ""},
		"prompt team-review": {teamWorker, ""},
	}
	s, src, fc := newTestServerWith(t, "", pubs,
		published("team/doc", "# Doc"), published("acme/crm", "# CRM"), published("old/gone", "# Gone"), published("before/restart", "# R"))
	fc.answers["engine::workers::list"] = `{"workers":[{"id":"` + teamWorker + `","name":"team-publisher"},{"id":"x","name":"other"}]}`
	return s, src, pubs, fc
}

func countCalls(fc *fakeCaller, fn string) int {
	n := 0
	for _, c := range fc.calls {
		if strings.HasPrefix(c, fn+" ") {
			n++
		}
	}
	return n
}

func TestPublishedSkillsNameTheirWorker(t *testing.T) {
	s, _, _, fc := publishedByServer(t)
	page := bodyOf(t, get(t, s, "/", nil))
	for _, want := range []string{
		`title="worker ` + teamWorker + `">published by team-publisher (1a2b3c4d)</span>`,
		`published by team-publisher (1a2b3c4d) with token acme`,
		`published by a worker that has left (9f8e7d6c)`,
		`published by a worker (skills::register)`, // unknown owner: today's text
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the catalog page lacks %q:\n%s", want, page)
		}
	}
	if n := countCalls(fc, "engine::workers::list"); n != 1 {
		t.Errorf("a page of four published rows called engine::workers::list %d times; want 1", n)
	}
	// Within namesMaxAge and with no change, the names are the cached ones.
	bodyOf(t, get(t, s, "/", nil))
	if n := countCalls(fc, "engine::workers::list"); n != 1 {
		t.Errorf("a second page within %v called engine::workers::list again (%d calls)", namesMaxAge, n)
	}

	skill := bodyOf(t, get(t, s, "/skill/acme/crm", nil))
	if !strings.Contains(skill, "published by team-publisher (1a2b3c4d) with token acme") {
		t.Errorf("the skill page does not name its publisher:\n%s", skill)
	}
}

func TestNamesAreReadAgainAfterAChange(t *testing.T) {
	s, src, pubs, fc := publishedByServer(t)
	bodyOf(t, get(t, s, "/", nil))
	// A new worker publishes: the catalog change marks the names stale.
	const newWorker = "5555aaaa-0000-4000-8000-000000000003"
	pubs["skill new/one"] = [2]string{newWorker, ""}
	fc.answers["engine::workers::list"] = `{"workers":[{"id":"` + newWorker + `","name":"newcomer"}]}`
	if err := src.Put(published("new/one", "# New")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !s.names.stale.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("the catalog change did not mark the worker names stale")
		}
		time.Sleep(time.Millisecond)
	}
	page := bodyOf(t, get(t, s, "/skill/new/one", nil))
	if !strings.Contains(page, "published by newcomer (5555aaaa)") {
		t.Errorf("after a change the page does not name the new publisher:\n%s", page)
	}
}

func TestPublisherWhoseNameCannotBeRead(t *testing.T) {
	s, _, _, fc := publishedByServer(t)
	delete(fc.answers, "engine::workers::list")
	page := bodyOf(t, get(t, s, "/skill/team/doc", nil))
	if !strings.Contains(page, "published by worker 1a2b3c4d (its name could not be read)") {
		t.Errorf("an unreadable worker list: the page says:\n%s", page)
	}
}

func TestPromptsNameTheirWorker(t *testing.T) {
	s, _, _, fc := publishedByServer(t)
	fc.answers["prompts::mcp-list"] = `{"prompts":[{"name":"team-review","description":"Reviews."},{"name":"unknown-owner","description":"U."}]}`
	page := bodyOf(t, get(t, s, "/prompts", nil))
	if !strings.Contains(page, `title="worker `+teamWorker+`">published by team-publisher (1a2b3c4d)</span>`) {
		t.Errorf("the prompts page does not name the prompt's publisher:\n%s", page)
	}
	if strings.Count(page, "published by") != 1 {
		t.Errorf("a prompt with no known publisher got a publisher line:\n%s", page)
	}
}

// Hostile content: a worker names itself; the name is text on the page,
// never markup, and cannot reorder the text around it.
func TestHostileWorkerNameRunsNothing(t *testing.T) {
	s, _, _, fc := publishedByServer(t)
	hostile := `<script>alert(1)</script><img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a>` + "\u202e\x00evil"
	b, _ := json.Marshal(hostile)
	fc.answers["engine::workers::list"] = `{"workers":[{"id":"` + teamWorker + `","name":` + string(b) + `}]}`
	fc.answers["prompts::mcp-list"] = `{"prompts":[{"name":"team-review","description":"Reviews."}]}`
	for _, p := range []string{"/", "/skill/team/doc", "/prompts", "/prompt/team-review"} {
		page := bodyOf(t, get(t, s, p, nil))
		// The origin text runs to its </span>: markup from the name would
		// open an element inside it.
		i := strings.Index(page, "published by ")
		if i < 0 {
			t.Fatalf("%s: no publisher on the page:\n%s", p, page)
		}
		origin := page[i : i+strings.Index(page[i:], "</span>")]
		if strings.Contains(origin, "<") || hostileMarkup(origin) != "" {
			t.Errorf("%s: a hostile worker name became markup: %s", p, origin)
		}
		if !strings.Contains(page, "published by &lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the hostile name is not shown escaped:\n%s", p, origin)
		}
		if strings.ContainsAny(page, "\u202e\x00") {
			t.Errorf("%s: a control or bidi character of the name reached the page", p)
		}
	}
}
