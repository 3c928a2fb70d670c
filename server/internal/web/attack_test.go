package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
)

// TestMCPTokenCannotUnregisterATeamsSkill runs the attack over real HTTP
// against `skills --standalone` (app.Start): team globex publishes with
// its scoped engine token; a reader who holds only the MCP token signs in
// to the page and posts the unregister form with it (refused: the MCP
// token reads the page only), then with another team's token (refused by
// the registry: outside that team's namespaces). The skill stays served
// through both; globex's own token and the admin token remove it.
func TestMCPTokenCannotUnregisterATeamsSkill(t *testing.T) {
	const (
		mcpToken    = "mcp-reader-token-0123"
		adminToken  = "admin-token-0123456789"
		globexToken = "globex-token-0123456789"
		acmeToken   = "acme-token-01234567890"
	)
	cfg := appstack.Config(t)
	cfg.HTTP.Addr, cfg.HTTP.Token, cfg.Registry.AdminToken = "127.0.0.1:0", mcpToken, adminToken
	cfg.Engine.Tokens = app.TokenList{{Name: "globex", Token: globexToken, Namespaces: []string{"globex"}},
		{Name: "acme", Token: acmeToken, Namespaces: []string{"acme"}}}
	srv := appstack.Start(t, cfg)
	ctx := context.Background()

	pub := iii.RegisterWorker(srv.EngineURL, iii.WithName("globex-publisher"), iii.WithHeaders(http.Header{"Authorization": {"Bearer " + globexToken}}),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = pub.Close() })
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pub.Connect(cctx); err != nil {
		t.Fatal(err)
	}
	register := func() {
		t.Helper()
		data, _ := json.Marshal(map[string]string{"id": "globex/plan", "skill": "# Plan\n\nGlobex's plan.\n"})
		if _, err := pub.Trigger(ctx, iii.TriggerRequest{FunctionID: "skills::register", Data: data, Timeout: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	register()
	served := func() bool { _, ok := srv.Catalog.Get("globex/plan"); return ok }

	// A browser: the page's cookies, same-origin posts with its CSRF value.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrfRE := regexp.MustCompile(`name="csrf" value="([0-9a-f]{32})"`)
	postForm := func(path string, form url.Values) (int, string) {
		t.Helper()
		page, _ := browser.Get(srv.HTTPURL + "/signin")
		b, _ := io.ReadAll(page.Body)
		page.Body.Close()
		m := csrfRE.FindSubmatch(b)
		if m == nil {
			t.Fatalf("no CSRF value on the sign-in page: %.300s", b)
		}
		form.Set("csrf", string(m[1]))
		req, _ := http.NewRequest(http.MethodPost, srv.HTTPURL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.HTTPURL)
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if status, body := postForm("/signin", url.Values{"token": {mcpToken}, "next": {"/"}}); status != http.StatusSeeOther {
		t.Fatalf("sign-in with the MCP token: %d %.300s", status, body)
	}
	unregister := func(tok string) (int, string) {
		return postForm("/actions/unregister", url.Values{"id": {"globex/plan"}, "token": {tok}})
	}

	if status, body := unregister(mcpToken); status != http.StatusForbidden || !strings.Contains(body, "lets you read this page, not change the registry") {
		t.Fatalf("unregister with the MCP token: %d %.500s", status, body)
	}
	// Signed in with the MCP token and nothing in the form: the session's
	// token is the MCP token, which reads only.
	if status, body := unregister(""); status != http.StatusForbidden || !strings.Contains(body, "lets you read this page, not change the registry") {
		t.Fatalf("unregister signed in, without an action token: %d %.300s", status, body)
	}
	if status, body := unregister(acmeToken); status != http.StatusBadRequest || !strings.Contains(body, "outside the namespaces of token") {
		t.Fatalf("unregister with another team's token: %d %.500s", status, body)
	}
	if !served() {
		t.Fatal("globex/plan was removed by a refused action")
	}
	if status, body := unregister(globexToken); status != http.StatusSeeOther || served() {
		t.Fatalf("unregister with the team's own token: %d %.300s (still served: %v)", status, body, served())
	}
	register()
	if status, body := unregister(adminToken); status != http.StatusSeeOther || served() {
		t.Fatalf("unregister with the admin token: %d %.300s (still served: %v)", status, body, served())
	}
}
