package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// logoPNG is binary (not UTF-8).
var logoPNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0xff, 0xfe, 0x00, 0x01}

const pdfSkillMD = "---\nname: pdf-tools\ndescription: Fill and merge PDF forms\nlicense: Apache-2.0\n---\n\n# PDF tools\n\nSee [the guide](references/guide.md).\n"

// folderEntry builds a catalog entry the way a folder source does.
func folderEntry(t *testing.T, id string, files map[string][]byte) *catalog.Entry {
	t.Helper()
	raw, body, _ := catalog.SplitFrontmatter(string(files["SKILL.md"]))
	fm, err := catalog.ParseFrontmatter(raw)
	if err != nil {
		t.Fatal(err)
	}
	e := &catalog.Entry{ID: id, Frontmatter: fm, Body: catalog.Inline(body), Origin: catalog.Origin{Kind: catalog.OriginFolder}}
	e.SetSummary(body)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		e.Files = append(e.Files, catalog.NewFile(p, files[p], time.Time{}, nil))
	}
	return e
}

func publishedEntry(id, body string) *catalog.Entry {
	e := &catalog.Entry{ID: id, Body: catalog.Inline(body), Origin: catalog.Origin{Kind: catalog.OriginPublished}}
	e.SetSummary(body)
	return e
}

// skillsFixture is a catalog with a folder skill (binary file included), a
// published skill linking to a section, a plain published one and one
// over the extension's file limit.
type skillsFixture struct {
	cat    *catalog.Catalog
	folder *catalog.Source
	pub    *catalog.Source
}

func newSkillsFixture(t *testing.T) *skillsFixture {
	t.Helper()
	c := catalog.New()
	pub, _ := c.AddSource("published", catalog.RankPublished)
	fx := addFolderFixture(t, c)
	if err := pub.Put(publishedEntry("demo", "# Demo skill\n\nHow to use the demo worker.\n\nSee [echo](iii://fn/demo/echo).\n"),
		publishedEntry("plain", "# Plain\n\nA static skill.\n")); err != nil {
		t.Fatal(err)
	}
	fx.pub = pub
	return fx
}

// addFolderFixture adds the folder skills to c.
func addFolderFixture(t *testing.T, c *catalog.Catalog) *skillsFixture {
	t.Helper()
	folder, _ := c.AddSource("folder", catalog.RankFolder)
	big := map[string][]byte{"SKILL.md": []byte("---\nname: huge\ndescription: Too many files\n---\n# Huge\n")}
	for i := range 512 {
		big[fmt.Sprintf("data/%03d.txt", i)] = []byte("x")
	}
	if err := folder.Put(
		folderEntry(t, "acme/pdf-tools", map[string][]byte{"SKILL.md": []byte(pdfSkillMD), "references/guide.md": []byte("# Guide\n"), "assets/logo.png": logoPNG}),
		folderEntry(t, "huge", big),
	); err != nil {
		t.Fatal(err)
	}
	return &skillsFixture{cat: c, folder: folder}
}

