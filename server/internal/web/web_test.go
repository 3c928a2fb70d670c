package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/invoke"
)

// fakeCaller records iii calls and answers from a table (unit tests only;
// the browser tests in cmd/skills drive the real registry).
type fakeCaller struct {
	calls   []string
	answers map[string]string
}

func (f *fakeCaller) Trigger(_ context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	f.calls = append(f.calls, req.FunctionID+" "+string(req.Data))
	if a, ok := f.answers[req.FunctionID]; ok {
		return json.RawMessage(a), nil
	}
	return nil, &iii.InvocationError{FunctionID: req.FunctionID, Code: "function_not_found", Message: "function not found"}
}

// over is the registry as a surface in another process reads it, over
// fake iii calls (the calls and payloads the registry's functions take).
func over(t invoke.Trigger) core.Registry {
	return core.NewRemote(fakeClient{t}, core.RemoteOptions{Timeout: 5 * time.Second, RetryAfter: -1})
}

// fakeClient is a fake caller as core.Remote's client: calls only (the
// page never watches the registry through it).
type fakeClient struct{ c invoke.Trigger }

func (f fakeClient) Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	return f.c.Trigger(ctx, req)
}

func (fakeClient) RegisterFunction(string, iii.Handler, ...iii.RegisterFunctionOptions) (*iii.FunctionRef, error) {
	return nil, errors.New("no functions in unit tests")
}

func (fakeClient) RegisterTrigger(string, string, string, json.RawMessage, ...json.RawMessage) error {
	return errors.New("no triggers in unit tests")
}

func (fakeClient) UnregisterTrigger(string) error { return nil }

func published(id, body string) *catalog.Entry {
	e := &catalog.Entry{ID: id, Kind: catalog.KindInstruction, Body: catalog.Inline(body), BodyDigest: catalog.DigestOfString(body),
		Origin: catalog.Origin{Kind: catalog.OriginPublished, Source: "published"}, Modified: time.Now()}
	e.SetSummary(body)
	return e
}

func newTestServer(t testing.TB, token string, entries ...*catalog.Entry) (*Server, *catalog.Source, *fakeCaller) {
	t.Helper()
	return newTestServerWith(t, token, nil, entries...)
}

// newTestServerWith is newTestServer with more options: pubs says who
// published what.
func newTestServerWith(t testing.TB, token string, pubs Publishers, entries ...*catalog.Entry) (*Server, *catalog.Source, *fakeCaller) {
	t.Helper()
	fc := &fakeCaller{answers: map[string]string{"skills::unregister": `{"id":"x","removed":true}`}}
	s, src := newServer(t, Options{Registry: over(fc), Engine: fc, Publishers: pubs}, token, entries...)
	return s, src, fc
}

// newServer is every test's Server: opts over a new catalog whose
// published source holds entries, behind the guard of a listener on
// 127.0.0.1:1 that checks Host and, when set, token. It closes with the test.
func newServer(t testing.TB, opts Options, token string, entries ...*catalog.Entry) (*Server, *catalog.Source) {
	t.Helper()
	cat := catalog.New()
	src, err := cat.AddSource("published", catalog.RankPublished)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		if err := src.Put(entries...); err != nil {
			t.Fatal(err)
		}
	}
	opts.Catalog = cat
	opts.Guard = httpguard.Policy{Token: token, CheckHost: true, ListenAddr: "127.0.0.1:1"}
	if opts.ActionTokens == nil && token != "" {
		// Actions name who acts: the admin token, or team acme's.
		opts.ActionTokens = ActionTokens("root-token", []Team{{Name: "acme", Token: "acme-token", Namespaces: []string{"acme"}}}, token, "")
	}
	s := New(opts)
	t.Cleanup(s.Close)
	return s, src
}

// eventStream is a page's open /events stream on a live server.
type eventStream struct {
	*http.Response
	read strings.Builder // everything read so far
}

// openEvents serves s on a loopback listener that closes with the test and
// opens its event stream, returning once the hello event says the stream is
// subscribed.
func openEvents(t *testing.T, s *Server) (*httptest.Server, *eventStream) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	res, err := srv.Client().Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/events: status %d", res.StatusCode)
	}
	e := &eventStream{Response: res}
	e.until(t, "event: hello")
	return srv, e
}

