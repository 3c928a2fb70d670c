package directory

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
)

const pdfSkill = "---\nname: pdf\ndescription: Extract text from PDF files. Use for PDFs.\n---\n# PDF\n\nSee [guide](references/guide.md).\n"

var pngBytes = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0xff}

// agentFolder makes a folder with an iii-directory layout and an Agent
// Skills skill (nested references, a binary asset, a script), a prompt
// and a few bad files.
func agentFolder(t *testing.T) string {
	root := t.TempDir()
	long := strings.Repeat("long words ", 20) // 220 chars: never truncated here
	put(t, root, "indexed.md", "# Indexed\n\n"+long+"\n")
	put(t, root, "ns/a.md", "---\ntype: how-to\nfunctions: [math::add]\ntitle: Adding numbers\n---\n# A\n\nCall iii://fn/math/add.\n")
	put(t, root, "ns/b.md", "# B\n\nMentions math::add in passing.\n")
	put(t, root, "pdf/SKILL.md", pdfSkill)
	put(t, root, "pdf/references/guide.md", "# Guide\n")
	put(t, root, "pdf/references/deep/more.md", "# More\n")
	put(t, root, "pdf/assets/logo.png", string(pngBytes))
	put(t, root, "pdf/scripts/run.py", "print('pdf')\n")
	put(t, root, "ns/prompts/greet.md", "---\ndescription: Say hello\n---\nHello!\n")
	put(t, root, "bad/Upper.md", "# Upper\n")
	put(t, root, "bad/empty.md", "---\nx: 1\n---\n")
	return root
}

