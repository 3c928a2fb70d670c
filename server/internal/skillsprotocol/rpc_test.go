package skillsprotocol_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
)

func TestJSONRPCEnvelope(t *testing.T) {
	e := newEnv(t, sp.Options{})
	cases := []struct {
		body string
		want string // substring of the response
	}{
		{`{bad`, `"error":{"code":-32700`},
		{`[`, `"error":{"code":-32700`},
		{`[]`, `"error":{"code":-32600`},
		{`42`, `"error":{"code":-32600`},
		{`{"method":"list_skills","id":1}`, `"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","id":1}`, `"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","method":"list_skills","id":{"a":1}}`, `"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","method":"nope","id":"abc"}`, `"error":{"code":-32601`},
		{`{"jsonrpc":"2.0","method":"nope","id":"abc"}`, `"id":"abc"`},
		{`{"jsonrpc":"2.0","method":"list_skills","id":null}`, `"id":null`},
		{`{"jsonrpc":"2.0","method":"list_skills","id":7.5}`, `"id":7.5`},
		{`{"jsonrpc":"2.0","method":"list_skills","params":[1],"id":1}`, `"error":{"code":-32602`},
		{`{"jsonrpc":"2.0","method":"list_skills","params":{"limt":3},"id":1}`, `unknown parameter \"limt\"`},
		{`{"jsonrpc":"2.0","method":"read_blob","params":{"blob_id":5},"id":1}`, `"blob_id\" must be a string`},
	}
	for _, c := range cases {
		if got := string(e.post([]byte(c.body))); !strings.Contains(got, c.want) {
			t.Errorf("%s\n got %s\nwant %s", c.body, got, c.want)
		}
	}
	// A batch is answered per request; notifications get no answer.
	got := e.post([]byte(`[{"jsonrpc":"2.0","method":"list_skills","id":1},{"jsonrpc":"2.0","method":"list_skills"},5,{"jsonrpc":"2.0","method":"nope","id":2}]`))
	var batch []map[string]any
	if err := json.Unmarshal(got, &batch); err != nil || len(batch) != 3 {
		t.Fatalf("batch: %s", got)
	}
	if batch[0]["id"] != 1.0 || batch[0]["result"] == nil || batch[1]["id"] != nil || batch[2]["id"] != 2.0 {
		t.Fatalf("batch answers: %s", got)
	}
	resp, err := http.Post(e.url, "application/json", strings.NewReader(`[{"jsonrpc":"2.0","method":"list_skills"}]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("notification-only batch: %d", resp.StatusCode)
	}
	resp, err = http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
}

func TestBlobs(t *testing.T) {
	e := newEnv(t, sp.Options{MaxBlobBytes: 1 << 16})
	var c struct {
		BlobID string `json:"blob_id"`
		Size   int    `json:"size"`
	}
	content := "héllo " + strings.Repeat("x", 3000) + " wörld"
	e.ok("create_blob", map[string]any{"content": content, "kind": "text/plain"}, &c)
	if c.Size != len(content) {
		t.Fatalf("size %d", c.Size)
	}
	var r struct {
		Content   string `json:"content"`
		Truncated bool   `json:"truncated"`
		Kind      string `json:"kind"`
	}
	e.ok("read_blob", map[string]any{"blob_id": c.BlobID}, &r)
	if len(r.Content) > 2000 || !strings.HasPrefix(r.Content, "héllo") || !r.Truncated || r.Kind != "text/plain" {
		t.Fatalf("sample_head: %d bytes %v", len(r.Content), r.Truncated)
	}
	e.ok("read_blob", map[string]any{"blob_id": c.BlobID, "mode": "sample_tail", "max_bytes": 5}, &r)
	if r.Content != "wörld"[1:] && r.Content != "rld" && r.Content != "örld" {
		t.Fatalf("sample_tail: %q", r.Content)
	}
	e.ok("read_blob", map[string]any{"blob_id": c.BlobID, "mode": "full"}, &r)
	if r.Content != content || r.Truncated {
		t.Fatal("full read differs")
	}
	e.fails("read_blob", map[string]any{"blob_id": "blob:0000000000000000"}, sp.CodeInvalidParams)
	e.fails("read_blob", map[string]any{"blob_id": "blob:../../etc"}, sp.CodeInvalidParams)
	e.fails("read_blob", map[string]any{"blob_id": c.BlobID, "mode": "middle"}, sp.CodeInvalidParams)
	e.fails("read_blob", map[string]any{"blob_id": c.BlobID, "max_bytes": 0}, sp.CodeInvalidParams)
	e.fails("create_blob", map[string]any{"content": "x", "kind": "plain"}, sp.CodeInvalidParams)
	e.fails("create_blob", map[string]any{"kind": "text/plain"}, sp.CodeInvalidParams)
	msg := e.fails("create_blob", map[string]any{"content": strings.Repeat("x", 1<<16+1), "kind": "text/plain"}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "at most 65536") {
		t.Fatalf("cap message: %s", msg)
	}

	// Durable: a new runtime on the same engine reads it.
	e.start(sp.Options{})
	e.ok("read_blob", map[string]any{"blob_id": c.BlobID, "mode": "full"}, &r)
	if r.Content != content {
		t.Fatal("blob lost across runtimes")
	}
}

func createBlob(e *env, content string) string {
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": content, "kind": "text/plain"}, &c)
	return c.BlobID
}

// Blobs are bounded in the store: the oldest go first when the total
// would pass the cap, also for a runtime started later on the same state.
func TestBlobStoreCapRemovesTheOldest(t *testing.T) {
	// One client with a share of the whole store: the global cap alone.
	opts := sp.Options{MaxBlobBytes: 1000, MaxBlobStoreBytes: 2500, MaxBlobStoreBytesPerClient: 2500}
	e := newEnv(t, opts)
	first := createBlob(e, strings.Repeat("a", 1000))
	second := createBlob(e, strings.Repeat("b", 1000))
	e.start(opts) // the index survives a restart
	third := createBlob(e, strings.Repeat("c", 1000))
	msg := e.fails("read_blob", map[string]any{"blob_id": first}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "unknown blob") {
		t.Fatalf("oldest blob after the cap: %s", msg)
	}
	for _, id := range []string{second, third} {
		var r struct {
			Content string `json:"content"`
		}
		e.ok("read_blob", map[string]any{"blob_id": id, "mode": "full"}, &r)
		if len(r.Content) != 1000 {
			t.Fatalf("%s: %d bytes", id, len(r.Content))
		}
	}
	raw, err := e.client.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "state::get",
		Data: json.RawMessage(`{"scope":"skills-protocol-blobs","key":"` + strings.TrimPrefix(first, "blob:") + `"}`)})
	if err != nil || (len(raw) != 0 && string(raw) != "null") {
		t.Fatalf("the removed blob's content is still stored: %s %v", raw, err)
	}
}

func TestBlobsExpire(t *testing.T) {
	// The sweeper is kept out of the way: this test is about reads and
	// the prune of the next write.
	e := newEnv(t, sp.Options{BlobTTL: time.Millisecond, BlobSweepInterval: time.Hour})
	id := createBlob(e, "short-lived")
	time.Sleep(5 * time.Millisecond) // past the TTL; no timing is asserted
	msg := e.fails("read_blob", map[string]any{"blob_id": id}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "has expired") || !strings.Contains(msg, "1ms") {
		t.Fatalf("expired blob: %s", msg)
	}
	createBlob(e, "next") // prunes the expired one
	msg = e.fails("read_blob", map[string]any{"blob_id": id}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "unknown blob") {
		t.Fatalf("expired blob after a prune: %s", msg)
	}
}

// An expired blob leaves the store without another write: the sweeper
// removes its content and its index entry.
func TestExpiredBlobsAreSwept(t *testing.T) {
	e := newEnv(t, sp.Options{BlobTTL: time.Millisecond, BlobSweepInterval: 5 * time.Millisecond})
	key := strings.TrimPrefix(createBlob(e, "swept"), "blob:")
	for _, scope := range []string{"skills-protocol-blobs", "skills-protocol-blobs-index"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			raw, err := e.client.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "state::get",
				Data: json.RawMessage(`{"scope":"` + scope + `","key":"` + key + `"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) == 0 || string(raw) == "null" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("expired blob still in %s after 10 s: %.80s", scope, raw)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func publish(t *testing.T, c *iii.Client, files map[string]string) (json.RawMessage, error) {
	t.Helper()
	var list []sp.BundleFile
	for p, content := range files {
		list = append(list, sp.BundleFile{Path: p, Content: content})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, err := json.Marshal(sp.PublishRequest{Files: list})
	if err != nil {
		t.Fatal(err)
	}
	return c.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnPublishBundle, Data: data, Timeout: 10 * time.Second})
}

func TestPublishBundleOverIII(t *testing.T) {
	e := newEnv(t, sp.Options{})
	bundle := map[string]string{
		"skill.toml":   "name = \"acme.tools.hello\"\nversion = \"0.1.0\"\ndescription = \"Say hello\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n",
		"SKILL.md":     "# Hello\n\nSays hello.\n",
		"code/main.py": "def main(args):\n    return 'hello ' + args.get('who', 'world')\n",
	}
	out, err := publish(t, e.client, bundle)
	if err != nil || !strings.Contains(string(out), `"name":"acme.tools.hello"`) {
		t.Fatalf("publish: %s %v", out, err)
	}
	out, err = publish(t, e.client, bundle)
	if err != nil || !strings.Contains(string(out), `"unchanged":true`) {
		t.Fatalf("republish same content: %s %v", out, err)
	}
	bundle["SKILL.md"] = "# Hello v2\n"
	if _, err := publish(t, e.client, bundle); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("republish other content: %v", err)
	}
	bad := map[string]string{"skill.toml": "name = \"acme.tools.hello\"\nversion = \"0.2.0\"\ndescription = \"x\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/missing.py\"\n"}
	if _, err := publish(t, e.client, bad); err == nil || !strings.Contains(err.Error(), "not a file of the bundle") {
		t.Fatalf("invalid bundle: %v", err)
	}
	if _, err := publish(t, e.client, map[string]string{"../skill.toml": "x"}); err == nil || !strings.Contains(err.Error(), "leaves the bundle") {
		t.Fatalf("traversal: %v", err)
	}
	var d map[string]any
	e.ok("describe_skill", map[string]any{"name": "acme.tools.hello"}, &d)

	// Durable: a restarted runtime loads it from state.
	e.start(sp.Options{})
	e.ok("describe_skill", map[string]any{"name": "acme.tools.hello", "version": "0.1.0"}, &d)
	if d["kind"] != "action" {
		t.Fatalf("reloaded bundle: %v", d)
	}
}

// TestToolsMatchTheSeed: tools.json is the seed's 8 tool blocks word for
// word (testdata/seed_tool_schemas.json is copied from the seed's "Tool
// Schemas" page, blocks joined into one array).
func TestToolsMatchTheSeed(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed_tool_schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(seed, &want); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sp.Tools())
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Tools() differs from the seed:\n got %s\nwant %s", b, seed)
	}
}

