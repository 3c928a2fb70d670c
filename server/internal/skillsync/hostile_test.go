package skillsync

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// rawResult is an extension answer sent as the test writes it.
type rawResult struct {
	sdk.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// hostileMCP is an MCP server (the official go-sdk's, over real HTTP) that
// serves the Skills extension with whatever the test says: the registry
// that answers garbage.
type hostileMCP struct {
	url   string
	mu    sync.Mutex
	list  string            // the skills/list result
	get   map[string]string // uri → the skills/get result
	files map[string]string // uri → the bytes resources/read sends
}

func (h *hostileMCP) set(list string, files map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list, h.files = list, files
}

func startHostileMCP(t *testing.T, withExtension bool) *hostileMCP {
	t.Helper()
	h := &hostileMCP{}
	caps := &sdk.ServerCapabilities{Resources: &sdk.ResourceCapabilities{ListChanged: true}}
	if withExtension {
		caps.AddExtension(skillsmcp.ExtensionSkills, map[string]any{})
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "1"}, &sdk.ServerOptions{Capabilities: caps})
	if err := sdk.AddReceivingCustomMethod(srv, skillsmcp.MethodSkillsList, func(context.Context, *sdk.ServerSession, *extParams) (*rawResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return &rawResult{raw: json.RawMessage(h.list)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := sdk.AddReceivingCustomMethod(srv, skillsmcp.MethodSkillsGet, func(_ context.Context, _ *sdk.ServerSession, p *extParams) (*rawResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if r, ok := h.get[p.URI]; ok {
			return &rawResult{raw: json.RawMessage(r)}, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "No skill is served at " + p.URI}
	}); err != nil {
		t.Fatal(err)
	}
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "skill://{+path}", Name: "skill"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		b, ok := h.files[req.Params.URI]
		if !ok {
			return nil, sdk.ResourceNotFoundError(req.Params.URI)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: b}}}, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	h.url = ts.URL + "/mcp"
	return h
}

// listing is a skills/list result with one skill (and _meta, when given).
func listing(uri, name string, files map[string]string, meta ...map[string]any) string {
	var res []map[string]any
	for p, content := range files {
		res = append(res, map[string]any{"uri": strings.TrimSuffix(uri, "SKILL.md") + p, "digest": "sha256:" + sum([]byte(content)), "size": len(content)})
	}
	entry := map[string]any{"uri": uri, "frontmatter": map[string]string{"name": name, "description": "d"}, "resources": res}
	if len(meta) > 0 {
		entry["_meta"] = meta[0]
	}
	b, _ := json.Marshal(map[string]any{"skills": []any{entry}})
	return string(b)
}

// A registry that answers garbage: every answer is refused with a message
// that says what was wrong, nothing half-written remains, and the folder
// synced before stays as it was.
func TestHostileHTTPRegistry(t *testing.T) {
	ctx := context.Background()
	// Not an MCP server at all.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>hello</html>")) }))
	defer plain.Close()
	if _, err := Open(ctx, plain.URL, ""); err == nil || !strings.Contains(err.Error(), "the registry at "+plain.URL+"/mcp") {
		t.Errorf("a web page as the registry: %v", err)
	}
	// An MCP server without the Skills extension.
	noExt := startHostileMCP(t, false)
	if _, err := Open(ctx, noExt.url, ""); err == nil || !strings.Contains(err.Error(), "does not declare the MCP Skills extension") {
		t.Errorf("an MCP server without the extension: %v", err)
	}

	h := startHostileMCP(t, true)
	good := map[string]string{"SKILL.md": skillMD("pdf-tools", "d", "# Good\n"), "ref.md": "good\n"}
	files := func(prefix string, m map[string]string) map[string]string {
		out := map[string]string{}
		for p, c := range m {
			out[prefix+p] = c
		}
		return out
	}
	// What a registry reports about the version (_meta) goes into the lock.
	signed := map[string]any{MetaPrefix + "version": 4, MetaPrefix + "sha256": strings.Repeat("c", 64), MetaPrefix + "signed_by": "alice@example.com",
		MetaPrefix + "key": "SHA256:8f0c", skillsmcp.MetaKeyOrigin: "published"}
	h.set(listing("skill://pdf-tools/SKILL.md", "pdf-tools", good, signed), files("skill://pdf-tools/", good))
	src, err := Open(ctx, h.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	work := t.TempDir()
	out := filepath.Join(work, "skills")
	opts := Options{Source: src, SourceURL: h.url, Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock")}
	if rep := syncOnce(t, opts); !rep.InSync() {
		t.Fatalf("%s\n%s", rep.Summary(), problems(rep))
	}
	lockBefore, _ := os.ReadFile(opts.LockPath)
	if lock, _, _ := ReadLock(opts.LockPath); lock == nil || !reflect.DeepEqual(lock.Skills["pdf-tools"], &LockedSkill{Source: h.url, ID: "pdf-tools", Version: 4, SHA256: strings.Repeat("c", 64),
		Signature: "signed", SignedBy: "alice@example.com", Key: "SHA256:8f0c", Files: lock.Skills["pdf-tools"].Files, Targets: []string{"skills"}}) {
		t.Errorf("the registry's version facts in the lock:\n%s", lockBefore)
	}

	for _, c := range []struct {
		name, list string
		files      map[string]string
		err, prob  string // the error of the run, or a problem of its report
	}{
		{name: "not JSON of the extension", list: `{"skills":"nope"}`, err: "skills/list"},
		{name: "an entry that is not a skill URI", list: `{"skills":[{"uri":"https://evil/SKILL.md","frontmatter":{},"resources":[]}]}`, err: `uri "https://evil/SKILL.md"; expected skill://<path>/SKILL.md`},
		{name: "resources of the wrong shape", list: `{"skills":[{"uri":"skill://pdf-tools/SKILL.md","frontmatter":{"name":"pdf-tools"},"resources":{"a":1}}]}`, err: "resources {\"a\":1} are not a list"},
		{name: "a digest that is not sha256", list: `{"skills":[{"uri":"skill://pdf-tools/SKILL.md","frontmatter":{"name":"pdf-tools"},"resources":[{"uri":"skill://pdf-tools/SKILL.md","digest":"md5:00","size":1}]}]}`, err: `digest "md5:00"`},
		{name: "a version that is not a number", list: `{"skills":[{"uri":"skill://pdf-tools/SKILL.md","frontmatter":{"name":"pdf-tools"},"resources":[],"_meta":{"io.iii-skills/version":"three"}}]}`, err: `skill pdf-tools: the registry's version is "three"; expected a version number`},
		{name: "a name that is not a folder name", list: listing("skill://pdf-tools/SKILL.md", "../evil", good), files: files("skill://pdf-tools/", good), prob: `name "../evil" is not a valid folder name`},
		{name: "a file outside the skill", list: listing("skill://pdf-tools/SKILL.md", "pdf-tools", map[string]string{"SKILL.md": good["SKILL.md"], "../../escape.txt": "x"}),
			files: files("skill://pdf-tools/", good), prob: `file path "../../escape.txt" has an empty, "." or ".." segment`},
		{name: "bytes that are not the listed ones", list: listing("skill://pdf-tools/SKILL.md", "pdf-tools", map[string]string{"SKILL.md": skillMD("pdf-tools", "d", "# New\n"), "ref.md": "new\n"}),
			files: files("skill://pdf-tools/", map[string]string{"SKILL.md": skillMD("pdf-tools", "d", "# New\n"), "ref.md": "tampered\n"}), prob: "pdf-tools, file ref.md: the registry sent 9 bytes with sha256 " + sum([]byte("tampered\n"))},
		{name: "a file it lists and does not serve", list: listing("skill://pdf-tools/SKILL.md", "pdf-tools", map[string]string{"SKILL.md": good["SKILL.md"], "gone.md": "x"}),
			files: files("skill://pdf-tools/", good), prob: "resources/read skill://pdf-tools/gone.md: calling \"resources/read\": Resource not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.set(c.list, c.files)
			rep, err := Sync(ctx, opts)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case rep.InSync() || !strings.Contains(problems(rep), c.prob):
				t.Fatalf("%s\n%s\nwant a problem with %q", rep.Summary(), problems(rep), c.prob)
			}
			sameTree(t, "the folder synced before", readTree(t, out, nil), files("pdf-tools/", good))
			if b, _ := os.ReadFile(opts.LockPath); string(b) != string(lockBefore) {
				t.Errorf("the lock changed:\n%s", b)
			}
			for _, p := range []string{filepath.Join(work, "evil"), filepath.Join(work, "escape.txt"), filepath.Join(out, stagingDir)} {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("%s exists: %v", p, err)
				}
			}
		})
	}
}