// until reads the stream until what it read holds want, and returns that.
func (e *eventStream) until(t *testing.T, want string) string {
	t.Helper()
	buf := make([]byte, 4096)
	for !strings.Contains(e.read.String(), want) {
		n, err := e.Body.Read(buf)
		e.read.Write(buf[:n])
		if err != nil && !strings.Contains(e.read.String(), want) {
			t.Fatalf("stream ended before %q: %v (read %q)", want, err, e.read.String())
		}
	}
	return e.read.String()
}

func get(t *testing.T, h http.Handler, target string, mod func(*http.Request)) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1"+target, nil)
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func bodyOf(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	s, _, _ := newTestServer(t, "", published("a/b", "# B\n\nDoes b."))
	for _, p := range []string{"/", "/skill/a/b", "/prompts", "/diagnostics", "/workers", "/nope", "/assets/app.js"} {
		res := get(t, s, p, nil)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline or eval: %q", p, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no X-Content-Type-Options: nosniff", p)
		}
		if p != "/assets/app.js" && strings.Contains(bodyOf(t, res), "<script>") {
			t.Errorf("%s: inline script in the page", p)
		}
	}
}

func TestForeignHostAndOriginRefused(t *testing.T) {
	s, _, _ := newTestServer(t, "")
	if res := get(t, s, "/", func(r *http.Request) { r.Host = "evil.example" }); res.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: status %d, want 403", res.StatusCode)
	}
	if res := get(t, s, "/", func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }); res.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: status %d, want 403", res.StatusCode)
	}
	if res := get(t, s, "/", func(r *http.Request) { r.Host = "localhost:1" }); res.StatusCode != http.StatusOK {
		t.Errorf("loopback Host: status %d, want 200", res.StatusCode)
	}
}

func TestTokenProtectsPages(t *testing.T) {
	s, _, _ := newTestServer(t, "sekret", published("a", "# A"))
	res := get(t, s, "/skill/a", nil)
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(bodyOf(t, res), `action="/signin"`) {
		t.Fatalf("no token: status %d, want 401 with the sign-in form", res.StatusCode)
	}
	if res := get(t, s, "/skill/a", func(r *http.Request) { r.Header.Set("Authorization", "Bearer sekret") }); res.StatusCode != http.StatusOK {
		t.Errorf("bearer token: status %d", res.StatusCode)
	}
	if res := get(t, s, "/skill/a", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: tokenCookie, Value: "wrong"}) }); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong cookie: status %d, want 401", res.StatusCode)
	}
	if res := get(t, s, "/events", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("event stream without token: status %d, want 401", res.StatusCode)
	}
}

// post sends a form as a browser on this page would, then lets mod spoil it.
func post(t *testing.T, s *Server, target string, form url.Values, mod func(*http.Request)) *http.Response {
	t.Helper()
	form.Set(csrfField, strings.Repeat("ab", 16))
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1"+target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://127.0.0.1:1")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: strings.Repeat("ab", 16)})
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w.Result()
}

func TestUnregisterNeedsTokenSameOriginAndCSRF(t *testing.T) {
	s, _, fc := newTestServer(t, "sekret", published("a", "# A"))
	withToken := url.Values{"id": {"a"}, "token": {"root-token"}}
	cases := []struct {
		name   string
		form   url.Values
		mod    func(*http.Request)
		status int
	}{
		{"no token", url.Values{"id": {"a"}}, func(r *http.Request) {}, http.StatusUnauthorized},
		{"wrong token", url.Values{"id": {"a"}, "token": {"nope"}}, nil, http.StatusUnauthorized},
		{"no origin", withToken, func(r *http.Request) { r.Header.Del("Origin") }, http.StatusForbidden},
		{"cross-site", withToken, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		{"other loopback origin", withToken, func(r *http.Request) { r.Header.Set("Origin", "http://localhost:2") }, http.StatusForbidden},
		{"stale csrf", withToken, func(r *http.Request) {
			r.Header.Del("Cookie")
			r.AddCookie(&http.Cookie{Name: csrfCookie, Value: strings.Repeat("cd", 16)})
		}, http.StatusForbidden},
	}
	for _, c := range cases {
		res := post(t, s, "/actions/unregister", c.form, c.mod)
		if res.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, res.StatusCode, c.status)
		}
	}
	if len(fc.calls) != 0 {
		t.Fatalf("refused actions called the registry: %v", fc.calls)
	}
	res := post(t, s, "/actions/unregister", withToken, nil)
	if res.StatusCode != http.StatusSeeOther || len(fc.calls) != 1 || fc.calls[0] != `skills::unregister {"id":"a"}` {
		t.Fatalf("accepted action: status %d, calls %v", res.StatusCode, fc.calls)
	}
}

