package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// oddNames are files whose names need percent-encoding in a URI, each
// with distinct content. "x%20y.md" is literally named so: its URI is
// x%2520y.md; "with space.md" encoded twice (with%2520space.md) names a
// file "with%20space.md", which there is not.
var oddNames = []string{
	"with space.md", "100%.md", "a#b.md", "q?.md", "résumé.md", "日本.txt", "x%20y.md", "x y.md",
	"[brackets]+plus=eq&amp;.md", strings.Repeat("long-", 50) + ".md", // 253 bytes
}

// oddFolder writes a skills folder holding skill odd with those files
// (and two that cannot be served: a name that is not UTF-8 and one with a
// newline), and returns it.
func oddFolder(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "odd")
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: odd\ndescription: Files with names that need encoding\n---\n\n# Odd\n\nSee [the spaced note](notes/with%20space.md).\n"
	files := map[string]string{"SKILL.md": md}
	for i, n := range oddNames {
		files["notes/"+n] = "note " + n + " #" + string(rune('A'+i)) + "\n"
	}
	files["notes/bad\xff.md"] = "not UTF-8\n"
	files["notes/line\nbreak.md"] = "newline\n"
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatalf("%q: %v", p, err)
		}
	}
	return root
}

// mcpPost sends one JSON-RPC request to the MCP endpoint on revision v
// (2025-11-25: within session sid), with extra headers, and returns the
// HTTP status, result and error.
func mcpPost(t *testing.T, endpoint, v, sid string, headers map[string]string, method string, params map[string]any) (int, json.RawMessage, *jsonrpc.Error) {
	t.Helper()
	h := map[string]string{"Mcp-Protocol-Version": v}
	if v >= v2026 {
		h["Mcp-Method"] = method
		params = newMeta(params)
		if uri, ok := params["uri"].(string); ok && method == "resources/read" {
			h["Mcp-Name"] = headerValue(uri)
		}
		if name, ok := params["name"].(string); ok && method == "tools/call" {
			h["Mcp-Name"] = headerValue(name)
		}
	} else if sid != "" {
		h["Mcp-Session-Id"] = sid
	}
	for k, val := range headers {
		h[k] = val
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, val := range h {
		req.Header[http.CanonicalHeaderKey(k)] = []string{val}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(b, []byte("data: {")); i >= 0 {
		b = b[i+len("data: "):]
		b = b[:bytes.IndexByte(b, '\n')]
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: HTTP %d: %v: %q", method, resp.StatusCode, err, b)
	}
	return resp.StatusCode, out.Result, out.Error
}

// headerValue is how a 2026-07-28 client puts a name in Mcp-Name: as it
// is when it is printable ASCII, else Base64 in the =?base64?…?= sentinel
// (the official Python client's encode_header_value).
func headerValue(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
		}
	}
	if strings.TrimSpace(s) != s {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
	}
	return s
}