// The same over iii: a worker that answers the catalog functions with
// garbage, on a real engine.
func TestHostileIIIRegistry(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var mu sync.Mutex
	answers := map[string]any{}
	w := iii.RegisterWorker(eng.URL(), iii.WithName("hostile-registry"), iii.WithLogger(quiet))
	defer w.Close()
	for _, fn := range []string{rules.FnCatalogList, rules.FnCatalogGet, rules.FnCatalogFile} {
		if _, err := w.RegisterFunction(fn, func(context.Context, json.RawMessage) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return answers[fn], nil
		}, iii.RegisterFunctionOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	src, err := Open(ctx, eng.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	answers[rules.FnCatalogList] = map[string]any{"skills": []any{}}
	testutil.Eventually(t, 10*time.Second, "the hostile worker's functions registered", func() bool {
		_, err := src.List(ctx)
		return err == nil
	})
	work := t.TempDir()
	opts := Options{Source: src, SourceURL: eng.URL(), Targets: []Target{{Path: filepath.Join(work, "skills")}}, LockPath: filepath.Join(work, "skills.lock")}
	skill := func(name string, sha string, size int) map[string]any {
		return map[string]any{"path": "pdf-tools", "name": name, "files": []map[string]any{{"path": "SKILL.md", "size": size, "sha256": sha}}}
	}
	body := skillMD("pdf-tools", "d", "# x\n")
	for _, c := range []struct {
		name       string
		list, file any
		err, prob  string
	}{
		{name: "a listing that is a string", list: "garbage", err: rules.FnCatalogList + " answered \"garbage\""},
		{name: "a listing that never advances", list: map[string]any{"skills": []any{}, "more": true}, err: "does not advance"},
		{name: "a bad name", list: map[string]any{"skills": []any{skill("Bad_Name", sum([]byte(body)), len(body))}}, prob: `name "Bad_Name" is not a valid folder name`},
		{name: "a digest of another alphabet", list: map[string]any{"skills": []any{skill("pdf-tools", strings.Repeat("Z", 64), 3)}}, prob: `has digest "ZZZZ`},
		{name: "a chunk that is not base64", list: map[string]any{"skills": []any{skill("pdf-tools", sum([]byte(body)), len(body))}},
			file: map[string]any{"data": "%%%", "size": len(body), "sha256": sum([]byte(body))}, prob: "pdf-tools, file SKILL.md: read from the registry: skills::catalog-file: illegal base64"},
		{name: "bytes that are not the listed ones", list: map[string]any{"skills": []any{skill("pdf-tools", sum([]byte(body)), len(body))}},
			file: map[string]any{"data": "eHl6", "size": 3, "sha256": "x"}, prob: "the registry sent 3 bytes with sha256 " + sum([]byte("xyz"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			answers[rules.FnCatalogList], answers[rules.FnCatalogFile] = c.list, c.file
			mu.Unlock()
			rep, err := Sync(ctx, opts)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case rep.InSync() || !strings.Contains(problems(rep), c.prob):
				t.Fatalf("%s\n%s\nwant a problem with %q", rep.Summary(), problems(rep), c.prob)
			}
			if entries, _ := os.ReadDir(filepath.Join(work, "skills")); len(entries) != 0 {
				t.Errorf("written: %v", entries)
			}
		})
	}
}

// A pinned version the registry reports yanked (_meta io.iii-skills/yanked
// on skills/get) is replaced by the served version, or removed, as the
// yank policy says.
func TestYankedPin(t *testing.T) {
	h := startHostileMCP(t, true)
	v2 := map[string]string{"SKILL.md": skillMD("pdf-tools", "d", "# Version two\n")}
	v3 := map[string]string{"SKILL.md": skillMD("pdf-tools", "d", "# Version three\n")}
	entry := func(uri string, files map[string]string, meta map[string]any) string {
		var l struct {
			Skills []json.RawMessage `json:"skills"`
		}
		_ = json.Unmarshal([]byte(listing(uri, "pdf-tools", files, meta)), &l)
		return `{"skill":` + string(l.Skills[0]) + `}`
	}
	all := map[string]string{"skill://pdf-tools@2/SKILL.md": v2["SKILL.md"], "skill://pdf-tools/SKILL.md": v3["SKILL.md"]}
	pinned := "skill://pdf-tools@2/SKILL.md"
	for _, policy := range []YankPolicy{YankReplace, YankRemove} {
		t.Run(string(policy), func(t *testing.T) {
			h.mu.Lock()
			h.list = listing("skill://pdf-tools/SKILL.md", "pdf-tools", v3)
			h.get = map[string]string{pinned: entry(pinned, v2, map[string]any{MetaPrefix + "version": 2})}
			h.files = all
			h.mu.Unlock()
			src, err := Open(context.Background(), h.url, "")
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			work := t.TempDir()
			out := filepath.Join(work, "skills")
			opts := Options{Source: src, SourceURL: h.url, Selection: mustSelection(t, "pdf-tools@2"), Targets: []Target{{Path: out}}, LockPath: filepath.Join(work, "skills.lock"), YankPolicy: policy}
			if rep := syncOnce(t, opts); !rep.InSync() {
				t.Fatal(problems(rep))
			}
			h.mu.Lock()
			h.get[pinned] = entry(pinned, v2, map[string]any{MetaPrefix + "version": 2, MetaPrefix + "yanked": "leaks the token"})
			h.mu.Unlock()
			rep := syncOnce(t, opts)
			b, err := os.ReadFile(filepath.Join(out, "pdf-tools", SkillFile))
			notes := strings.Join(rep.Notes, "\n")
			if !rep.InSync() || !strings.Contains(notes, "version 2 of skill pdf-tools is yanked (leaks the token)") {
				t.Fatalf("%s %q\n%s", rep.Summary(), notes, problems(rep))
			}
			switch policy {
			case YankReplace:
				if !strings.Contains(string(b), "Version three") {
					t.Errorf("replace: %q", b)
				}
			case YankRemove:
				if !os.IsNotExist(err) {
					t.Errorf("remove: the folder is still there: %q", b)
				}
			}
		})
	}
}