func TestUnregisterWithoutConfiguredTokenIsRefused(t *testing.T) {
	s, _, fc := newTestServer(t, "", published("a", "# A"))
	res := post(t, s, "/actions/unregister", url.Values{"id": {"a"}}, nil)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(bodyOf(t, res), "admin token (--admin-token or SKILLS_ADMIN_TOKEN) or a team") || len(fc.calls) != 0 {
		t.Fatalf("status %d calls %v", res.StatusCode, fc.calls)
	}
}

// Without teams there is one operator: the listener token, typed into
// the form, acts as that operator (protected labels excepted, as before).
func TestListenerTokenActsWithoutTeams(t *testing.T) {
	fc := &fakeCaller{answers: map[string]string{"skills::unregister": `{"id":"a","removed":true}`}}
	s, _ := newServer(t, Options{Registry: over(fc), Engine: fc, ActionTokens: ActionTokens("", nil, "sekret", "")}, "sekret", published("a", "# A"))
	res := post(t, s, "/actions/unregister", url.Values{"id": {"a"}, "token": {"sekret"}}, nil)
	if res.StatusCode != http.StatusSeeOther || countCalls(fc, "skills::unregister") != 1 {
		t.Fatalf("unregister with the listener token and no teams: status %d, %d calls:\n%s", res.StatusCode, countCalls(fc, "skills::unregister"), bodyOf(t, res))
	}
}

// With teams, the listener token lets a reader see the page; it changes
// nothing, signed in or typed into the form.
func TestListenerTokenAloneChangesNothing(t *testing.T) {
	s, _, fc := newTestServer(t, "sekret", published("a", "# A"))
	for name, mod := range map[string]func(*http.Request){
		"in the form":    nil,
		"signed in too":  signedIn,
		"bearer as well": func(r *http.Request) { r.Header.Set("Authorization", "Bearer sekret") },
	} {
		res := post(t, s, "/actions/unregister", url.Values{"id": {"a"}, "token": {"sekret"}}, mod)
		if body := bodyOf(t, res); res.StatusCode != http.StatusForbidden || !strings.Contains(body, "lets you read this page, not change the registry") {
			t.Errorf("%s: status %d:\n%s", name, res.StatusCode, body)
		}
		// Nothing in the form: a session signed in with the listener token
		// reads only (403); without one, the token is missing (401).
		want := http.StatusForbidden
		if mod == nil {
			want = http.StatusUnauthorized
		}
		res = post(t, s, "/actions/unregister", url.Values{"id": {"a"}}, mod)
		if res.StatusCode != want {
			t.Errorf("%s, no action token: status %d, want %d", name, res.StatusCode, want)
		}
	}
	if len(fc.calls) != 0 {
		t.Fatalf("refused actions called the registry: %v", fc.calls)
	}
	if html := bodyOf(t, get(t, s, "/skill/a", signedIn)); !strings.Contains(html, "Admin or team token") {
		t.Error("the unregister form does not ask for the admin or team token")
	}
}

func TestSigninSetsStrictCookieAndStaysOnSite(t *testing.T) {
	s, _, _ := newTestServer(t, "sekret")
	res := post(t, s, "/signin", url.Values{"token": {"sekret"}, "next": {"//evil.example/"}}, nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("status %d location %q", res.StatusCode, res.Header.Get("Location"))
	}
	var got *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == tokenCookie {
			got = c
		}
	}
	if got == nil || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode {
		t.Fatalf("token cookie %+v", got)
	}
	if res := post(t, s, "/signin", url.Values{"token": {"wrong"}}, nil); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: status %d", res.StatusCode)
	}
}