func TestSkillsSurface(t *testing.T) {
	root := agentFolder(t)
	s := startStack(t, []string{root}, DefaultConfig(), Options{})

	var list struct {
		Skills []struct {
			ID         string `json:"id"`
			Bytes      int64  `json:"bytes"`
			ModifiedAt string `json:"modified_at"`
		} `json:"skills"`
	}
	s.must(t, FnSkillsList, map[string]any{}, &list)
	var ids []string
	for _, r := range list.Skills {
		ids = append(ids, r.ID)
		fi, err := os.Stat(filepath.Join(root, map[string]string{"pdf": "pdf/SKILL.md"}[r.ID]+map[bool]string{true: "", false: r.ID + ".md"}[r.ID == "pdf"]))
		if err != nil {
			t.Fatal(err)
		}
		if r.Bytes != fi.Size() || r.ModifiedAt != registry.Timestamp(fi.ModTime()) {
			t.Errorf("%s: bytes %d modified_at %q, file %d %s", r.ID, r.Bytes, r.ModifiedAt, fi.Size(), registry.Timestamp(fi.ModTime()))
		}
	}
	if strings.Join(ids, " ") != "indexed ns/a ns/b pdf" {
		t.Fatalf("ids %v", ids)
	}

	// Bare paths are prefixed; sections joined; no truncation in the index.
	got := s.text(t, FnSkillsFetch, map[string]any{"uris": []string{"ns/b", "iii://pdf"}})
	want := "# iii://ns/b\n\n# B\n\nMentions math::add in passing.\n\n---\n\n# iii://pdf\n\n# PDF\n\nSee [guide](references/guide.md)."
	if got != want {
		t.Fatalf("fetch:\n%q\nwant\n%q", got, want)
	}
	index := s.text(t, FnSkillsFetch, map[string]any{"uri": "directory/skills"})
	wantIndex := "# iii://directory/skills\n\n" + strings.TrimRight(registry.IndexHeader+
		"- [`indexed`](iii://indexed) — Indexed — "+strings.TrimSpace(strings.Repeat("long words ", 20))+"\n"+
		"  - [`ns/a`](iii://ns/a) — A — Call iii://fn/math/add.\n"+
		"  - [`ns/b`](iii://ns/b) — B — Mentions math::add in passing.\n"+
		"- [`pdf`](iii://pdf) — PDF — Extract text from PDF files. Use for PDFs.\n", "\n")
	if index != wantIndex {
		t.Fatalf("index:\n%s\nwant\n%s", index, wantIndex)
	}
	// iii://skills is an ordinary id here.
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "iii://skills"}, "Skill not found: skills")
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "iii://directory/skills/"}, "Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://directory/skills/")
	s.fails(t, FnSkillsFetch, map[string]any{"uris": []string{"ns/a", "https://x"}}, "Invalid URI (must start with iii://): https://x")
	s.fails(t, FnSkillsFetch, map[string]any{"uris": []string{" "}}, "Provide uri or a non-empty uris array")
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "bad/Upper"}, "invalid id (segment 2 of \"bad/Upper\")")
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "../etc/passwd"}, "invalid id")
	// Section URIs call any function (no hidden-namespace guard in v0.5).
	if _, err := s.caller.RegisterFunction("math::add", func(context.Context, json.RawMessage) (any, error) { return "two", nil }); err != nil {
		t.Fatal(err)
	}
	if got := s.text(t, FnSkillsFetch, map[string]any{"uri": "fn/math/add"}); got != "# iii://fn/math/add\n\ntwo" {
		t.Fatalf("section %q", got)
	}
	if got := s.text(t, FnSkillsFetch, map[string]any{"uri": "iii://fn/engine/workers/list"}); !strings.Contains(got, "workers") {
		t.Fatalf("engine section %q", got)
	}
	// A section whose function fails or does not exist: "trigger {function_id}: {sdk error}".
	if _, err := s.caller.RegisterFunction("math::fail", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("no result today") }); err != nil {
		t.Fatal(err)
	}
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "fn/math/fail"}, "trigger math::fail: ")
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "fn/math/fail"}, "no result today")
	s.fails(t, FnSkillsFetch, map[string]any{"uri": "iii://fn/math/none"}, "trigger math::none: ")

	// Folder skills in the registry surface, marked with their origin.
	if got := s.text(t, rules.FnSkillFetch, map[string]any{"uri": "iii://pdf"}); got != "# iii://pdf\n\n# PDF\n\nSee [guide](references/guide.md)." {
		t.Fatalf("skill::fetch %q", got)
	}
	raw := s.must(t, rules.FnSkillsResourcesList, map[string]any{}, nil)
	if !strings.Contains(string(raw), `{"mimeType":"text/markdown","name":"PDF","uri":"iii://pdf","origin":"folder"}`) {
		t.Fatalf("resources-list %s", raw)
	}
	// A published skill at the same id wins; the listing says what it hides.
	s.must(t, rules.FnSkillsRegister, map[string]string{"id": "pdf", "skill": "# Published PDF\n"}, nil)
	if got := s.text(t, rules.FnSkillFetch, map[string]any{"uri": "pdf"}); got != "# iii://pdf\n\n# Published PDF" {
		t.Fatalf("published should win: %q", got)
	}
	// Folders are named without the server's absolute paths.
	raw = s.must(t, rules.FnSkillsList, map[string]any{}, nil)
	shown := catalog.DisplayRoot(root)
	if !strings.Contains(string(raw), `"id":"pdf","registered_at":"`) ||
		!strings.Contains(string(raw), `"shadows":[{"kind":"folder","path":"pdf/SKILL.md","source":"`+shown+`"}]`) ||
		!strings.Contains(string(raw), `{"bytes":36,"id":"ns/b","origin":{"kind":"folder","path":"ns/b.md","source":"`+shown+`"},"registered_at":"`) ||
		strings.Contains(string(raw), root) {
		t.Fatalf("skills::list %s", raw)
	}
	// The directory surface still serves the folder's own file.
	if got := s.text(t, FnSkillsFetch, map[string]any{"uri": "pdf"}); !strings.Contains(got, "# PDF") {
		t.Fatalf("directory fetch after publish %q", got)
	}
	s.must(t, rules.FnSkillsUnregister, map[string]string{"id": "pdf"}, nil)
	if got := s.text(t, rules.FnSkillFetch, map[string]any{"uri": "pdf"}); !strings.Contains(got, "# PDF\n") {
		t.Fatalf("folder skill back after unregister: %q", got)
	}

	// Diagnostics name every skipped file.
	var diag struct {
		Folders []FolderRow  `json:"folders"`
		Skipped []SkippedRow `json:"skipped"`
	}
	raw = s.must(t, FnSkillsDiagnostics, map[string]any{}, &diag)
	if len(diag.Folders) != 1 || diag.Folders[0].Skills != 4 || diag.Folders[0].Prompts != 1 || !diag.Folders[0].Exists {
		t.Fatalf("folders %+v", diag.Folders)
	}
	if strings.Contains(string(raw), root) || diag.Folders[0].Path != shown {
		t.Fatalf("diagnostics name the folder by its absolute path: %s", raw)
	}
	reasons := map[string]string{}
	for _, p := range diag.Skipped {
		reasons[p.Path] = p.Reason
	}
	if reasons["bad/empty.md"] != "file has empty body" || !strings.HasPrefix(reasons["bad/Upper.md"], `invalid id "bad/Upper"`) || len(reasons) != 2 {
		t.Fatalf("skipped %+v", diag.Skipped)
	}
}

