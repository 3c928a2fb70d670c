package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
)

// historyCaller answers the registry's versions functions from a small
// in-memory history of one skill or prompt (unit tests only; the browser
// test drives the real registry).
type historyCaller struct {
	mu       sync.Mutex
	calls    []string
	bodies   map[int]string // version → content
	labels   map[string]int
	refuse   map[string]string // function → InvocationError message
	lastData map[string]json.RawMessage
	// trust: version 2 is signed and yanked, the id deprecated.
	trust bool
}

func newHistoryCaller() *historyCaller {
	return &historyCaller{bodies: map[int]string{1: "# A\n\nOne.\n", 2: "# A\n\nTwo <script>alert(1)</script>.\n"},
		labels: map[string]int{"staging": 1}, refuse: map[string]string{}, lastData: map[string]json.RawMessage{}}
}

func (h *historyCaller) Trigger(_ context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, req.FunctionID+" "+string(req.Data))
	h.lastData[req.FunctionID] = req.Data
	if msg, ok := h.refuse[req.FunctionID]; ok {
		return nil, &iii.InvocationError{FunctionID: req.FunctionID, Code: "invalid_argument", Message: msg}
	}
	var in map[string]any
	_ = json.Unmarshal(req.Data, &in)
	switch req.FunctionID {
	case "skills::versions", "prompts::versions":
		labels := map[string]int{"latest": len(h.bodies)}
		for k, v := range h.labels {
			labels[k] = v
		}
		var vs []map[string]any
		for n := len(h.bodies); n >= 1; n-- {
			var ls []string
			for k, v := range labels {
				if v == n {
					ls = append(ls, k)
				}
			}
			v := map[string]any{"version": n, "registered_at": time.Now().UTC().Format(time.RFC3339Nano), "bytes": len(h.bodies[n]),
				"sha256": strings.Repeat("ab", 32), "message": "change <b>" + string(rune('0'+n)) + "</b>", "author": "ci@acme", "labels": ls, "signed_by": nil}
			if h.trust && n == 2 {
				v["signed_by"], v["key"], v["yanked"] = "alice@example.com", "SHA256:k3y", "leaks a <token>"
			}
			if h.trust && n == 1 {
				v["key"] = "SHA256:untrusted"
			}
			vs = append(vs, v)
		}
		out := map[string]any{"id": "a", "latest": len(h.bodies), "labels": labels, "versions": vs}
		if h.trust {
			out["deprecated"] = "use <b>"
		}
		return json.Marshal(out)
	case "skills::resources-read":
		uri := in["uri"].(string)
		n := int(uri[len(uri)-1] - '0')
		return json.Marshal(map[string]any{"contents": []map[string]string{{"uri": uri, "mimeType": "text/markdown", "text": h.bodies[n]}}})
	case "skills::diff", "prompts::diff":
		return json.Marshal(map[string]any{"id": "a", "from": 1, "to": 2,
			"diff": "--- a@1\n+++ a@2\n@@ -1,3 +1,3 @@\n # A\n \n-One.\n+Two <script>alert(1)</script>.\n"})
	case "skills::label", "prompts::label":
		n := int(in["version"].(float64))
		h.labels[in["label"].(string)] = n
		return json.Marshal(map[string]any{"id": "a", "label": in["label"], "version": n})
	case "skills::rollback", "prompts::rollback":
		n := int(in["version"].(float64))
		h.bodies[len(h.bodies)+1] = h.bodies[n]
		return json.Marshal(map[string]any{"id": "a", "version": len(h.bodies), "created": true, "rolled_back": n})
	case "prompts::mcp-list":
		return json.RawMessage(`{"prompts":[{"name":"greet","description":"Greet someone.","arguments":[{"name":"who","required":true}]}]}`), nil
	}
	return nil, &iii.InvocationError{FunctionID: req.FunctionID, Code: "function_not_found", Message: "function not found"}
}