// TestOddFileNamesOnEverySurface serves a real skills folder whose file
// names hold spaces, '%', '#', '?', non-ASCII letters and more through
// `skills --standalone` (app.Start with its HTTP listener) and reads every
// file over MCP on both revisions (listed URI, the same name unencoded,
// read_skill, resources/directory/read), over iii:// (skills::resources-read
// in-process), /rpc read_skill_file, and checks the refusals of names that
// cannot name a file.
func TestOddFileNamesOnEverySurface(t *testing.T) {
	cfg := appstack.Config(t)
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Logger = quiet()
	cfg.Directory.SkillsFolder = []string{oddFolder(t)}
	srv := appstack.Start(t, cfg)
	endpoint := srv.HTTPURL + "/mcp"
	ctx := context.Background()

	// The folder leaves out what cannot be served, and says so.
	testutil.Eventually(t, 5*time.Second, "skill odd served", func() bool { _, ok := srv.Catalog.Get("odd"); return ok })
	e, _ := srv.Catalog.Get("odd")
	for _, f := range e.Files {
		if strings.Contains(f.Path, "bad") || strings.Contains(f.Path, "line") {
			t.Errorf("%q is served; its name cannot be carried by every surface", f.Path)
		}
	}
	if len(e.Files) != len(oddNames)+1 {
		t.Fatalf("skill odd has %d files, want %d: %+v", len(e.Files), len(oddNames)+1, e.Files)
	}

	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			sid := ""
			if v == v2025 {
				sid = initSession(t, endpoint)
			}
			call := func(method string, params map[string]any) (json.RawMessage, *jsonrpc.Error) {
				_, res, rerr := mcpPost(t, endpoint, v, sid, nil, method, params)
				return res, rerr
			}
			res, rerr := call("skills/get", map[string]any{"uri": "skill://odd/SKILL.md"})
			if rerr != nil {
				t.Fatalf("skills/get: %v", rerr)
			}
			var got struct {
				Skill struct {
					Resources []wireRes `json:"resources"`
				} `json:"skill"`
			}
			if err := json.Unmarshal(res, &got); err != nil {
				t.Fatal(err)
			}
			listed := map[string]wireRes{}
			for _, r := range got.Skill.Resources {
				listed[r.URI] = r
			}
			for _, name := range oddNames {
				uri := "skill://odd/notes/" + registry.EscapePath(name)
				r, ok := listed[uri]
				if !ok {
					t.Errorf("%q is not listed as %s: %v", name, uri, got.Skill.Resources)
					continue
				}
				want := "note " + name
				// The listed URI, and the same name unencoded (an IRI),
				// unless its name reads as an escape (x%20y.md).
				asks := []string{uri}
				if name == registry.EscapePath(name) || !strings.Contains(name, "%20") {
					asks = append(asks, "skill://odd/notes/"+name)
				}
				for _, asked := range asks {
					res, rerr := call("resources/read", map[string]any{"uri": asked})
					if rerr != nil {
						t.Errorf("resources/read %q: %v", asked, rerr)
						continue
					}
					var rr sdk.ReadResourceResult
					if err := json.Unmarshal(res, &rr); err != nil || len(rr.Contents) != 1 {
						t.Fatalf("resources/read %q: %v %s", asked, err, res)
					}
					c := rr.Contents[0]
					sum := sha256.Sum256([]byte(c.Text))
					if !strings.HasPrefix(c.Text, want) || "sha256:"+hex.EncodeToString(sum[:]) != r.Digest || c.URI != asked {
						t.Errorf("resources/read %q: uri %q text %q; want the file %q (%s)", asked, c.URI, c.Text, name, r.Digest)
					}
				}
				res, rerr := call("tools/call", map[string]any{"name": "read_skill", "arguments": map[string]any{"uri": uri}})
				var tr sdk.CallToolResult
				if rerr != nil || json.Unmarshal(res, &tr) != nil || tr.IsError || len(tr.Content) != 1 || !strings.HasPrefix(text(tr.Content[0]), want) {
					t.Errorf("read_skill %q: %v %s", uri, rerr, res)
				}
			}
			// The directory listing names the same URIs.
			res, rerr = call("resources/directory/read", map[string]any{"uri": "skill://odd/notes/"})
			if rerr != nil {
				t.Fatalf("resources/directory/read: %v", rerr)
			}
			for _, name := range oddNames {
				if !strings.Contains(string(res), `"skill://odd/notes/`+registry.EscapePath(name)+`"`) {
					t.Errorf("resources/directory/read does not list %q: %s", name, res)
				}
			}
			// Bad input: each refused with -32602 and a message naming the
			// file, never one about the scheme.
			for asked, want := range map[string]string{
				"skill://odd/notes/with%2520space.md":                   "skill odd has no file notes/with%20space.md", // encoded twice: a name holding "%20"
				"skill://odd/notes/ok%00.md":                            "cannot hold a NUL byte",
				"skill://odd/notes/ok\x00.md":                           "cannot hold a NUL byte",
				"skill://odd/notes/bad%FF.md":                           "is not UTF-8",
				"skill://odd/notes/../SKILL.md":                         `".." segment`,
				"skill://odd/notes/%2e%2e/SKILL.md":                     `".." segment`,
				"skill://odd/notes/" + strings.Repeat("n", 300) + ".md": "names are at most 255",
				"skill://odd/notes/missing file.md":                     "skill odd has no file notes/missing file.md",
				"skill://nope/with space.md":                            "no skill is served at this path",
			} {
				_, rerr := call("resources/read", map[string]any{"uri": asked})
				if rerr == nil || rerr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rerr.Message, want) ||
					strings.Contains(rerr.Message, "must start with") || !strings.Contains(rerr.Message, "skill://") {
					t.Errorf("resources/read %q: %v; want -32602 naming the file (%q)", asked, rerr, want)
				}
			}
		})
	}

	// iii:// reads the same files: percent-encoded or not, decoded once.
	for _, name := range oddNames {
		asks := []string{"iii://odd/notes/" + registry.EscapePath(name)}
		if !strings.Contains(name, "%20") {
			asks = append(asks, "iii://odd/notes/"+name)
		}
		for _, asked := range asks {
			out, err := srv.Registry.Read(ctx, asked)
			if err != nil || len(out.Contents) != 1 || !strings.HasPrefix(out.Contents[0].Text, "note "+name) {
				t.Errorf("iii read %q: %v %+v", asked, err, out)
			}
		}
	}
	for asked, want := range map[string]string{
		// A path that is no file of the skill keeps upstream's id error, naming the segment.
		"iii://odd/notes/with%2520space.md": `"with%2520space.md"`,
		"iii://odd/notes/ok%00.md":          "NUL",
		"iii://odd/notes/%2e%2e/x.md":       `".." segment`,
		"iii://odd/notes/nope.md":           `segment may only contain lowercase ASCII letters, digits, '-' and '_': "nope.md"`,
	} {
		if _, err := srv.Registry.Read(ctx, asked); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("iii read %q: %v; want %q", asked, err, want)
		}
	}

	// /rpc read_skill_file takes the path as a plain string (no URI, no
	// decoding): the name as it is on disk.
	for _, name := range oddNames {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "read_skill_file",
			"params": map[string]any{"name": "odd", "path": "notes/" + name}})
		resp, err := http.Post(srv.HTTPURL+"/rpc", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "note ") || strings.Contains(string(b), `"error"`) {
			t.Errorf("/rpc read_skill_file %q: %d %s", name, resp.StatusCode, b)
		}
	}
}

// initSession opens a 2025-11-25 session and returns its id.
func initSession(t *testing.T, endpoint string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: HTTP %d without a session id", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", v2025)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return sid
}