// rpc posts one JSON-RPC request to endpoint and decodes the response
// (JSON or a one-event SSE stream).
func rpc(t *testing.T, endpoint string, headers map[string]string, method string, params any) (json.RawMessage, *jsonrpc.Error) {
	t.Helper()
	if headers["Mcp-Protocol-Version"] >= v2026 {
		// A 2026-07-28 request names its method in a header and carries the
		// protocol _meta (go-sdk's HTTP checks require both).
		params = withNewMeta(t, params)
		h := map[string]string{"Mcp-Method": method}
		for k, v := range headers {
			h[k] = v
		}
		headers = h
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// On 2026-07-28 an invalid-params error is HTTP 400 and method not
	// found 404 (SEP-2575), with the JSON-RPC error as the body.
	rpcStatus := resp.StatusCode == http.StatusOK || headers["Mcp-Protocol-Version"] >= v2026 &&
		(resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound)
	if !rpcStatus {
		t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	if i := bytes.Index(b, []byte("data: {")); i >= 0 {
		b = b[i+len("data: "):]
		b = b[:bytes.IndexByte(b, '\n')]
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	if resp.StatusCode != http.StatusOK && out.Error == nil {
		t.Fatalf("%s: HTTP %d without a JSON-RPC error: %s", method, resp.StatusCode, b)
	}
	return out.Result, out.Error
}

// withNewMeta adds the 2026-07-28 _meta to params that carry none.
func withNewMeta(t *testing.T, params any) any {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if string(b) != "null" {
		if err := json.Unmarshal(b, &m); err != nil {
			return params // not an object: sent as is
		}
	}
	if _, ok := m["_meta"]; ok {
		return params
	}
	return newMeta(m)
}

type wireSkill struct {
	Meta        map[string]any  `json:"_meta"`
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"`
}

type wireRes struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

func (w wireSkill) files(t *testing.T) []wireRes {
	var out []wireRes
	if err := json.Unmarshal(w.Resources, &out); err != nil {
		t.Fatalf("%s resources %s: %v", w.URI, w.Resources, err)
	}
	return out
}

// checkSkillsExtension drives the extension through call (one transport
// and revision) and the go-sdk client cs (resources/read, tools).
func checkSkillsExtension(t *testing.T, call func(method string, params any) (json.RawMessage, *jsonrpc.Error), cs *sdk.ClientSession, want ...string) {
	ctx := context.Background()
	if ext := cs.InitializeResult().Capabilities.Extensions[skillsmcp.ExtensionSkills]; ext == nil {
		t.Fatalf("capabilities.extensions lacks %s: %+v", skillsmcp.ExtensionSkills, cs.InitializeResult().Capabilities)
	}

	raw, rerr := call("skills/list", map[string]any{})
	if rerr != nil {
		t.Fatalf("skills/list: %v", rerr)
	}
	var list struct {
		ResultType string      `json:"resultType"`
		Skills     []wireSkill `json:"skills"`
		CacheScope string      `json:"cacheScope"`
		TTL        *int        `json:"ttlMs"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var uris []string
	bySkill := map[string]wireSkill{}
	for _, s := range list.Skills {
		uris = append(uris, s.URI)
		bySkill[s.URI] = s
	}
	if want == nil {
		want = []string{"skill://acme/pdf-tools/SKILL.md", "skill://demo/SKILL.md", "skill://plain/SKILL.md"}
	}
	if !slices.Equal(uris, want) || list.ResultType != "complete" || list.CacheScope != "public" || list.TTL == nil {
		t.Fatalf("skills/list = %s, want skills %v (huge is over the file limit), resultType, ttlMs, cacheScope", raw, want)
	}
	pdf := bySkill["skill://acme/pdf-tools/SKILL.md"]
	// Each listing marks where the skill comes from.
	for uri, origin := range map[string]string{"skill://acme/pdf-tools/SKILL.md": "folder", "skill://plain/SKILL.md": "published"} {
		if got := bySkill[uri].Meta[skillsmcp.MetaKeyOrigin]; got != origin {
			t.Errorf("skills/list %s: _meta[%s] = %v, want %q", uri, skillsmcp.MetaKeyOrigin, got, origin)
		}
	}
	if pdf.Frontmatter["name"] != "pdf-tools" || pdf.Frontmatter["license"] != "Apache-2.0" {
		t.Errorf("folder frontmatter = %v", pdf.Frontmatter)
	}
	if string(bySkill["skill://demo/SKILL.md"].Resources) != `"dynamic"` {
		t.Errorf("a published skill linking to iii://fn is dynamic, got %s", bySkill["skill://demo/SKILL.md"].Resources)
	}
	if fm := bySkill["skill://plain/SKILL.md"].Frontmatter; fm["name"] != "plain" || fm["description"] != "A static skill." {
		t.Errorf("published frontmatter = %v", fm)
	}

	// Every digest is the sha256 of the bytes resources/read serves.
	for _, s := range []wireSkill{pdf, bySkill["skill://plain/SKILL.md"]} {
		files := s.files(t)
		if len(files) == 0 || files[0].URI == "" {
			t.Fatalf("%s: no files", s.URI)
		}
		hasMD := false
		for _, f := range files {
			hasMD = hasMD || f.URI == s.URI
			res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: f.URI})
			if err != nil {
				t.Fatalf("read %s: %v", f.URI, err)
			}
			c := res.Contents[0]
			b := []byte(c.Text)
			if c.Blob != nil {
				b = c.Blob
			}
			sum := sha256.Sum256(b)
			if f.Digest != "sha256:"+hex.EncodeToString(sum[:]) || int64(len(b)) != f.Size {
				t.Errorf("%s: digest %s size %d, served %d bytes hashing to %x", f.URI, f.Digest, f.Size, len(b), sum)
			}
			if strings.HasSuffix(f.URI, ".png") && (c.Blob == nil || c.MIMEType != "image/png") {
				t.Errorf("%s: want a blob of image/png, got %+v", f.URI, c)
			}
		}
		if !hasMD {
			t.Errorf("%s: resources lack SKILL.md itself", s.URI)
		}
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://plain/SKILL.md"})
	if err != nil || !strings.HasPrefix(res.Contents[0].Text, "---\nname: plain\ndescription: A static skill.\n---\n\n# Plain") {
		t.Errorf("synthesized SKILL.md: %v %+v", err, res)
	}

	all, err := cs.ListResources(ctx, nil)
	if err != nil || !strings.Contains(mustJSON(all), `{"_meta":{"io.iii-skills/origin":"folder"},"description":"Fill and merge PDF forms","mimeType":"text/markdown","name":"pdf-tools","size":`+fmt.Sprint(len(pdfSkillMD))+`,"uri":"skill://acme/pdf-tools/SKILL.md"}`) {
		t.Errorf("resources/list lacks the SKILL.md entry of the folder skill: %v %s", err, mustJSON(all))
	}
	if err == nil {
		for _, r := range all.Resources {
			got, want := r.Meta[skillsmcp.MetaKeyOrigin], "published"
			switch {
			case r.URI == "iii://skills":
				want = "" // the index is no skill
			case strings.Contains(r.URI, "pdf-tools"), r.URI == "iii://huge":
				want = "folder"
			}
			if want == "" && got != nil || want != "" && got != want {
				t.Errorf("resources/list %s: _meta[%s] = %v, want %q", r.URI, skillsmcp.MetaKeyOrigin, got, want)
			}
		}
	}

	raw, rerr = call("skills/get", map[string]any{"uri": "skill://acme/pdf-tools/SKILL.md"})
	var got struct {
		ResultType string    `json:"resultType"`
		Skill      wireSkill `json:"skill"`
	}
	if rerr != nil || json.Unmarshal(raw, &got) != nil || got.Skill.URI != pdf.URI || string(got.Skill.Resources) != string(pdf.Resources) || got.ResultType != "complete" {
		t.Errorf("skills/get: %v %s", rerr, raw)
	}
	for uri, msg := range map[string]string{
		"skill://nope/SKILL.md":           "No skill is served at skill://nope/SKILL.md",
		"skill://acme/pdf-tools":          "expected skill://<skill-path>/SKILL.md",
		"iii://demo":                      "No skill is served",
		"skill://huge/SKILL.md":           "at most 512 per skill",
		"skill://acme/pdf-tools/guide.md": "No skill is served",
	} {
		if _, rerr := call("skills/get", map[string]any{"uri": uri}); rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, msg) {
			t.Errorf("skills/get %s: %v, want -32602 containing %q", uri, rerr, msg)
		}
	}

	raw, rerr = call("resources/directory/read", map[string]any{"uri": "skill://acme/pdf-tools"})
	if rerr != nil || !strings.Contains(string(raw), `{"mimeType":"inode/directory","name":"assets","uri":"skill://acme/pdf-tools/assets"}`) ||
		!strings.Contains(string(raw), `"uri":"skill://acme/pdf-tools/SKILL.md"`) {
		t.Errorf("directory read of the root: %v %s", rerr, raw)
	}
	raw, rerr = call("resources/directory/read", map[string]any{"uri": "skill://acme/pdf-tools/references"})
	if rerr != nil || !strings.Contains(string(raw), `"uri":"skill://acme/pdf-tools/references/guide.md"`) {
		t.Errorf("directory read of references: %v %s", rerr, raw)
	}
	if _, rerr := call("resources/directory/read", map[string]any{"uri": "skill://acme/pdf-tools/SKILL.md"}); rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, "is not a directory resource") {
		t.Errorf("directory read of a file: %v", rerr)
	}
	if _, rerr := call("skills/list", map[string]any{"cursor": "garbage"}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("invalid cursor: %v", rerr)
	}
	if _, rerr := call("skills/get", map[string]any{"uri": 5}); rerr == nil || rerr.Code != -32602 ||
		!strings.Contains(rerr.Message, "params must be an object with string fields uri and cursor") {
		t.Errorf("skills/get with a numeric uri: %v, want -32602 naming the expected params", rerr)
	}

	// The tools for clients without resource support.
	tr, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: skillsmcp.ToolListSkills, Arguments: map[string]any{}})
	if err != nil || tr.IsError || !strings.Contains(text(tr.Content[0]), "- skill://acme/pdf-tools/SKILL.md — pdf-tools: Fill and merge PDF forms (3 files)") {
		t.Errorf("list_skills: %v %+v", err, tr)
	}
	tr, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: skillsmcp.ToolReadSkill, Arguments: map[string]any{"uri": "skill://acme/pdf-tools/SKILL.md"}})
	if err != nil || tr.IsError || text(tr.Content[0]) != pdfSkillMD {
		t.Errorf("read_skill: %v %+v", err, tr)
	}
	tr, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: skillsmcp.ToolReadSkill, Arguments: map[string]any{"uri": "skill://acme/pdf-tools/nope.md"}})
	if err != nil || !tr.IsError || !strings.Contains(text(tr.Content[0]), "Resource not found: skill://acme/pdf-tools/nope.md") {
		t.Errorf("read_skill of a missing file: %v %+v", err, tr)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "skill://acme/pdf-tools/nope.md"}); rpcCode(err) != -32602 {
		t.Errorf("read of a missing skill file: %v", err)
	}
}

// TestSkillsExtensionHTTP: both revisions over Streamable HTTP.
func TestSkillsExtensionHTTP(t *testing.T) {
	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			s := newStack(t)
			s.seed()
			fx := newSkillsFixture(t)
			view := skillsext.NewView(fx.cat)
			t.Cleanup(view.Close)
			s.startMCPView(view, skillsmcp.Options{})
			endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})
			n := &notes{}
			cs := s.connectClient(&sdk.StreamableClientTransport{Endpoint: endpoint}, v, n)
			headers := map[string]string{"Mcp-Protocol-Version": v}
			if v == v2025 {
				headers["Mcp-Session-Id"] = cs.ID()
			}
			call := func(method string, params any) (json.RawMessage, *jsonrpc.Error) {
				h := map[string]string{"Mcp-Method": method}
				for k, val := range headers {
					h[k] = val
				}
				return rpc(t, endpoint, h, method, params)
			}
			checkSkillsExtension(t, call, cs)
			checkSkillUpdates(t, fx, cs, n)
		})
	}
}

// checkSkillUpdates: a changed file reaches subscribed clients as
// resources/updated, and the listing as list_changed.
func checkSkillUpdates(t *testing.T, fx *skillsFixture, cs *sdk.ClientSession, n *notes) {
	ctx := context.Background()
	guide := "skill://acme/pdf-tools/references/guide.md"
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: guide}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "resources/updated for "+guide+" and list_changed after the file changed", func() bool {
		before := n.count(resourcesChanged)
		_ = fx.folder.Put(folderEntry(t, "acme/pdf-tools", map[string][]byte{"SKILL.md": []byte(pdfSkillMD),
			"references/guide.md": []byte("# Guide v" + time.Now().Format(time.RFC3339Nano) + "\n"), "assets/logo.png": logoPNG}))
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if n.has(resourceUpdated, guide) && n.count(resourcesChanged) > before {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	})
}

// TestSkillsExtensionStream: the stream transports (stdio, in-memory)
// answer the extension methods on the connection.
func TestSkillsExtensionStream(t *testing.T) {
	s := newStack(t)
	s.seed()
	fx := newSkillsFixture(t)
	view := skillsext.NewView(fx.cat)
	t.Cleanup(view.Close)
	s.startMCPView(view, skillsmcp.Options{})

	// A raw client connection for the extension methods…
	call := s.rawStream()
	if _, err := call("initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}); err != nil {
		t.Fatal(err)
	}
	// …and a go-sdk client for the rest.
	st2, ct2 := sdk.NewInMemoryTransports()
	ss2, err := s.mcp.SDK().Connect(s.ctx, st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss2.Close() })
	cs := s.connectClient(ct2, v2026, nil)
	checkSkillsExtension(t, call, cs)
}

// TestSkillsExtensionRemote: the MCP server of another process (`skills
// mcp`) reads the registry's catalog over iii: published skills reach it
// through skills::register, folder skills through the catalog, changes
// through skills::catalog-on-change.
func TestSkillsExtensionRemote(t *testing.T) {
	s := newStack(t)
	s.seed()
	s.registerSkill("plain", "# Plain\n\nA static skill.\n")
	fx := addFolderFixture(t, s.cat)
	s.remote = true
	s.startMCP(skillsmcp.Options{})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})
	n := &notes{}
	cs := s.connectClient(&sdk.StreamableClientTransport{Endpoint: endpoint}, v2026, n)
	call := func(method string, params any) (json.RawMessage, *jsonrpc.Error) {
		return rpc(t, endpoint, map[string]string{"Mcp-Protocol-Version": v2026, "Mcp-Method": method}, method, params)
	}
	checkSkillsExtension(t, call, cs, "skill://acme/pdf-tools/SKILL.md", "skill://demo/SKILL.md", "skill://demo/nested/SKILL.md",
		"skill://other/SKILL.md", "skill://plain/SKILL.md")
	checkSkillUpdates(t, fx, cs, n)

	// An unregistered skill leaves the listing and its SKILL.md is updated.
	if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: "skill://plain/SKILL.md"}); err != nil {
		t.Fatal(err)
	}
	s.trigger("skills::unregister", map[string]string{"id": "plain"})
	testutil.Eventually(t, 5*time.Second, "resources/updated for skill://plain/SKILL.md", func() bool { return n.has(resourceUpdated, "skill://plain/SKILL.md") })
	raw, _ := call("skills/list", map[string]any{})
	if strings.Contains(string(raw), "skill://plain/") {
		t.Fatalf("unregistered skill still listed: %s", raw)
	}
}