func TestEmptyIndexAndNoFolder(t *testing.T) {
	s := startStack(t, []string{filepath.Join(t.TempDir(), "missing")}, DefaultConfig(), Options{})
	if got := s.text(t, FnSkillsFetch, map[string]any{"uri": "iii://directory/skills"}); got != "# iii://directory/skills\n\n"+strings.TrimRight(registry.IndexHeader+IndexEmptyLine, "\n") {
		t.Fatalf("empty index %q", got)
	}
	raw := s.must(t, FnSkillsList, map[string]any{}, nil)
	if string(raw) != `{"skills":[]}` {
		t.Fatalf("list %s", raw)
	}
	raw = s.must(t, FnPromptsList, map[string]any{}, nil)
	if string(raw) != `{"prompts":[]}` {
		t.Fatalf("prompts %s", raw)
	}
}

func TestPrompts(t *testing.T) {
	root := agentFolder(t)
	s := startStack(t, []string{root}, DefaultConfig(), Options{})
	var got struct {
		Name, Description, Body, ModifiedAt string `json:"-"`
	}
	raw := s.must(t, FnPromptsGet, map[string]any{"name": "greet"}, nil)
	if err := json.Unmarshal(raw, &map[string]any{}); err != nil {
		t.Fatal(err)
	}
	_ = got
	if !strings.HasPrefix(string(raw), `{"name":"greet","description":"Say hello","body":"Hello!\n","modified_at":"`) {
		t.Fatalf("get %s", raw)
	}
	s.fails(t, FnPromptsGet, map[string]any{"name": ""}, "name must be non-empty")
	s.fails(t, FnPromptsGet, map[string]any{"name": strings.Repeat("a", 65)}, "name too long (65 chars; max 64)")
	s.fails(t, FnPromptsGet, map[string]any{"name": "../x"}, `name may only contain lowercase ASCII letters, digits, '-' and '_': "../x"`)
	s.fails(t, FnPromptsGet, map[string]any{"name": "nope"}, "Prompt not found: nope")
	raw = s.must(t, FnPromptsList, map[string]any{}, nil)
	if !strings.HasPrefix(string(raw), `{"prompts":[{"name":"greet","description":"Say hello","modified_at":"`) {
		t.Fatalf("list %s", raw)
	}
}

func TestHotReloadEvents(t *testing.T) {
	root := agentFolder(t)
	s := startStack(t, []string{root}, DefaultConfig(), Options{})
	dirEvents := s.sink(t, TriggerSkillsOnChange, func() int { return len(s.dir.skillSubs.Bindings()) })
	promptEvents := s.sink(t, TriggerPromptsOnChange, func() int { return len(s.dir.promptSubs.Bindings()) })
	regEvents := s.sink(t, rules.TriggerSkillsOnChange, func() int { return 1 })
	time.Sleep(100 * time.Millisecond) // the registry's binding is not observable from here

	put(t, root, "fresh.md", "# Fresh\n")
	expect(t, dirEvents, `{"id":"fresh","op":"put","path":"fresh.md","source":"watch"}`)
	expect(t, regEvents, `{"id":"fresh","op":"register"}`)
	if got := s.text(t, rules.FnSkillFetch, map[string]any{"uri": "fresh"}); got != "# iii://fresh\n\n# Fresh" {
		t.Fatalf("fresh %q", got)
	}
	// Atomic save.
	put(t, root, "fresh.md.tmp", "# Fresher\n")
	if err := os.Rename(filepath.Join(root, "fresh.md.tmp"), filepath.Join(root, "fresh.md")); err != nil {
		t.Fatal(err)
	}
	expect(t, dirEvents, `{"id":"fresh","op":"put","path":"fresh.md","source":"watch"}`)
	expect(t, regEvents, `{"id":"fresh","op":"register"}`)
	if got := s.text(t, FnSkillsFetch, map[string]any{"uri": "fresh"}); got != "# iii://fresh\n\n# Fresher" {
		t.Fatalf("after atomic save %q", got)
	}
	// Rename.
	if err := os.Rename(filepath.Join(root, "fresh.md"), filepath.Join(root, "renamed.md")); err != nil {
		t.Fatal(err)
	}
	expect(t, dirEvents, `{"id":"fresh","op":"remove","path":"fresh.md","source":"watch"}`, `{"id":"renamed","op":"put","path":"renamed.md","source":"watch"}`)
	expect(t, regEvents, `{"id":"fresh","op":"unregister"}`, `{"id":"renamed","op":"register"}`)
	s.fails(t, rules.FnSkillFetch, map[string]any{"uri": "fresh"}, "Skill not found: fresh")
	// Delete.
	if err := os.Remove(filepath.Join(root, "renamed.md")); err != nil {
		t.Fatal(err)
	}
	expect(t, dirEvents, `{"id":"renamed","op":"remove","path":"renamed.md","source":"watch"}`)
	expect(t, regEvents, `{"id":"renamed","op":"unregister"}`)
	s.fails(t, rules.FnSkillFetch, map[string]any{"uri": "renamed"}, "Skill not found: renamed")

	put(t, root, "ns/prompts/bye.md", "---\ndescription: Bye\n---\nBye\n")
	expect(t, promptEvents, `{"name":"bye","op":"put","path":"ns/prompts/bye.md","source":"watch"}`)
}