func TestMarkdownRunsNothing(t *testing.T) {
	cat := catalog.New()
	src, _ := cat.AddSource("published", 0)
	_ = src.Put(published("other/skill", "# Other"))
	body := "# T\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n<iframe src=\"javascript:alert(1)\"></iframe>\n\n" +
		"[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](java&#9;script:alert(1)) [d](data:text/html,<script>alert(1)</script>)\n\n" +
		"![i](javascript:alert(1)) ![j](data:image/svg+xml,<svg onload=alert(1)>) <javascript:alert(1)> <vbscript:msgbox(1)>\n\n" +
		"[ok](https://example.com/x) [q](https://example.com/q?a=1&b=2) [m](mailto:a@b.c) [s](iii://other/skill) [k](skill://other/skill/SKILL.md) [f](iii://fn/a/b) [idx](iii://skills)\n\n" +
		"[rel](references/guide.md) <a href=\"javascript:alert(1)\">raw</a> <div onclick=\"alert(1)\">x</div>\n"
	e := published("t", body)
	e.Files = []catalog.File{catalog.NewFile("references/guide.md", []byte("g"), time.Now(), nil)}
	html, err := renderMarkdown(cat, e, body)
	if err != nil {
		t.Fatal(err)
	}
	if bad := hostileMarkup(html); bad != "" {
		t.Errorf("rendered markdown has %s:\n%s", bad, html)
	}
	for _, want := range []string{`href="https://example.com/x"`, `href="https://example.com/q?a=1&amp;b=2"`, `href="mailto:a@b.c"`, `href="/skill/other/skill"`,
		`href="/"`, `href="/skill/t?file=references%2Fguide.md#file"`} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered markdown lacks %s:\n%s", want, html)
		}
	}
	if strings.Count(html, `href="/skill/other/skill"`) != 2 {
		t.Errorf("iii:// and skill:// links to the same skill: want 2 in-page links:\n%s", html)
	}
	if strings.Contains(html, "iii://fn") && strings.Contains(html, `href="iii://fn`) {
		t.Errorf("a section URI became a link:\n%s", html)
	}
}

var (
	tagRe     = regexp.MustCompile(`(?is)<([a-z][a-z0-9]*)\b([^>]*)>`)
	handlerRe = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	urlAttrRe = regexp.MustCompile(`(?i)\s(?:href|src|action|formaction)\s*=\s*"([^"]*)"`)
)

// hostileMarkup names the first element, event handler or URL in html that
// could run code, or "".
func hostileMarkup(html string) string {
	for _, m := range tagRe.FindAllStringSubmatch(html, -1) {
		switch strings.ToLower(m[1]) {
		case "script", "iframe", "object", "embed", "frame", "base", "form", "svg", "math", "style", "link", "meta":
			return "element <" + m[1] + ">"
		}
		if handlerRe.MatchString(m[2]) {
			return "an event handler in " + m[0]
		}
		for _, u := range urlAttrRe.FindAllStringSubmatch(m[2], -1) {
			l := strings.ToLower(strings.TrimSpace(u[1]))
			if !(strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "mailto:") || strings.HasPrefix(l, "/") ||
				!strings.Contains(strings.SplitN(l, "/", 2)[0], ":")) {
				return "the URL " + u[1]
			}
		}
	}
	return ""
}

func TestIndexTreeSearchAndPaging(t *testing.T) {
	var entries []*catalog.Entry
	for i := range 250 {
		entries = append(entries, published(fmt.Sprintf("ns%d/sub/skill-%03d", i%3, i), fmt.Sprintf("# Skill %d\n\nConverts format %d.", i, i)))
	}
	entries = append(entries, published("mail/send", "# Send mail\n\nSends an email through Resend."),
		published("ns1-x/y", "# Beside ns1\n\nNot in ns1."), published("ns1/sub-a/z", "# In ns1\n\nA second sub-namespace."))
	s, _, _ := newTestServer(t, "", entries...)
	body := bodyOf(t, get(t, s, "/", nil))
	for _, want := range []string{`href="/?ns=ns0"`, `href="/?ns=mail"`, "Skills 1–100 of 253", `rel="next"`} {
		if !strings.Contains(body, want) {
			t.Errorf("catalog page lacks %s", want)
		}
	}
	body = bodyOf(t, get(t, s, "/?ns=ns1&page=2", nil))
	if !strings.Contains(body, "Skills 1–84 of 84") || !strings.Contains(body, "ns1/sub/") || strings.Contains(body, "ns1-x") ||
		strings.Count(body, `href="/?ns=ns1%2Fsub"`) != 1 || !strings.Contains(body, `href="/?ns=ns1%2Fsub-a"`) {
		t.Errorf("namespace page: %s", body[strings.Index(body, `<p class="count">`):][:80])
	}
	body = bodyOf(t, get(t, s, "/?q=email+resend", nil))
	if !strings.Contains(body, `data-id="mail/send"`) || strings.Contains(body, `data-id="ns0`) {
		t.Errorf("search for what a skill does did not find exactly it")
	}
}

