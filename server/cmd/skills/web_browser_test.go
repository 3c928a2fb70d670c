package main

// The web page (server/internal/web) driven by a real Chromium against the real
// skills binary: a standalone registry with a skills folder, a token and a
// publisher connected over iii. The tests skip with "not run: no chromium"
// when no browser is installed, unless SKILLS_TEST_REQUIRE_CHROMIUM=1
// (set by `make test`, whose web-deps target installs Debian's chromium).
// SKILLS_WEB_SCREENSHOTS=DIR also saves screenshots of the main pages
// (docs/web/*.png: SKILLS_WEB_SCREENSHOTS=$PWD/docs/web).

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

const webToken = "browser-test-token"

// The tokens that act on the page: the registry's admin token, and team
// ver's engine token (its namespace holds the skill the versions test
// acts on).
const (
	webAdminToken = "browser-test-admin"
	webTeamToken  = "browser-test-team-ver-token"
	// webEngineToken is the engine's shared worker token (engine_token).
	webEngineToken = "browser-test-engine-token"
)

// hostileBody tries every way a skill body could run code in the page.
const hostileBody = `# <script>window.__xss=1;alert(1)</script>Evil skill

Looks harmless. <img src=x onerror="window.__xss=2;alert(2)">

<script>window.__xss=3;alert(3)</script>

<iframe src="javascript:window.top.__xss=4;alert(4)"></iframe>
<iframe srcdoc="<script>parent.__xss=5</script>"></iframe>

[click me](javascript:window.__xss=6;alert(6)) [again](JAVASCRIPT:alert(7)) [tab](java&#9;script:alert(8))
[data](data:text/html,<script>alert(9)</script>) <javascript:alert(10)>

![pic](javascript:alert(11)) <svg onload="alert(12)"></svg> <a href="javascript:alert(13)">raw</a>
<div onmouseover="alert(14)" style="position:fixed;inset:0">cover</div>
<object data="javascript:alert(15)"></object><embed src="javascript:alert(16)"><base href="javascript:alert(17)//">
<form action="javascript:alert(18)"><button>go</button></form>
`

// browserStack is one running registry and one browser tab.
type browserStack struct {
	base    string // http://127.0.0.1:PORT
	addr    string
	folder  string
	client  *iii.Client
	team    *iii.Client     // connected with team ver's token
	ctx     context.Context // the tab
	dialogs *eventLog
	console *eventLog
	shots   string
}

type eventLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *eventLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, s)
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// findChromium returns the browser to drive, or skips.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SKILLS_TEST_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no chromium on PATH, and SKILLS_TEST_REQUIRE_CHROMIUM=1 (make test installs it with make web-deps: apt-get install chromium)")
	}
	t.Skip("not run: no chromium (apt-get install chromium, or make web-deps)")
	return ""
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startBrowserStack(t *testing.T) *browserStack {
	chrome := findChromium(t)
	folder := t.TempDir()
	if err := os.CopyFS(folder, os.DirFS(filepath.Join("..", "..", "..", "examples", "skills"))); err != nil {
		t.Fatal(err)
	}
	// A folder skill with hostile frontmatter and file names, and one that
	// the folder rules skip (its name does not match its folder).
	writeFile(t, filepath.Join(folder, "hostile", "SKILL.md"), "---\nname: hostile\ndescription: \"<script>alert('fm')</script> a hostile folder skill\"\n"+
		"metadata:\n  note: \"<img src=x onerror=alert('meta')>\"\n---\n# Hostile folder skill\n\nSee [the file](<img src=x onerror=alert(1)>.txt).\n")
	writeFile(t, filepath.Join(folder, "hostile", "<img src=x onerror=alert('file')>.txt"), "<script>alert('text')</script>\n")
	writeFile(t, filepath.Join(folder, "broken", "SKILL.md"), "---\nname: not-broken\ndescription: a name that is not its folder's\n---\n# Broken\n")

	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	// A team token makes the engine ask every worker for a token: the
	// publisher below presents the shared one.
	writeFile(t, config, "engine_token: "+webEngineToken+"\nengine_tokens:\n  - {name: ver, token: "+webTeamToken+", namespaces: [ver]}\n")
	_, logs := startSkills(t, "--config", config, "--standalone", "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", httpAddr,
		"--mcp-token", webToken, "--skills-folder", folder, "--protected-labels", "production", "--admin-token", webAdminToken)
	waitListening(t, httpAddr, logs)
	// The listener accepts before the line is logged: wait for it (the
	// deadline only bounds a broken start).
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "web page http://"+httpAddr+"/"); {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not log the web page's URL:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	client := iii.New("ws://"+engineAddr, iii.WithName("browser-test-publisher"), iii.WithHeaders(http.Header{"Authorization": {"Bearer " + webEngineToken}}))
	if _, err := client.RegisterFunction("webtest::greet", func(_ context.Context, data json.RawMessage) (any, error) {
		var in struct {
			Who string `json:"who"`
		}
		_ = json.Unmarshal(data, &in)
		return "Hello, " + in.Who + "! <script>alert('prompt')</script>", nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := client.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	// Team ver's publisher: the skills it registers belong to the team,
	// so the team's token on the page may manage them while it is
	// connected.
	team := iii.New("ws://"+engineAddr, iii.WithName("browser-test-team-ver"), iii.WithHeaders(http.Header{"Authorization": {"Bearer " + webTeamToken}}))
	if err := team.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = team.Close() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.Flag("lang", "en-US"))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx)
	t.Cleanup(tcancel)
	s := &browserStack{base: "http://" + httpAddr, addr: httpAddr, folder: folder, client: client, team: team, ctx: tab,
		dialogs: &eventLog{}, console: &eventLog{}, shots: os.Getenv("SKILLS_WEB_SCREENSHOTS")}
	dialogs := chromedp.Events(tab, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			s.dialogs.add(ev.Message)
			_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	if err := chromedp.Listen(tab, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value))
			}
			s.console.add(string(ev.Type) + ": " + strings.Join(parts, " "))
		case *runtime.EventExceptionThrown:
			s.console.add("exception: " + (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
		case *cdplog.EventEntryAdded:
			s.console.add(string(ev.Entry.Level) + ": " + ev.Entry.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *browserStack) trigger(t *testing.T, fn string, payload any) json.RawMessage {
	t.Helper()
	return triggerOn(t, s.ctx, s.client, fn, payload)
}

// teamTrigger calls fn as team ver's publisher.
func (s *browserStack) teamTrigger(t *testing.T, fn string, payload any) json.RawMessage {
	t.Helper()
	return triggerOn(t, s.ctx, s.team, fn, payload)
}

func triggerOn(t *testing.T, ctx context.Context, c *iii.Client, fn string, payload any) json.RawMessage {
	t.Helper()
	data, _ := json.Marshal(payload)
	out, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data})
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	return out
}

func (s *browserStack) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v\nconsole: %q\npage: %s", err, s.console.all(), s.pageText())
	}
}

// pageText is what the page shows now, for a failure's message.
func (s *browserStack) pageText() string {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.querySelector("main") || document.body).innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return text
}

// get runs one action that returns a value.
func get[T any](t *testing.T, s *browserStack, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v\nconsole: %q", err, s.console.all())
	}
	return v
}

// eval evaluates a script in the page and decodes its value into out.
func (s *browserStack) eval(t *testing.T, js string, out any) {
	t.Helper()
	raw := get(t, s, chromedp.Evaluate[json.RawMessage](js))
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("script %s: %v (value %s)", js, err, raw)
		}
	}
}