// registryServer implements the documented registry contract on loopback.
func registryServer(t *testing.T, hits *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "iii-directory/") {
			http.Error(w, "bad agent "+ua, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/w/mailer/skills" && r.URL.Query().Get("tag") == "latest":
			fmt.Fprint(w, `{"name":"mailer","version":"1.0.0","skills":[{"path":"./index.md","content":"# Mailer\n\nSends mail.\n"},{"path":"send.md","content":"# Send\n"}],
				"prompts":[{"name":"compose","description":" Compose a mail ","args_schema":{"type":"object"},"content":"Write it"}]}`)
		case r.URL.Path == "/w/mailer/skills" && r.URL.Query().Get("version") == "1.0.0" && !r.URL.Query().Has("tag"):
			fmt.Fprint(w, `{"name":"mailer","version":"1.0.0","skills":[{"path":"send.md","content":"# Send v1\n"}]}`)
		case r.URL.Path == "/w/evil/skills":
			fmt.Fprint(w, `{"skills":[{"path":"../escape.md","content":"x"}]}`)
		case r.URL.Path == "/w/abs/skills":
			fmt.Fprint(w, `{"skills":[{"path":"/etc/escape.md","content":"x"}]}`)
		case r.URL.Path == "/w/drive/skills":
			fmt.Fprint(w, `{"skills":[{"path":"C:escape.md","content":"x"}]}`)
		case r.URL.Path == "/w/dots/skills":
			fmt.Fprint(w, `{"skills":[{"path":"./.","content":"x"}]}`)
		case r.URL.Path == "/w/nopath/skills":
			fmt.Fprint(w, `{"skills":[{"path":"","content":"x"}]}`)
		case r.URL.Path == "/w/badprompt/skills":
			fmt.Fprint(w, `{"prompts":[{"name":"Bad Name","description":"d","content":"x"}]}`)
		case r.URL.Path == "/w/garbage/skills":
			fmt.Fprint(w, `<html>not json</html>`)
		case r.URL.Path == "/w/other/skills":
			fmt.Fprint(w, `{"name":"someone-else","skills":[]}`)
		case r.URL.Path == "/search":
			fmt.Fprintf(w, `{"workers":[{"name":"mailer","description":"Mail","latest_version":"1.0.0","repository":"https://example.invalid/mailer"},{"description":"no name"}],"q":%q}`, r.URL.Query().Get("q"))
		case r.URL.Path == "/w/mailer":
			fmt.Fprint(w, `{"worker":{"name":"mailer"},"readme":"# Mailer","functions":[{"name":"mailer::send","description":"Send"}],"skillsTree":{"skills":[{"path":"index.md"}]}}`)
		default:
			http.Error(w, "no such worker", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDownloadFromRegistry(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	var hits atomic.Int64
	srv := registryServer(t, &hits)
	s := startStack(t, []string{root}, Config{RegistryURL: srv.URL + "/", RegistryCacheTTL: time.Minute,
		DownloadHosts: []string{hostOf(t, srv.URL)}}, Options{})
	skillEvents := s.sink(t, TriggerSkillsOnChange, func() int { return len(s.dir.skillSubs.Bindings()) })
	promptEvents := s.sink(t, TriggerPromptsOnChange, func() int { return len(s.dir.promptSubs.Bindings()) })

	raw := s.must(t, FnSkillsDownload, map[string]any{"worker": " mailer "}, nil)
	if string(raw) != `{"namespace":"mailer","skills_written":["index.md","send.md"],"prompts_written":["compose"],"source":{"kind":"registry","tag":"latest","worker":"mailer"}}` {
		t.Fatalf("download %s", raw)
	}
	expect(t, skillEvents, `{"namespace":"mailer","op":"download","source":"registry"}`)
	expect(t, promptEvents, `{"namespace":"mailer","op":"download","source":"registry"}`)
	// Served at once.
	if got := s.text(t, FnSkillsFetch, map[string]any{"uri": "mailer/send"}); got != "# iii://mailer/send\n\n# Send" {
		t.Fatalf("downloaded skill %q", got)
	}
	prompt, err := os.ReadFile(filepath.Join(root, "mailer/prompts/compose.md"))
	if err != nil || string(prompt) != "---\nname: compose\ndescription: Compose a mail\nargs_schema:\n    type: object\n---\nWrite it\n" {
		t.Fatalf("prompt file %q %v", prompt, err)
	}
	// With a version, the query and the source say version.
	raw = s.must(t, FnSkillsDownload, map[string]any{"worker": "mailer", "version": "1.0.0"}, nil)
	if string(raw) != `{"namespace":"mailer","skills_written":["send.md"],"prompts_written":[],"source":{"kind":"registry","version":"1.0.0","worker":"mailer"}}` {
		t.Fatalf("download with version %s", raw)
	}
	for worker, msg := range map[string]string{
		"evil":      `invalid skill path "../escape.md": path may not contain '..': "../escape.md"`,
		"abs":       `invalid skill path "/etc/escape.md": path may not be absolute: "/etc/escape.md"`,
		"drive":     `invalid skill path "C:escape.md": path may not contain a prefix or root: "C:escape.md"`,
		"dots":      `invalid skill path "./.": path resolved to empty: "./."`,
		"nopath":    `invalid skill path "": path must be non-empty`,
		"badprompt": `invalid prompt name "Bad Name": `,
		"garbage":   "decode registry response: ",
		"w!":        `worker name may only contain lowercase letters, digits, '-', '_': "w!"`,
	} {
		s.fails(t, FnSkillsDownload, map[string]any{"worker": worker}, msg)
	}
	s.fails(t, FnSkillsDownload, map[string]any{"worker": "other"}, `registry returned worker name "someone-else", expected "other"`)
	s.fails(t, FnSkillsDownload, map[string]any{"worker": "missing"}, "registry GET "+srv.URL+"/w/missing/skills?tag=latest returned HTTP 404: no such worker")
	s.fails(t, FnSkillsDownload, map[string]any{"worker": "Bad"}, `worker name must start with a lowercase ASCII letter or digit: "Bad"`)
	for payload, msg := range map[string]string{
		`{"repo":"https://x","worker":"w"}`:      msgDownloadBoth,
		`{}`:                                     msgDownloadNeither,
		`{"branch":"dev"}`:                       msgRepoRequired,
		`{"repo":"https://x"}`:                   msgSkillRequired,
		`{"tag":"t"}`:                            msgWorkerRequired,
		`{"worker":"w","version":"1","tag":"t"}`: msgVersionOrTag,
		`{"repo":"file:///etc","skill":"x"}`:     `repo may not be a file: URL: "file:///etc"`,
		`{"repo":"https://x","skill":"../x"}`:    `skill name may not contain '/' or '\': "../x"`,
	} {
		s.fails(t, FnSkillsDownload, json.RawMessage(payload), msg)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape.md")); err == nil {
		t.Fatal("a download wrote outside the folder")
	}

	// Registry proxy, cached.
	before := hits.Load()
	for range 2 {
		raw = s.must(t, FnRegistryWorkersList, map[string]any{"search": "mail", "limit": 500}, nil)
	}
	if string(raw) != `{"workers":[{"name":"mailer","description":"Mail","version":"1.0.0","repo":"https://example.invalid/mailer"}]}` {
		t.Fatalf("registry list %s", raw)
	}
	if hits.Load() != before+1 {
		t.Fatalf("cache: %d calls", hits.Load()-before)
	}
	raw = s.must(t, FnRegistryWorkersInfo, map[string]any{"name": "mailer"}, nil)
	if !strings.Contains(string(raw), `"functions":[{"name":"mailer::send","description":"Send","request_schema":null`) ||
		!strings.Contains(string(raw), `"skills_tree":{"skills":[{"path":"index.md"}],"prompts":[]}`) {
		t.Fatalf("registry info %s", raw)
	}
	s.fails(t, FnRegistryWorkersList, map[string]any{"search": " "}, "search must be non-empty")
	s.fails(t, FnRegistryWorkersInfo, map[string]any{"name": "../admin"}, `worker name must start with a lowercase ASCII letter or digit: "../admin"`)
	s.fails(t, FnRegistryWorkersInfo, map[string]any{"name": "x", "version": "1", "tag": "t"}, msgVersionOrTag)
}

func TestEngineIntrospection(t *testing.T) {
	root := agentFolder(t)
	s := startStack(t, []string{root}, DefaultConfig(), Options{})
	if _, err := s.caller.RegisterFunction("math::add", func(context.Context, json.RawMessage) (any, error) { return 2, nil }); err != nil {
		t.Fatal(err)
	}
	var info struct {
		FunctionID    string         `json:"function_id"`
		HowGuide      *howGuide      `json:"how_guide"`
		RelatedSkills []relatedSkill `json:"related_skills"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := s.call(FnFunctionsInfo, map[string]any{"function_id": " math::add "}); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.must(t, FnFunctionsInfo, map[string]any{"function_id": " math::add "}, &info)
	if info.HowGuide == nil || info.HowGuide.SkillID != "ns/a" || info.HowGuide.Title != "Adding numbers" || info.HowGuide.Body != "# A\n\nCall iii://fn/math/add." {
		t.Fatalf("how_guide %+v", info.HowGuide)
	}
	if len(info.RelatedSkills) != 1 || info.RelatedSkills[0].SkillID != "ns/b" || info.RelatedSkills[0].Title != "B" {
		t.Fatalf("related %+v", info.RelatedSkills)
	}
	s.fails(t, FnFunctionsInfo, map[string]any{"function_id": ""}, "function_id must be non-empty")
	s.fails(t, FnFunctionsInfo, map[string]any{"function_id": "no::such"}, "function not found: no::such")
	var fl struct {
		Functions []struct {
			FunctionID  string `json:"function_id"`
			Description string `json:"description"`
		} `json:"functions"`
	}
	s.must(t, FnFunctionsList, map[string]any{"prefix": "directory::skills::"}, &fl)
	if len(fl.Functions) != 4 || fl.Functions[1].FunctionID != FnSkillsDownload || fl.Functions[1].Description != DescSkillsDownload {
		t.Fatalf("functions list %+v", fl)
	}
	raw := s.must(t, FnTriggersList, map[string]any{"search": "directory::skills::on-change"}, nil)
	if string(raw) != `{"triggers":[{"id":"directory::skills::on-change","worker_name":"directory","description":"`+DescSkillsOnChange+`"}]}` {
		t.Fatalf("triggers list %s", raw)
	}
	raw = s.must(t, FnTriggersInfo, map[string]any{"id": "directory::skills::on-change"}, nil)
	if !strings.Contains(string(raw), `"instance_count":0`) {
		t.Fatalf("trigger info %s", raw)
	}
	s.fails(t, FnTriggersInfo, map[string]any{"id": "nope"}, "trigger type not found: nope")
	raw = s.must(t, FnWorkersList, map[string]any{"search": "skil"}, nil)
	if !strings.Contains(string(raw), `"name":"skills","description":null`) {
		t.Fatalf("workers %s", raw)
	}
	raw = s.must(t, FnWorkersInfo, map[string]any{"name": "skills"}, nil)
	if !strings.Contains(string(raw), `"function_id":"directory::skills::fetch-skill"`) || !strings.Contains(string(raw), `{"id":"skills::on-change","description":`) {
		t.Fatalf("worker info %s", raw)
	}
	s.fails(t, FnWorkersInfo, map[string]any{"name": "ghost"}, "worker not found: ghost")
	raw = s.must(t, FnRegisteredList, map[string]any{"trigger_type": "state"}, nil)
	if !strings.Contains(string(raw), `"function_id":"skills::cache-sync","worker_name":"skills","config_summary":"{\"scope\":\"skills\",\"skip_own_writes\":true}"`) {
		t.Fatalf("registered %s", raw)
	}
	s.fails(t, FnRegisteredInfo, map[string]any{"id": "ghost"}, "registered trigger not found: ghost")
}

// gitServer serves a local repository with git's smart HTTP protocol over
// TLS on loopback (git http-backend as CGI): download refuses file: URLs,
// so the test clones https:// like a real one. It returns the repo URL and
// the git environment that trusts the server's certificate.
func gitServer(t *testing.T) (string, []string) {
	t.Helper()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	put(t, work, "skills/pdf/SKILL.md", pdfSkill)
	put(t, work, "skills/pdf/references/guide.md", "# Guide\n")
	put(t, work, "skills/pdf/assets/logo.png", string(pngBytes))
	put(t, work, "skills/pdf/prompts/summarize.md", "---\ndescription: Summarize a PDF\n---\nSummarize it.\n")
	put(t, work, "skills/pdf/.hidden", "not copied")
	put(t, work, "skills/notdir", "a file where a skill folder should be")
	put(t, work, "README.md", "# repo\n")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(work, "init", "-q")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "skills")
	git(base, "clone", "-q", "--bare", work, filepath.Join(base, "repo.git"))
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal("git --exec-path: ", err)
	}
	srv := httptest.NewTLSServer(&cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1"},
	})
	t.Cleanup(srv.Close)
	ca := filepath.Join(base, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/repo.git", []string{"GIT_SSL_CAINFO=" + ca}
}

// needGit skips without git and git-http-backend, unless the test runs
// under make (SKILLS_TEST_REQUIRE_GIT, set by test-go after directory-deps
// installed git): there a missing git is a failure.
func needGit(t *testing.T) {
	t.Helper()
	missing := ""
	if _, err := exec.LookPath("git"); err != nil {
		missing = "git is not installed"
	} else if out, err := exec.Command("git", "--exec-path").Output(); err != nil {
		missing = "git --exec-path: " + err.Error()
	} else if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")); err != nil {
		missing = "git-http-backend is missing: " + err.Error()
	}
	switch {
	case missing == "":
	case os.Getenv("SKILLS_TEST_REQUIRE_GIT") != "":
		t.Fatal(missing + " (make directory-deps installs it)")
	default:
		t.Skip(missing + " (make directory-deps installs it)")
	}
}

func TestDownloadFromGit(t *testing.T) {
	needGit(t)
	repo, env := gitServer(t)
	root := filepath.Join(t.TempDir(), "skills")
	cfg := DefaultConfig()
	cfg.DownloadHosts = []string{hostOf(t, repo)}
	s := startStack(t, []string{root}, cfg, Options{GitEnv: env})
	skillEvents := s.sink(t, TriggerSkillsOnChange, func() int { return len(s.dir.skillSubs.Bindings()) })

	raw := s.must(t, FnSkillsDownload, map[string]any{"repo": repo, "skill": "pdf"}, nil)
	want := `{"namespace":"pdf","skills_written":["SKILL.md","assets/logo.png","references/guide.md"],"prompts_written":["summarize"],"source":{"branch":"main","kind":"repo","repo":"` + repo + `","skill":"pdf"}}`
	if string(raw) != want {
		t.Fatalf("download\n%s\nwant\n%s", raw, want)
	}
	expect(t, skillEvents, `{"namespace":"pdf","op":"download","source":"repo"}`)
	if _, err := os.Stat(filepath.Join(root, "pdf/.hidden")); err == nil {
		t.Fatal("hidden file copied")
	}
	e, ok := s.set.Skill("pdf")
	if !ok {
		t.Fatalf("downloaded Agent Skills folder not served: %+v", s.set.Problems())
	}
	logo, _ := e.File("assets/logo.png")
	if b, err := logo.Content.Bytes(); err != nil || string(b) != string(pngBytes) {
		t.Fatal("binary asset")
	}
	s.fails(t, FnSkillsDownload, map[string]any{"repo": repo, "skill": "nope"}, `repo "`+repo+`" has no folder skills/nope/`)
	s.fails(t, FnSkillsDownload, map[string]any{"repo": repo, "skill": "notdir"}, `skills/notdir in "`+repo+`" is not a directory`)
	s.fails(t, FnSkillsDownload, map[string]any{"repo": repo, "skill": "pdf", "branch": "dev"}, "git clone --branch dev exited with exit status 128")
}

// The git source's checks, including those download's classification
// leaves unreachable over iii (an empty skill, repo or branch).
func TestGitChecks(t *testing.T) {
	for _, c := range []struct{ skill, repo, branch, want string }{
		{"", "https://x", "main", "skill name must be non-empty"},
		{"a/b", "https://x", "main", `skill name may not contain '/' or '\': "a/b"`},
		{`a\b`, "https://x", "main", `skill name may not contain '/' or '\': "a\\b"`},
		{"a..b", "https://x", "main", `skill name may not contain '..': "a..b"`},
		{"a b", "https://x", "main", `skill name may only contain alphanumerics, '-', '_', '.': "a b"`},
		{"é", "https://x", "main", `skill name may only contain alphanumerics, '-', '_', '.': "é"`},
		{".a", "https://x", "main", `skill name may not start with '.': ".a"`},
		{"a", "", "main", "repo must be non-empty"},
		{"a", "-uhttps://x", "main", `repo may not start with '-': "-uhttps://x"`},
		{"a", "ext::sh -c id", "main", `repo may not contain '::': "ext::sh -c id"`},
		{"a", "FILE:///etc", "main", `repo may not be a file: URL: "FILE:///etc"`},
		{"a", "http://x", "main", `repo must start with https://, ssh:// or git@: "http://x"`},
		{"a", "https://x", "", "branch must be non-empty"},
	} {
		d := &Directory{}
		_, err := d.fromGit(context.Background(), t.TempDir(), c.repo, c.skill, c.branch)
		if code, message := verdict(err); code != rules.CodeInvalidArguments || message != c.want {
			t.Errorf("fromGit(%q, %q, %q) = %v, want INVALID_ARGUMENTS %q", c.repo, c.skill, c.branch, err, c.want)
		}
	}
	for _, ok := range []string{"pdf", "Foo.v2", "a_b-c"} {
		if err := validateGitSkill(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, ok := range []string{"https://github.com/o/r", "ssh://git@host/r", "git@github.com:o/r.git"} {
		if err := validateRepo(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// validateWorkerName's empty case: download's classification turns an
// empty worker into "specify either …" before it.
func TestWorkerNameEmpty(t *testing.T) {
	if err := validateWorkerName(""); err == nil || err.Error() != "worker name must be non-empty" {
		t.Fatal(err)
	}
}

// Every function takes an object, as upstream's serde structs do: null (or
// an absent payload), a number, a string or a list is refused with serde's
// message, the same as the registry worker's.
func TestPayloadMustBeObject(t *testing.T) {
	s := startStack(t, []string{agentFolder(t)}, DefaultConfig(), Options{})
	for fn, name := range map[string]string{
		FnSkillsList:        "ListInput",
		FnSkillsFetch:       "FetchSkillInput",
		FnSkillsDownload:    "DownloadInput",
		FnPromptsList:       "ListInput",
		FnPromptsGet:        "GetPromptInput",
		FnFunctionsList:     "FunctionsListInput",
		FnWorkersInfo:       "WorkerInfoInput",
		FnSkillsDiagnostics: "DiagnosticsInput",
	} {
		for payload, got := range map[string]string{
			"null":  "null",
			"5":     "integer `5`",
			`"x"`:   `string "x"`,
			"[{}]":  "sequence",
			"true":  "boolean `true`",
			" 1.5 ": "floating point `1.5`",
		} {
			s.fails(t, fn, json.RawMessage(payload), "invalid type: "+got+", expected struct "+name)
		}
	}
	s.must(t, FnSkillsList, json.RawMessage(`{"_caller_worker_id":"x","unknown":1}`), nil)
	// An absent payload reads as null (the Go SDK sends {} when a caller
	// gives none, so this is reachable only from other clients).
	err := decode(nil, "ListInput", &struct{}{})
	if code, message := verdict(err); code != rules.CodeInvalidArguments || message != "invalid type: null, expected struct ListInput" {
		t.Fatalf("absent payload: %v", err)
	}
}