func TestLongSearchIsCut(t *testing.T) {
	s, _, _ := newTestServer(t, "", published("mail/send", "# Send mail\n\nSends an email."))
	body := bodyOf(t, get(t, s, "/?q=email+"+strings.Repeat("x", 5000), nil))
	if !strings.Contains(body, "cut to its first 256 characters") || strings.Contains(body, strings.Repeat("x", 300)) {
		t.Fatal("a 5000-character search was not cut to 256 characters with a note")
	}
}

func TestEventStreamDeliversChanges(t *testing.T) {
	s, src, _ := newTestServer(t, "")
	_, events := openEvents(t, s)
	if ct := events.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	if err := src.Put(published("new/one", "# New")); err != nil {
		t.Fatal(err)
	}
	if got := events.until(t, `"id":"new/one"`); !strings.Contains(got, "event: change") || !strings.Contains(got, `"op":"put"`) {
		t.Fatalf("change event %q", got)
	}
}

func TestMarkdownHeadingsNestUnderThePageTitle(t *testing.T) {
	body := "# Title\n\nIntro.\n\n## Usage\n\n# Another top heading\n"
	e := published("x", body)
	html, err := renderMarkdown(nil, e, body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, "<h1") || strings.Contains(html, "Title") || !strings.Contains(html, "<h3>Usage</h3>") || !strings.Contains(html, "<h2>Another top heading</h2>") {
		t.Fatalf("headings:\n%s", html)
	}
}

func TestCloseEndsEventStreams(t *testing.T) {
	s, _, _ := newTestServer(t, "")
	_, events := openEvents(t, s)
	s.Close() // as the server does when it shuts down
	if _, err := io.ReadAll(events.Body); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
}

