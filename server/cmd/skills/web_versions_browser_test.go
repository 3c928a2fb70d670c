package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/history"
)

// versions is TestWebPageInBrowser/VersionsLabelsAndDiffs: a skill
// published twice lists both versions, a diff shows the changed line, an
// old version renders, rollback and promote work with a team's token and show
// in the registry (read back over iii), changes of versions and labels
// show on the open page, a protected label is refused with the registry's
// words, and an action without the token is refused.
func (s *browserStack) versions(t *testing.T) {
	const id = "ver/demo"
	// Team ver publishes it, so the team's token may manage it on the page.
	s.teamTrigger(t, rules.FnSkillsRegister, map[string]string{"id": id, "skill": "# Demo\n\nStep one: call the old endpoint.\n", "message": "first", "author": "ci@acme"})
	s.teamTrigger(t, rules.FnSkillsRegister, map[string]string{"id": id, "skill": "# Demo\n\nStep one: call the new endpoint.\n", "message": "second", "author": "ci@acme"})
	listing := func() history.Listing {
		var l history.Listing
		if err := json.Unmarshal(s.trigger(t, "skills::versions", map[string]string{"id": id}), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	rows := func() []string {
		var out []string
		s.eval(t, `[...document.querySelectorAll("table.versions-table tbody tr")].map(r => r.dataset.version + " " + r.querySelector(".msg").textContent)`, &out)
		return out
	}

	// Both versions, newest first.
	s.run(t, chromedp.Navigate(s.base+"/skill/"+id), chromedp.WaitVisible(chromedp.CSS(`tr[data-version="1"]`)))
	if got := strings.Join(rows(), ","); got != "2 second,1 first" {
		t.Fatalf("versions rows: %q", got)
	}

	// The diff of 1 → 2 shows the changed line, escaped and styled.
	s.run(t, chromedp.Click(chromedp.CSS(`tr[data-version="2"] td.links a[href*="from="]`)), chromedp.WaitVisible(chromedp.CSS(".diff-text .d-add")))
	var diff struct{ Add, Del []string }
	s.eval(t, `({Add: [...document.querySelectorAll(".d-add")].map(e => e.textContent.trim()), Del: [...document.querySelectorAll(".d-del")].map(e => e.textContent.trim())})`, &diff)
	if strings.Join(diff.Add, "|") != "+Step one: call the new endpoint." || strings.Join(diff.Del, "|") != "-Step one: call the old endpoint." {
		t.Fatalf("diff lines: %+v", diff)
	}
	s.shot(t, "versions")

	// An old version renders in place of the newest.
	s.run(t, chromedp.Click(chromedp.CSS(`tr[data-version="1"] td.links a[href*="version="]`)), chromedp.WaitVisible(chromedp.CSS(".viewing")))
	if text := get(t, s, chromedp.Text(chromedp.CSS(".markdown"))); !strings.Contains(text, "old endpoint") || strings.Contains(text, "new endpoint") {
		t.Fatalf("version 1 view: %q", text)
	}

	// Rollback to 1 with team ver's token: version 3 holds 1's body.
	s.run(t, chromedp.Navigate(s.base+"/skill/"+id), chromedp.WaitVisible(chromedp.ID("rollback-version")),
		chromedp.SetValue(chromedp.ID("rollback-version"), "1"), chromedp.SendKeys(chromedp.ID("rollback-message"), "back to the old endpoint"),
		chromedp.SendKeys(chromedp.ID("rollback-token"), webTeamToken),
		chromedp.Click(chromedp.CSS(`form[action="/actions/rollback"] button`)),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class,"notice") and contains(., "version 3 now holds the content of version 1")]`)))
	var read string
	if err := json.Unmarshal(s.trigger(t, "skill::fetch", map[string]string{"uri": "iii://" + id + "@3"}), &read); err != nil ||
		!strings.Contains(read, "call the old endpoint") {
		t.Fatalf("version 3 over iii: %q (%v)", read, err)
	}
	if l := listing(); l.Latest != 3 || l.Versions[0].Message != "back to the old endpoint" {
		t.Fatalf("after rollback: %+v", l)
	}

	// Promote: staging → 2.
	s.run(t, chromedp.SendKeys(chromedp.ID("label-name"), "staging"), chromedp.SetValue(chromedp.ID("label-version"), "2"),
		chromedp.SendKeys(chromedp.ID("label-token"), webTeamToken),
		chromedp.Click(chromedp.CSS(`form[action="/actions/label"] button`)),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class,"notice") and contains(., "Label staging now points at version 2.")]`)))
	if l := listing(); l.Labels["staging"] != 2 {
		t.Fatalf("after promote: labels %v", l.Labels)
	}

	// Live: a label move that changes nothing served, and a new version,
	// show on the open page without a reload.
	s.markPage(t)
	s.teamTrigger(t, rules.FnSkillsLabel, map[string]any{"id": id, "label": "canary", "version": 1})
	s.run(t, chromedp.WaitVisible(chromedp.Search(`//tr[@data-version="1"]//span[contains(@class,"label") and contains(., "canary")]`)))
	s.teamTrigger(t, rules.FnSkillsRegister, map[string]string{"id": id, "skill": "# Demo\n\nStep one: call the newest endpoint.\n", "message": "fourth"})
	s.run(t, chromedp.WaitVisible(chromedp.CSS(`tr[data-version="4"]`)))
	s.assertNotReloaded(t)

	// A protected label with the team's token: the page holds no admin
	// token, the registry refuses, and the page says so in its words.
	s.run(t, chromedp.SendKeys(chromedp.ID("label-name"), "production"), chromedp.SetValue(chromedp.ID("label-version"), "1"),
		chromedp.SendKeys(chromedp.ID("label-token"), webTeamToken),
		chromedp.Click(chromedp.CSS(`form[action="/actions/label"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#versions .error`)))
	if text := get(t, s, chromedp.Text(chromedp.CSS(`#versions .error`))); !strings.Contains(text, `label "production" is protected`) {
		t.Fatalf("protected label refusal: %q", text)
	}
	if l := listing(); l.Labels["production"] != 0 {
		t.Fatalf("a protected label moved without the admin token: %v", l.Labels)
	}

	// A prompt's page lists its versions and follows a new one live.
	s.run(t, chromedp.Navigate(s.base+"/prompt/greet"), chromedp.WaitVisible(chromedp.CSS(`tr[data-version="1"]`)))
	s.markPage(t)
	s.trigger(t, "prompts::register", map[string]any{"name": "greet", "description": "Greet someone warmly by name.", "function_id": "webtest::greet",
		"arguments": []map[string]any{{"name": "who", "description": "who to greet", "required": true}}, "message": "warmer"})
	s.run(t, chromedp.WaitVisible(chromedp.Search(`//tr[@data-version="2"]/td[@class="msg" and text()="warmer"]`)))
	s.assertNotReloaded(t)

	// Without the token: refused, nothing changes.
	jar := &cookieJar{}
	jar.do(t, http.MethodGet, s.base+"/signin", nil, "")
	for _, action := range []string{"/actions/rollback", "/actions/label"} {
		form := url.Values{"csrf": {jar.get(csrfCookieName)}, "kind": {"skill"}, "id": {id}, "version": {"1"}, "label": {"staging"}}
		if res := jar.do(t, http.MethodPost, s.base+action, form, s.base); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without the token: %d, want 401", action, res.StatusCode)
		}
	}
	if l := listing(); l.Latest != 4 || l.Labels["staging"] != 2 {
		t.Fatalf("refused actions changed the history: %+v", l)
	}
}