// shot saves a screenshot of the current page when screenshots are asked for.
func (s *browserStack) shot(t *testing.T, name string) {
	t.Helper()
	if s.shots == "" {
		return
	}
	png := get(t, s, chromedp.FullScreenshot(100))
	if err := os.MkdirAll(s.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.shots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// markPage sets a value that survives only while the document is not reloaded.
func (s *browserStack) markPage(t *testing.T) {
	s.eval(t, `window.__noReload = 42`, nil)
}

func (s *browserStack) assertNotReloaded(t *testing.T) {
	t.Helper()
	var v int
	s.eval(t, `window.__noReload || 0`, &v)
	if v != 42 {
		t.Fatal("the page was reloaded (or navigated); live updates must swap the region in place")
	}
}

func TestWebPageInBrowser(t *testing.T) {
	s := startBrowserStack(t)
	s.trigger(t, "skills::register", map[string]string{"id": "resend/email/send",
		"skill": "# Send email\n\nSend a transactional email through Resend, with attachments and tags.\n\n## Usage\n\nCall `resend::send` with `to`, `subject` and `html`. See [getting started](iii://iii/getting-started)."})
	s.trigger(t, "prompts::register", map[string]any{"name": "greet", "description": "Greet someone by name.", "function_id": "webtest::greet",
		"arguments": []map[string]any{{"name": "who", "description": "who to greet", "required": true}}})

	t.Run("SignIn", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.ID("token")))
		s.shot(t, "signin")
		s.run(t, chromedp.SendKeys(chromedp.ID("token"), webToken), chromedp.Submit(chromedp.ID("token")),
			chromedp.WaitVisible(chromedp.CSS(`li.card[data-id="pdf-processing"]`)))
	})

	t.Run("ListShowsFolderAndPublishedSkills", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.CSS(`li.card[data-id="resend/email/send"]`)))
		var origins map[string]string
		s.eval(t, `Object.fromEntries([...document.querySelectorAll("li.card")].map(c => [c.dataset.id, c.querySelector(".tag").textContent]))`, &origins)
		if origins["pdf-processing"] != "folder" || origins["iii/getting-started"] != "folder" || origins["resend/email/send"] != "published" {
			t.Fatalf("cards and origins: %v", origins)
		}
		// The page names the worker that published the skill.
		var by string
		s.eval(t, `document.querySelector('li.card[data-id="resend/email/send"] .src').textContent`, &by)
		if !strings.HasPrefix(by, "published by browser-test-publisher (") {
			t.Fatalf("the published skill's origin reads %q; want it to name browser-test-publisher", by)
		}
		var ns []string
		s.eval(t, `[...document.querySelectorAll(".namespaces a")].map(a => a.textContent)`, &ns)
		if strings.Join(ns, ",") != "iii/,resend/" {
			t.Fatalf("namespace tree: %v", ns)
		}
		s.shot(t, "catalog")
	})

	t.Run("SearchFindsASkillByWhatItDoes", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.ID("q")))
		s.markPage(t)
		s.run(t, chromedp.SendKeys(chromedp.ID("q"), "fill in a pdf form"),
			chromedp.WaitVisible(chromedp.Search(`//h1[contains(., "fill in a pdf form")]`)))
		s.assertNotReloaded(t)
		var first string
		s.eval(t, `document.querySelector("li.card").dataset.id`, &first)
		if first != "pdf-processing" {
			t.Fatalf("live search for 'fill in a pdf form': first result %q, want pdf-processing", first)
		}
		s.shot(t, "search")
		// Without script: the same box is a GET form.
		s.run(t, chromedp.Navigate(s.base+"/?q="+url.QueryEscape("send a transactional message")),
			chromedp.WaitVisible(chromedp.CSS(`li.card`)))
		s.eval(t, `document.querySelector("li.card").dataset.id`, &first)
		if first != "resend/email/send" {
			t.Fatalf("search form for 'send a transactional message': first result %q, want resend/email/send", first)
		}
	})

	t.Run("SkillPageRendersMarkdownAndListsFiles", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/skill/pdf-processing"), chromedp.WaitVisible(chromedp.CSS(".markdown pre code")))
		var got struct {
			H1, Code string
			Files    []string
			Fields   []string
			URIs     []string
		}
		s.eval(t, `({H1: document.querySelector("h1").textContent + "|" + document.querySelectorAll("h1").length,
			Code: document.querySelector(".markdown pre code").textContent,
			Files: [...document.querySelectorAll("table.files tbody td:first-child a")].map(a => a.textContent),
			Fields: [...document.querySelectorAll(".fields dt")].map(d => d.textContent),
			URIs: [...document.querySelectorAll(".uris code")].map(c => c.textContent)})`, &got)
		if got.H1 != "PDF processing|1" || !strings.Contains(got.Code, "scripts/extract_text.py") {
			t.Fatalf("rendered markdown: %+v", got)
		}
		if strings.Join(got.Files, ",") != "SKILL.md,assets/header.png,references/REFERENCE.md,scripts/extract_text.py" {
			t.Fatalf("files: %v", got.Files)
		}
		if strings.Join(got.Fields, ",") != "name,description,license,metadata,allowed-tools" ||
			strings.Join(got.URIs, ",") != "iii://pdf-processing,skill://pdf-processing/SKILL.md" {
			t.Fatalf("frontmatter %v, uris %v", got.Fields, got.URIs)
		}
		// A relative link to a file of the skill opens its view.
		s.run(t, chromedp.Click(chromedp.Search(`//div[@class="markdown"]//a[text()="the reference"]`)),
			chromedp.WaitVisible(chromedp.CSS("#file pre code")))
		var text string
		s.eval(t, `document.querySelector("#file pre code").textContent`, &text)
		if !strings.Contains(text, "#") {
			t.Fatalf("file view: %q", text)
		}
		s.shot(t, "skill")
		// Links between skills stay inside the page.
		s.run(t, chromedp.Navigate(s.base+"/skill/resend/email/send"),
			chromedp.Click(chromedp.Search(`//div[@class="markdown"]//a[text()="getting started"]`)),
			chromedp.WaitVisible(chromedp.Search(`//h1[contains(., "Getting started")]`)))
		var loc string
		s.eval(t, `location.pathname`, &loc)
		if loc != "/skill/iii/getting-started" {
			t.Fatalf("iii:// link led to %s", loc)
		}
	})

	t.Run("WorksWithoutJavaScript", func(t *testing.T) {
		setScripts := func(disabled bool) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: disabled})
				return err
			})
		}
		s.run(t, setScripts(true))
		defer s.run(t, setScripts(false))
		s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.ID("q")),
			chromedp.SendKeys(chromedp.ID("q"), "transactional email"), chromedp.Submit(chromedp.ID("q")),
			chromedp.WaitVisible(chromedp.Search(`//h1[contains(., "transactional email")]`)),
			chromedp.Click(chromedp.CSS(`li.card[data-id="resend/email/send"] h3 a`)),
			chromedp.WaitVisible(chromedp.Search(`//h1[text()="Send email"]`)),
			// app.js shows the copy buttons; without it they stay hidden.
			chromedp.WaitNotVisible(chromedp.CSS("button.copy")))
	})

	t.Run("HostileContentRunsNothing", func(t *testing.T) {
		s.trigger(t, "skills::register", map[string]string{"id": "evil/xss", "skill": hostileBody})
		for _, p := range []string{"/skill/evil/xss", "/skill/hostile", "/skill/hostile?file=" + url.QueryEscape("<img src=x onerror=alert('file')>.txt"), "/", "/?q=evil", "/diagnostics"} {
			s.run(t, chromedp.Navigate(s.base+p), chromedp.WaitReady(chromedp.ID("live")))
			var dom struct {
				Elements, Handlers, Hrefs int
				XSS                       any
			}
			s.eval(t, `({Elements: document.querySelectorAll("#live script, #live iframe, #live object, #live embed, #live svg, #live base, #live form[action^='javascript' i]").length,
				Handlers: [...document.querySelectorAll("#live *")].filter(e => [...e.attributes].some(a => a.name.startsWith("on"))).length,
				Hrefs: [...document.querySelectorAll("#live [href], #live [src]")].filter(e => /^\s*(javascript|data|vbscript):/i.test(e.getAttribute("href") || e.getAttribute("src"))).length,
				XSS: window.__xss || null})`, &dom)
			if dom.Elements != 0 || dom.Handlers != 0 || dom.Hrefs != 0 || dom.XSS != nil {
				t.Errorf("%s: hostile markup reached the DOM: %+v", p, dom)
			}
		}
		if d := s.dialogs.all(); len(d) > 0 {
			t.Errorf("dialogs opened: %q", d)
		}
		for _, m := range s.console.all() {
			if strings.Contains(m, "Content Security Policy") || strings.Contains(m, "alert") {
				t.Errorf("console: %s", m)
			}
		}
		s.run(t, chromedp.Navigate(s.base+"/skill/evil/xss"), chromedp.WaitVisible(chromedp.CSS(".markdown")))
		text := get(t, s, chromedp.Text(chromedp.CSS(".markdown")))
		if !strings.Contains(text, "click me") || !strings.Contains(text, "Looks harmless.") {
			t.Errorf("the hostile body's text should still show: %q", text)
		}
		s.shot(t, "hostile")
	})

	t.Run("ImagesLoadNothingAndFoldersHaveNoAbsolutePaths", func(t *testing.T) {
		// A host the skill's author picked: a browser that loads the
		// image tells it who reads the page.
		var hits sync.Map
		pixel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Store(r.URL.Path, true)
			w.Header().Set("Content-Type", "image/gif")
			_, _ = w.Write([]byte("GIF89a"))
		}))
		defer pixel.Close()
		s.trigger(t, "skills::register", map[string]string{"id": "evil/pixel", "skill": "# Pixel\n\n![tracking pixel](" + pixel.URL + "/p.gif)\n\nText after.\n"})
		s.run(t, chromedp.Navigate(s.base+"/skill/evil/pixel"), chromedp.WaitVisible(chromedp.CSS(".markdown")), chromedp.Sleep(300*time.Millisecond))
		// Only the skill's body counts: the usage chart is an <img> the
		// registry serves itself.
		var images int
		s.eval(t, `document.querySelectorAll("#live .markdown img").length`, &images)
		link := get(t, s, chromedp.Text(chromedp.CSS(`.markdown a[href^="`+pixel.URL+`"]`)))
		if _, loaded := hits.Load("/p.gif"); loaded || images != 0 || link != "tracking pixel (image: "+pixel.URL+"/p.gif)" {
			t.Fatalf("remote image: loaded %v, %d <img>, link %q", loaded, images, link)
		}
		// Folder skills and diagnostics name the folder without the
		// server's absolute path (which only its log holds).
		for _, p := range []string{"/", "/skill/pdf-processing", "/diagnostics"} {
			s.run(t, chromedp.Navigate(s.base+p), chromedp.WaitReady(chromedp.ID("live")))
			text := get(t, s, chromedp.Text(chromedp.CSS("main")))
			if strings.Contains(text, s.folder) || strings.Contains(text, filepath.Dir(s.folder)) {
				t.Errorf("%s shows the folder's absolute path %s:\n%s", p, s.folder, text)
			}
			if p == "/skill/pdf-processing" && !strings.Contains(text, "folder "+filepath.Base(s.folder)+" · pdf-processing/SKILL.md") {
				t.Errorf("%s does not name the folder by its name:\n%s", p, text)
			}
		}
	})

	t.Run("ChangesAppearWithoutReload", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.CSS(`li.card[data-id="pdf-processing"]`)))
		s.markPage(t)
		s.trigger(t, "skills::register", map[string]string{"id": "live/fresh", "skill": "# Fresh\n\nRegistered while the page was open."})
		s.run(t, chromedp.WaitVisible(chromedp.CSS(`li.card[data-id="live/fresh"]`)))
		writeFile(t, filepath.Join(s.folder, "notes", "edited.md"), "# Edited on disk\n\nA file written while the page was open.\n")
		s.run(t, chromedp.WaitVisible(chromedp.CSS(`li.card[data-id="notes/edited"]`)))
		s.trigger(t, "skills::unregister", map[string]string{"id": "evil/xss"})
		s.run(t, chromedp.WaitNotPresent(chromedp.CSS(`li.card[data-id="evil/xss"]`)))
		s.assertNotReloaded(t)

		// An open skill page follows its own skill.
		s.run(t, chromedp.Navigate(s.base+"/skill/live/fresh"), chromedp.WaitVisible(chromedp.CSS(".markdown p")))
		s.markPage(t)
		s.trigger(t, "skills::register", map[string]string{"id": "live/fresh", "skill": "# Fresher\n\nChanged while the page was open."})
		s.run(t, chromedp.WaitVisible(chromedp.Search(`//h1[text()="Fresher"]`)),
			chromedp.WaitVisible(chromedp.Search(`//div[@class="markdown"]/p[text()="Changed while the page was open."]`)))
		s.assertNotReloaded(t)
	})

	t.Run("PromptsRenderThroughTheRegistry", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/prompts"), chromedp.WaitVisible(chromedp.ID("arg-greet-who")),
			chromedp.SendKeys(chromedp.ID("arg-greet-who"), "Ada"), chromedp.Submit(chromedp.ID("arg-greet-who")),
			chromedp.WaitVisible(chromedp.CSS(".result pre code")))
		var text string
		s.eval(t, `document.querySelector(".result pre code").textContent`, &text)
		if !strings.HasPrefix(text, "Hello, Ada!") {
			t.Fatalf("rendered prompt: %q", text)
		}
		var folderPrompts []string
		s.eval(t, `[...document.querySelectorAll("#folder-h ~ ul h3")].map(h => h.textContent)`, &folderPrompts)
		if strings.Join(folderPrompts, ",") != "/explain-function" {
			t.Fatalf("folder prompts: %v", folderPrompts)
		}
		s.shot(t, "prompts")
	})

	t.Run("DiagnosticsAndWorkers", func(t *testing.T) {
		var skipped []string
		s.run(t, chromedp.Navigate(s.base+"/diagnostics"), chromedp.WaitVisible(chromedp.ID("skipped-h")))
		s.eval(t, `[...document.querySelectorAll("table.skipped tbody tr")].map(r => r.textContent)`, &skipped)
		if len(skipped) == 0 || !strings.Contains(strings.Join(skipped, "\n"), "broken/SKILL.md") {
			t.Fatalf("skipped files: %q", skipped)
		}
		s.shot(t, "diagnostics")
		s.run(t, chromedp.Navigate(s.base+"/workers"), chromedp.WaitVisible(chromedp.ID("live")))
		workers := get(t, s, chromedp.Text(chromedp.ID("live")))
		if !strings.Contains(workers, "browser-test-publisher") || !strings.Contains(workers, "skills") {
			t.Fatalf("workers page: %q", workers)
		}
		s.shot(t, "workers")
	})

	t.Run("UnregisterWithTheAdminToken", func(t *testing.T) {
		s.run(t, chromedp.Navigate(s.base+"/skill/live/fresh"), chromedp.WaitVisible(chromedp.CSS(`form[action="/actions/unregister"] button`)),
			chromedp.SendKeys(chromedp.ID("unreg-token"), webAdminToken),
			chromedp.Click(chromedp.CSS(`form[action="/actions/unregister"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`.notice`)))
		out := s.trigger(t, "skill::fetch", map[string]string{"uri": "iii://skills"})
		if strings.Contains(string(out), "live/fresh") {
			t.Fatalf("live/fresh still served after unregister: %s", out)
		}
	})

	t.Run("VersionsLabelsAndDiffs", func(t *testing.T) { s.versions(t) })

	t.Run("PhoneWidthAndZoom", func(t *testing.T) {
		// 390 CSS px is a phone; 1280 px at 400 % zoom is 320 CSS px.
		for _, width := range []int64{390, 320} {
			var overflow bool
			s.run(t, chromedp.EmulateViewport(width, 800), chromedp.Navigate(s.base+"/skill/pdf-processing"),
				chromedp.WaitVisible(chromedp.CSS(".markdown")))
			s.eval(t, `document.documentElement.scrollWidth > document.documentElement.clientWidth`, &overflow)
			if overflow {
				t.Errorf("at %d px the skill page scrolls sideways", width)
			}
			if width == 390 {
				s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.CSS("li.card")))
				s.shot(t, "phone")
			}
		}
		s.run(t, chromedp.EmulateViewport(1280, 900))
	})

	t.Run("KeyboardSkipLinkAndFocus", func(t *testing.T) {
		var first, outline string
		s.run(t, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.CSS("li.card")), chromedp.KeyEvent("\t"))
		s.eval(t, `document.activeElement.textContent`, &first)
		s.eval(t, `getComputedStyle(document.activeElement).outlineStyle`, &outline)
		if first != "Skip to content" || outline == "none" {
			t.Fatalf("first Tab: %q with outline %q; want the visible skip link", first, outline)
		}
		var landmarks int
		s.eval(t, `document.querySelectorAll("header, nav, main, footer, [role=search]").length`, &landmarks)
		if landmarks < 5 {
			t.Fatalf("landmarks: %d", landmarks)
		}
	})

	t.Run("ForeignHostIsRefused", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.base+"/", nil)
		req.Host = "attacker.example:" + strings.Split(s.addr, ":")[1]
		req.Header.Set("Authorization", "Bearer "+webToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "Host") {
			t.Fatalf("foreign Host: %d %s", res.StatusCode, body)
		}
	})

	t.Run("ActionWithoutTokenIsRefused", func(t *testing.T) {
		// The same form the page posts, same origin and CSRF value, no token.
		jar := &cookieJar{}
		res := jar.do(t, http.MethodGet, s.base+"/signin", nil, "")
		csrf := jar.get(csrfCookieName)
		if res.StatusCode != http.StatusOK || csrf == "" {
			t.Fatalf("sign-in form: %d, csrf %q", res.StatusCode, csrf)
		}
		form := url.Values{"csrf": {csrf}, "id": {"resend/email/send"}}
		res = jar.do(t, http.MethodPost, s.base+"/actions/unregister", form, s.base)
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unregister without token: %d, want 401", res.StatusCode)
		}
		form.Set("token", "wrong")
		if res = jar.do(t, http.MethodPost, s.base+"/actions/unregister", form, s.base); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unregister with a wrong token: %d, want 401", res.StatusCode)
		}
		form.Set("token", webAdminToken)
		if res = jar.do(t, http.MethodPost, s.base+"/actions/unregister", form, "http://localhost:1"); res.StatusCode != http.StatusForbidden {
			t.Fatalf("unregister from another origin: %d, want 403", res.StatusCode)
		}
		// The MCP token reads the page; it changes nothing.
		form.Set("token", webToken)
		if res = jar.do(t, http.MethodPost, s.base+"/actions/unregister", form, s.base); res.StatusCode != http.StatusForbidden {
			t.Fatalf("unregister with the MCP token: %d, want 403", res.StatusCode)
		}
		out := s.trigger(t, "skill::fetch", map[string]string{"uri": "iii://resend/email/send"})
		if !strings.Contains(string(out), "Send email") {
			t.Fatalf("refused actions must leave the skill: %s", out)
		}
	})
}

const csrfCookieName = "skills_web_csrf"

// cookieJar is the least a client needs to post the page's forms.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) get(name string) string {
	for _, c := range j.cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func (j *cookieJar) do(t *testing.T, method, target string, form url.Values, origin string) *http.Response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for _, c := range j.cookies {
		req.AddCookie(c)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	j.cookies = append(j.cookies, res.Cookies()...)
	return res
}