func TestLiveStreamsAreBounded(t *testing.T) {
	s, _ := newServer(t, Options{MaxStreams: 1}, "")
	srv, first := openEvents(t, s)
	second, err := srv.Client().Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second stream: status %d, want 503", second.StatusCode)
	}
	first.Body.Close()
	for { // the slot frees once the server sees the first page leave
		third, err := srv.Client().Get(srv.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		third.Body.Close()
		if third.StatusCode == http.StatusOK {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOversizedFormRefused(t *testing.T) {
	s, _, fc := newTestServer(t, "sekret", published("a", "# A"))
	res := post(t, s, "/actions/unregister", url.Values{"id": {"a"}, "token": {"root-token"}, "pad": {strings.Repeat("x", maxFormBytes)}}, nil)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(bodyOf(t, res), "at most 64 KiB") || len(fc.calls) != 0 {
		t.Fatalf("oversized form: status %d, calls %v", res.StatusCode, fc.calls)
	}
}

func TestRelativeLinksBetweenFolderSkills(t *testing.T) {
	cat := catalog.New()
	src, _ := cat.AddSource("folder:/f", catalog.RankFolder)
	folder := func(id, file, body string) *catalog.Entry {
		e := published(id, body)
		e.Origin = catalog.Origin{Kind: catalog.OriginFolder, Source: "/f", Path: file}
		return e
	}
	pdf := folder("pdf-processing", "pdf-processing/SKILL.md", "# PDF")
	guide := folder("iii/getting-started", "iii/getting-started.md", "# Start")
	if err := src.Put(pdf, guide); err != nil {
		t.Fatal(err)
	}
	body := "[pdf](../pdf-processing/SKILL.md) [dir](../pdf-processing) [self](getting-started.md) [none](../nope.md) [out](../../etc/passwd)"
	html, err := renderMarkdown(cat, guide, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`href="/skill/pdf-processing">pdf`, `href="/skill/pdf-processing">dir`, `href="/skill/iii/getting-started">self`,
		`href="../nope.md">none`, `href="../../etc/passwd">out`} {
		if !strings.Contains(html, want) {
			t.Errorf("lacks %s:\n%s", want, html)
		}
	}
}

// TestWorkersPageShowsTheEngineRows renders engine::workers::list rows as
// the embedded engine answers them (server/internal/engine/listings_test.go pins
// those bytes): a full row, and one whose optional texts are null.
func TestWorkersPageShowsTheEngineRows(t *testing.T) {
	s, _, fc := newTestServer(t, "")
	connected := time.Now().Add(-210 * time.Second).UnixMilli()
	fc.answers[iii.FnListWorkers] = fmt.Sprintf(`{"workers":[`+
		`{"id":"w-1","name":"pub","description":"the publisher","runtime":"go","version":"1.2.3","os":"linux","pid":7,"status":"connected","function_count":2,"connected_at_ms":%d,"active_invocations":1,"namespace":"default","isolation":"none","ip_address":"127.0.0.1"},`+
		`{"id":"w-2","name":"quiet","description":null,"runtime":"unknown","version":null,"os":null,"pid":9,"status":"connected","function_count":0,"connected_at_ms":%d,"active_invocations":0,"namespace":"default","isolation":null,"ip_address":"10.0.0.2"}]}`,
		connected, connected)
	body := bodyOf(t, get(t, s, "/workers", nil))
	rows := regexp.MustCompile(`(?s)<tbody>.*</tbody>`).FindString(body)
	for _, want := range []string{
		`<tr><td>pub<br><span class="hint">the publisher</span></td><td>go</td><td>1.2.3</td><td>7</td><td>2</td><td>1</td><td>127.0.0.1</td><td>`,
		`<tr><td>quiet</td><td>unknown</td><td></td><td>9</td><td>0</td><td>0</td><td>10.0.0.2</td><td>`,
	} {
		if !strings.Contains(rows, want) {
			t.Errorf("workers page lacks %s in\n%s", want, rows)
		}
	}
	if strings.Count(rows, "<td>3 min ago</td>") != 2 {
		t.Errorf("connected age not shown: %s", rows)
	}
}

// A search the ranked index answers with low_confidence says so above the
// results, as `skills search` and the MCP tool do; a confident one does not.
func TestSearchShowsLowConfidence(t *testing.T) {
	for _, low := range []bool{true, false} {
		fc := &fakeCaller{answers: map[string]string{"skills::search": fmt.Sprintf(
			`{"query":"q","results":[{"id":"mail/send","score":0.4}],"low_confidence":%t}`, low)}}
		s, _ := newServer(t, Options{Registry: over(fc), Engine: fc, Searcher: RegistrySearcher{Registry: over(fc)}}, "", published("mail/send", "# Send mail\n\nSends an email."))
		body := bodyOf(t, get(t, s, "/?q=translate+this+poem", nil))
		if !strings.Contains(body, `data-id="mail/send"`) {
			t.Fatalf("low_confidence %t: the closest result is not listed", low)
		}
		if got := strings.Contains(body, "Low confidence: no skill matches this search well"); got != low {
			t.Errorf("low_confidence %t: the page shows the low-confidence notice: %t", low, got)
		}
	}
}

// cookieNamed is the cookie res sets under name (nil when none).
func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Behind a proxy that terminates TLS the listener sees http while the
// browser posts from https://skills.example.com. With the public origin
// configured, sign-in and actions work from it and the cookies are Secure;
// without it they are refused with a message naming --public-url, and
// forwarded headers (X-Forwarded-Proto, Forwarded) change nothing either way.
func TestPublicOriginBehindTLSProxy(t *testing.T) {
	const public = "https://skills.example.com"
	forged := func(r *http.Request) {
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("X-Forwarded-Host", "skills.example.com")
		r.Header.Set("Forwarded", "proto=https;host=skills.example.com")
	}
	proxied := func(origin string, more ...func(*http.Request)) func(*http.Request) {
		return func(r *http.Request) {
			r.Host = "skills.example.com"
			r.Header.Set("Origin", origin)
			for _, m := range more {
				m(r)
			}
		}
	}
	newBehindProxy := func(publicOrigin string) (*Server, *fakeCaller) {
		fc := &fakeCaller{answers: map[string]string{"skills::unregister": `{"id":"a","removed":true}`}}
		cat := catalog.New()
		src, _ := cat.AddSource("published", catalog.RankPublished)
		if err := src.Put(published("a", "# A")); err != nil {
			t.Fatal(err)
		}
		s := New(Options{Catalog: cat, Registry: over(fc), Engine: fc, PublicOrigin: publicOrigin, Guard: httpguard.Policy{Token: "sekret", CheckHost: true,
			ListenAddr: "127.0.0.1:1", AllowedHosts: []string{"skills.example.com"}}, ActionTokens: ActionTokens("root-token", nil, "", "")})
		t.Cleanup(s.Close)
		return s, fc
	}
	signin := url.Values{"token": {"sekret"}}

	// Not told: refused, and the refusal says what to set; forging the
	// forwarded headers does not help.
	s, fc := newBehindProxy("")
	for name, mod := range map[string]func(*http.Request){"plain": proxied(public), "forged headers": proxied(public, forged)} {
		res := post(t, s, "/signin", signin, mod)
		if body := bodyOf(t, res); res.StatusCode != http.StatusForbidden || !strings.Contains(body, "--public-url (config public_url) "+public) {
			t.Errorf("%s: sign-in from %s without a public origin: %d %q, want 403 naming --public-url", name, public, res.StatusCode, body)
		}
		if c := cookieNamed(res, tokenCookie); c != nil {
			t.Errorf("%s: a refused sign-in set the token cookie", name)
		}
	}
	// A navigation (GET) carries no Origin.
	navigate := func(more ...func(*http.Request)) func(*http.Request) {
		return func(r *http.Request) {
			proxied("", more...)(r)
			r.Header.Del("Origin")
		}
	}
	if c := cookieNamed(get(t, s, "/signin", navigate(forged)), csrfCookie); c == nil || c.Secure {
		t.Errorf("CSRF cookie without a public origin, forged headers: %+v, want one without Secure", c)
	}

	// Told: sign-in and an action from the public origin work, the
	// cookies are Secure; other origins (http of the same host included)
	// are still refused.
	s, fc = newBehindProxy(public)
	if c := cookieNamed(get(t, s, "/signin", navigate()), csrfCookie); c == nil || !c.Secure {
		t.Errorf("CSRF cookie for %s: %+v, want Secure", public, c)
	}
	res := post(t, s, "/signin", signin, proxied(public))
	if c := cookieNamed(res, tokenCookie); res.StatusCode != http.StatusSeeOther || c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("sign-in from %s: %d, token cookie %+v, want 303 and a Secure HttpOnly SameSite=Strict cookie", public, res.StatusCode, c)
	}
	for _, origin := range []string{"http://skills.example.com", "https://evil.example", "https://skills.example.com:8443"} {
		if res := post(t, s, "/actions/unregister", url.Values{"id": {"a"}, "token": {"root-token"}}, proxied(origin, forged)); res.StatusCode != http.StatusForbidden {
			t.Errorf("action from %s: %d, want 403", origin, res.StatusCode)
		}
	}
	if len(fc.calls) != 0 {
		t.Fatalf("refused actions called the registry: %v", fc.calls)
	}
	if res := post(t, s, "/actions/unregister", url.Values{"id": {"a"}, "token": {"root-token"}}, proxied(public)); res.StatusCode != http.StatusSeeOther || len(fc.calls) != 1 {
		t.Fatalf("action from %s: %d, calls %v", public, res.StatusCode, fc.calls)
	}

	// The same server reached directly on loopback over http: its own
	// origin still works, and its cookies are not Secure (a browser would
	// not send them back over http).
	res = post(t, s, "/signin", signin, nil)
	if c := cookieNamed(res, tokenCookie); res.StatusCode != http.StatusSeeOther || c == nil || c.Secure {
		t.Errorf("loopback sign-in: %d, token cookie %+v, want 303 and a cookie without Secure", res.StatusCode, c)
	}
}

// One client cannot take every live-update stream: past its share its
// pages are refused (503, Retry-After, the share named) while another
// client's page still gets one.
func TestLiveStreamsAreSharedBetweenClients(t *testing.T) {
	s, _ := newServer(t, Options{MaxStreams: 4, MaxStreamsPerClient: 2}, "")
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	open := func(ip string) *http.Response {
		t.Helper()
		res, err := from(ip).Get(srv.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for range 2 {
		if res := open("127.0.0.1"); res.StatusCode != http.StatusOK {
			t.Fatalf("a stream within the share: %d", res.StatusCode)
		}
	}
	res := open("127.0.0.1")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(bodyOf(t, res), "this client already holds 2 of its share of 2 live-update streams") {
		t.Fatalf("a stream past the share: %d %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := open("127.0.0.2"); res.StatusCode != http.StatusOK {
		t.Fatalf("another client's stream: %d", res.StatusCode)
	}
}