// The params check of env.call is live: it knows a bad request from a
// good one.
func TestParamsAreCheckedAgainstTheSeed(t *testing.T) {
	for _, bad := range []struct {
		method string
		params any
	}{
		{"run_code", map[string]any{"language": "python"}},
		{"list_skills", map[string]any{"limit": "ten"}},
		{"describe_skill", map[string]any{"detail": "full"}},
	} {
		if validateParams(bad.method, bad.params) == nil {
			t.Errorf("%s %v passes the seed's parameter schema", bad.method, bad.params)
		}
	}
	if err := validateParams("run_code", map[string]any{"language": "python", "code": "x"}); err != nil {
		t.Errorf("a good run_code: %v", err)
	}
}

// A published bundle changed in the server's store behind its back (the
// file is the server's own, but a disk is a disk) is refused, never run:
// a changed code file fails to read, a changed skill.toml drops the
// version at load; the untouched version keeps being served.
func TestPublishedBundleChangedInTheStoreIsRefused(t *testing.T) {
	e := newEnv(t, sp.Options{})
	bundle := func(version, marker string) map[string]string {
		return map[string]string{
			"skill.toml":   "name = \"acme.tools.hello\"\nversion = \"" + version + "\"\ndescription = \"Say hello\"\nkind = \"action\"\n[runtime]\nlanguage = \"python\"\nentrypoint = \"code/main.py\"\n",
			"SKILL.md":     "# Hello\n",
			"code/main.py": "def main(args):\n    return '" + marker + "'\n",
		}
	}
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0"} {
		if _, err := publish(t, e.client, bundle(v, v)); err != nil {
			t.Fatal(err)
		}
	}
	e.stop()
	st, err := store.Open(filepath.Join(e.dataDir, sp.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	// Files are stored in path order: SKILL.md #0, code/main.py #1, skill.toml #2.
	evil := func(s string) json.RawMessage {
		b, _ := json.Marshal(base64.StdEncoding.EncodeToString([]byte(s)))
		return b
	}
	if _, err := st.Set(sp.DefaultBundleScope+"-files", "acme.tools.hello@0.2.0#1", evil("def main(args):\n    return 'tampered'\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Set(sp.DefaultBundleScope+"-files", "acme.tools.hello@0.3.0#2", evil(strings.ReplaceAll(bundle("0.3.0", "")["skill.toml"], "Say hello", "Tampered"))); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	e.start(sp.Options{})

	var d struct {
		Versions []string `json:"versions"`
	}
	e.ok("describe_skill", map[string]any{"name": "acme.tools.hello"}, &d)
	if strings.Join(d.Versions, ",") != "0.2.0,0.1.0" {
		t.Fatalf("versions after the store was changed: %v (0.3.0's skill.toml was changed: it must not load)", d.Versions)
	}
	msg := e.fails("read_skill_file", map[string]any{"name": "acme.tools.hello", "version": "0.2.0", "path": "code/main.py"}, sp.CodeInternalError)
	if !strings.Contains(msg, "code/main.py of published bundle acme.tools.hello@0.2.0 was changed in the store after it was published: refused") {
		t.Fatalf("changed code file: %s", msg)
	}
	var f struct {
		Content string `json:"content"`
	}
	e.ok("read_skill_file", map[string]any{"name": "acme.tools.hello", "version": "0.1.0", "path": "code/main.py"}, &f)
	if !strings.Contains(f.Content, "'0.1.0'") {
		t.Fatalf("untouched version: %q", f.Content)
	}
}