func (h *historyCaller) called(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func newHistoryServer(t *testing.T, opts Options, entries ...*catalog.Entry) (*Server, *historyCaller) {
	t.Helper()
	hc := newHistoryCaller()
	opts.Registry, opts.Engine = over(hc), hc
	s, _ := newServer(t, opts, "sekret", entries...)
	return s, hc
}

func signedIn(r *http.Request) { r.AddCookie(&http.Cookie{Name: tokenCookie, Value: "sekret"}) }

func TestSkillPageListsVersionsNewestFirst(t *testing.T) {
	s, hc := newHistoryServer(t, Options{ServeLabel: "staging", ProtectedLabels: []string{"production"}}, published("a", "# A\n\nTwo."))
	res := get(t, s, "/skill/a", signedIn)
	html := bodyOf(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d:\n%s", res.StatusCode, html)
	}
	if c := hc.called("skills::versions"); len(c) != 1 || c[0] != `skills::versions {"id":"a"}` {
		t.Fatalf("versions calls %v", c)
	}
	i2, i1 := strings.Index(html, `data-version="2"`), strings.Index(html, `data-version="1"`)
	if i2 < 0 || i1 < 0 || i2 > i1 {
		t.Fatalf("versions not listed newest first (2 at %d, 1 at %d)", i2, i1)
	}
	for _, want := range []string{"abababababab</code>", "change &lt;b&gt;2&lt;/b&gt;", "ci@acme", `>staging</span>`,
		"serve version 1 (label <code>staging</code>)", `href="/skill/a?version=1#body-h"`, `href="/skill/a?from=1&amp;to=2#diff-h"`,
		`action="/actions/label"`, `action="/actions/rollback"`, "<code>production</code>"} {
		if !strings.Contains(html, want) {
			t.Errorf("skill page lacks %s", want)
		}
	}
	if strings.Contains(html, "<b>2</b>") {
		t.Error("a version message reached the page unescaped")
	}
}

// Who signed each version, its yank and the skill's deprecation show in
// the versions section, escaped; reads without a version serve the newest
// one not yanked.
func TestSkillPageShowsSignersYanksAndDeprecation(t *testing.T) {
	s, hc := newHistoryServer(t, Options{}, published("a", "# A\n\nOne."))
	hc.trust = true
	html := bodyOf(t, get(t, s, "/skill/a", signedIn))
	for _, want := range []string{"signed by alice@example.com, key <code title=\"SHA256:k3y\">SHA256:k3y</code>",
		"signed by a key the registry does not trust: <code title=\"SHA256:untrusted\">SHA256:untrusted</code>",
		"yanked: leaks a &lt;token&gt;", "<strong>Deprecated:</strong> use &lt;b&gt;",
		"Reads without a version serve version 1 (newer versions are yanked)."} {
		if !strings.Contains(html, want) {
			t.Errorf("skill page lacks %s", want)
		}
	}
}

func TestOldVersionIsReadAsIIIURIAndSanitized(t *testing.T) {
	s, hc := newHistoryServer(t, Options{}, published("a", "# A\n\nNewest."))
	html := bodyOf(t, get(t, s, "/skill/a?version=2", signedIn))
	if c := hc.called("skills::resources-read"); len(c) != 1 || c[0] != `skills::resources-read {"uri":"iii://a@2"}` {
		t.Fatalf("read calls %v", c)
	}
	if !strings.Contains(html, "This is version 2") || !strings.Contains(html, "<p>Two <!-- raw HTML omitted -->alert(1)<!-- raw HTML omitted -->.</p>") {
		t.Fatalf("old version not rendered (sanitized):\n%s", html)
	}
	if strings.Contains(html, "Newest.") {
		t.Error("the newest body shows beside the old version")
	}
	html = bodyOf(t, get(t, s, "/skill/a?version="+url.QueryEscape("1/../x"), signedIn))
	if len(hc.called("skills::resources-read")) != 1 || !strings.Contains(html, "is not a version") {
		t.Fatalf("a bad selector reached the registry or was not explained: %v", hc.called("skills::resources-read"))
	}
}

func TestDiffIsEscapedAndStyled(t *testing.T) {
	s, hc := newHistoryServer(t, Options{}, published("a", "# A"))
	html := bodyOf(t, get(t, s, "/skill/a?from=1&to=latest", signedIn))
	if c := hc.called("skills::diff"); len(c) != 1 || c[0] != `skills::diff {"from":1,"id":"a","to":"latest"}` {
		t.Fatalf("diff calls %v", c)
	}
	for _, want := range []string{`<span class="d-del">-One.
</span>`, `<span class="d-add">&#43;Two &lt;script&gt;alert(1)&lt;/script&gt;.
</span>`,
		`<span class="d-hunk">@@ -1,3 &#43;1,3 @@
</span>`, `<span class="d-file">--- a@1
</span>`, `<span class="d-ctx"> # A
</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("diff lacks %s", want)
		}
	}
	view := html[strings.Index(html, `id="diff"`):]
	if bad := hostileMarkup(view[:strings.Index(view, "</section>")]); bad != "" {
		t.Errorf("diff view has %s", bad)
	}
	html = bodyOf(t, get(t, s, "/skill/a?from=x%3Cy&to=2", signedIn))
	if len(hc.called("skills::diff")) != 1 || !strings.Contains(html, "Compare needs two versions") {
		t.Fatal("a bad selector reached the registry or was not explained")
	}
}

func TestDiffLines(t *testing.T) {
	got := diffLines("--- a@1\n+++ a@2\n@@ -1 +1 @@\n--- x\n+++ y\n\\ No newline at end of file\n")
	want := []string{"file", "file", "hunk", "del", "add", "hunk"}
	for i, l := range got {
		if l.Class != want[i] {
			t.Errorf("line %d %q: class %s, want %s", i, l.Text, l.Class, want[i])
		}
	}
	if diffLines("") != nil {
		t.Error("an empty diff has lines")
	}
}

func TestVersionActionsNeedTokenSameOriginAndCSRF(t *testing.T) {
	for _, action := range []string{"/actions/label", "/actions/rollback"} {
		s, hc := newHistoryServer(t, Options{}, published("a", "# A"))
		form := func(extra ...string) url.Values {
			v := url.Values{"kind": {"skill"}, "id": {"a"}, "label": {"production"}, "version": {"1"}}
			for i := 0; i+1 < len(extra); i += 2 {
				v.Set(extra[i], extra[i+1])
			}
			return v
		}
		cases := []struct {
			name   string
			form   url.Values
			mod    func(*http.Request)
			status int
		}{
			{"no token", form(), nil, http.StatusUnauthorized},
			{"wrong token", form("token", "nope"), nil, http.StatusUnauthorized},
			{"no origin", form("token", "acme-token"), func(r *http.Request) { r.Header.Del("Origin") }, http.StatusForbidden},
			{"cross-site", form("token", "acme-token"), func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
			{"stale csrf", form("token", "acme-token"), func(r *http.Request) {
				r.Header.Del("Cookie")
				r.AddCookie(&http.Cookie{Name: csrfCookie, Value: strings.Repeat("cd", 16)})
			}, http.StatusForbidden},
			{"bad kind", form("token", "acme-token", "kind", "bundle"), nil, http.StatusBadRequest},
			{"bad version", form("token", "acme-token", "version", "1@2"), nil, http.StatusBadRequest},
		}
		for _, c := range cases {
			if res := post(t, s, action, c.form, c.mod); res.StatusCode != c.status {
				t.Errorf("%s %s: status %d, want %d", action, c.name, res.StatusCode, c.status)
			}
		}
		if c := hc.called("skills::label"); len(c) != 0 {
			t.Fatalf("%s: refused actions called the registry: %v", action, c)
		}
		if c := hc.called("skills::rollback"); len(c) != 0 {
			t.Fatalf("%s: refused actions called the registry: %v", action, c)
		}
		res := post(t, s, action, form("token", "acme-token", "message", "revert"), nil)
		loc := res.Header.Get("Location")
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/skill/a?") {
			t.Fatalf("%s: status %d location %q", action, res.StatusCode, loc)
		}
		loc, _, _ = strings.Cut(loc, "#") // a browser does not send the fragment
		notice := bodyOf(t, get(t, s, loc, signedIn))
		switch action {
		case "/actions/label":
			if c := hc.called("skills::label"); len(c) != 1 || c[0] != `skills::label {"id":"a","label":"production","version":1}` {
				t.Fatalf("label calls %v (the page must send no admin token of its own)", c)
			}
			if !strings.Contains(notice, "Label production now points at version 1.") {
				t.Errorf("no notice after the label move")
			}
		case "/actions/rollback":
			if c := hc.called("skills::rollback"); len(c) != 1 || c[0] != `skills::rollback {"author":"skills web page","id":"a","message":"revert","version":1}` {
				t.Fatalf("rollback calls %v", c)
			}
			if !strings.Contains(notice, "Rolled back: version 3 now holds the content of version 1.") {
				t.Errorf("no notice after the rollback")
			}
		}
	}
}

func TestRefusedLabelMoveShowsTheRegistrysWords(t *testing.T) {
	s, hc := newHistoryServer(t, Options{ProtectedLabels: []string{"production"}}, published("a", "# A"))
	hc.refuse["skills::label"] = `label "production" is protected: pass the registry's admin token as admin_token`
	res := post(t, s, "/actions/label", url.Values{"kind": {"skill"}, "id": {"a"}, "label": {"production"}, "version": {"1"}, "token": {"acme-token"}}, nil)
	html := bodyOf(t, res)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(html, "label &#34;production&#34; is protected: pass the registry&#39;s admin token as admin_token") ||
		!strings.Contains(html, "Protected labels move with the registry&#39;s admin token: enter it instead of your team&#39;s") {
		t.Fatalf("status %d:\n%s", res.StatusCode, html)
	}
	if strings.Contains(html, `data-live="skill:a"`) {
		t.Error("the refusal page (at the action's URL) must not re-read itself live")
	}
	if strings.Contains(hc.called("skills::label")[0], "admin_token") {
		t.Error("the page sent an admin token it was not given")
	}
}

func TestConfiguredAdminTokenIsPassed(t *testing.T) {
	s, hc := newHistoryServer(t, Options{AdminToken: "root", ProtectedLabels: []string{"production"}}, published("a", "# A"))
	post(t, s, "/actions/label", url.Values{"kind": {"skill"}, "id": {"a"}, "label": {"production"}, "version": {"2"}, "token": {"acme-token"}}, nil)
	if c := hc.called("skills::label"); len(c) != 1 || !strings.Contains(c[0], `"admin_token":"root"`) {
		t.Fatalf("label calls %v", c)
	}
	// The admin's own token moves protected labels without the option.
	s, hc = newHistoryServer(t, Options{ProtectedLabels: []string{"production"}}, published("a", "# A"))
	post(t, s, "/actions/label", url.Values{"kind": {"skill"}, "id": {"a"}, "label": {"production"}, "version": {"2"}, "token": {"root-token"}}, nil)
	if c := hc.called("skills::label"); len(c) != 1 || !strings.Contains(c[0], `"admin_token":"root-token"`) {
		t.Fatalf("label calls with the admin token %v", c)
	}
	if html := bodyOf(t, get(t, s, "/skill/a", signedIn)); strings.Contains(html, "root") {
		t.Error("the admin token reached the page")
	}
}

func TestFolderSkillSaysHistoryIsTheFolders(t *testing.T) {
	e := published("f", "# F")
	e.Origin = catalog.Origin{Kind: catalog.OriginFolder, Source: "folder:x", Path: "f/SKILL.md"}
	s, hc := newHistoryServer(t, Options{}, e)
	html := bodyOf(t, get(t, s, "/skill/f", signedIn))
	if !strings.Contains(html, "git log -p f/SKILL.md") || strings.Contains(html, `action="/actions/rollback"`) {
		t.Fatalf("folder skill page:\n%s", html)
	}
	if c := hc.called("skills::versions"); len(c) != 0 {
		t.Fatalf("versions asked for a folder skill: %v", c)
	}
}

func TestPromptPageListsVersionsAndActs(t *testing.T) {
	s, hc := newHistoryServer(t, Options{})
	html := bodyOf(t, get(t, s, "/prompt/greet?from=1&to=2", signedIn))
	if c := hc.called("prompts::versions"); len(c) != 1 || c[0] != `prompts::versions {"name":"greet"}` {
		t.Fatalf("versions calls %v", c)
	}
	for _, want := range []string{"Greet someone.", `data-version="2"`, `<span class="d-add">`, `name="kind" value="prompt"`, `data-live="prompt:greet"`} {
		if !strings.Contains(html, want) {
			t.Errorf("prompt page lacks %s", want)
		}
	}
	if strings.Contains(html, "?version=") {
		t.Error("prompt versions have no body view")
	}
	res := post(t, s, "/actions/rollback", url.Values{"kind": {"prompt"}, "id": {"greet"}, "version": {"1"}, "token": {"root-token"}}, nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/prompt/greet?") {
		t.Fatalf("prompt rollback: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if c := hc.called("prompts::rollback"); len(c) != 1 || !strings.Contains(c[0], `"name":"greet"`) {
		t.Fatalf("rollback calls %v", c)
	}
	if !strings.Contains(bodyOf(t, get(t, s, "/prompts", signedIn)), `href="/prompt/greet"`) {
		t.Error("the prompts page does not link a prompt's versions")
	}
}

func TestVersionsEventReachesOpenPages(t *testing.T) {
	var mu sync.Mutex
	var fire func(kind core.Kind, id string)
	subscribe := func(fn func(kind core.Kind, id string)) func() {
		mu.Lock()
		defer mu.Unlock()
		fire = fn
		return func() {}
	}
	s, _ := newServer(t, Options{VersionChanges: subscribe}, "")
	_, events := openEvents(t, s)
	mu.Lock()
	fire(core.KindSkill, "a/b")
	mu.Unlock()
	if got := events.until(t, `"id":"a/b"`); !strings.Contains(got, "event: versions\n") || !strings.Contains(got, `"kind":"skill"`) {
		t.Fatalf("versions event %q", got)
	}
}
