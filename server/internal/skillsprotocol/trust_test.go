package skillsprotocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/sandbox"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// A page on any origin may POST these without a CORS preflight: /rpc must
// refuse them (415) before it reads the request, and keep what it stores.
func TestRPCRefusesSimpleRequestContentTypes(t *testing.T) {
	e := newEnv(t, sp.Options{})
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": "kept", "kind": "text/plain"}, &c)
	body := `{"jsonrpc":"2.0","method":"create_blob","params":{"content":"evil","kind":"text/plain"},"id":1}`
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "", "application/xml", "not a type;;"} {
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(msg), "Content-Type: application/json") {
			t.Fatalf("Content-Type %q: %d %s, want 415 naming application/json", ct, resp.StatusCode, msg)
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/json-rpc+json"} {
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{"jsonrpc":"2.0","method":"list_skills","id":1}`))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Content-Type %q: %d, want 200", ct, resp.StatusCode)
		}
	}
	var r struct {
		Content string `json:"content"`
	}
	e.ok("read_blob", map[string]any{"blob_id": c.BlobID}, &r)
	if r.Content != "kept" {
		t.Fatalf("stored blob changed: %q", r.Content)
	}
}

// input_blobs: repeated ids count once; too many distinct blobs or too
// many bytes together are refused before anything runs.
func TestInputBlobCaps(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t, sp.Options{MaxInputBlobs: 2, MaxInputBlobBytes: 10000})
	blob := func(n int) string {
		var c struct {
			BlobID string `json:"blob_id"`
		}
		e.ok("create_blob", map[string]any{"content": strings.Repeat("b", n), "kind": "text/plain"}, &c)
		return c.BlobID
	}
	a, b, c, big := blob(4000), blob(4000), blob(10), blob(6001)
	code := "import os\ndef main(args):\n    return sorted(os.listdir('/blobs'))\n"
	same := make([]string, 200)
	for i := range same {
		same[i] = a
	}
	var r run
	e.ok("run_code", map[string]any{"language": "python", "code": code, "input_blobs": same}, &r)
	if want := fmt.Sprintf(`["%s"]`, strings.TrimPrefix(a, "blob:")); r.Status != "completed" || string(r.Output) != want {
		t.Fatalf("200 copies of one blob: %+v, want output %s", r, want)
	}
	msg := e.fails("run_code", map[string]any{"language": "python", "code": code, "input_blobs": []string{a, b, c}}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "at most 2") {
		t.Fatalf("3 distinct blobs: %q", msg)
	}
	msg = e.fails("execute_skill", map[string]any{"name": "nope", "input_blobs": []string{a, big}}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "nope") {
		t.Fatalf("unknown skill first: %q", msg)
	}
	msg = e.fails("run_code", map[string]any{"language": "python", "code": code, "input_blobs": []string{a, big}}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "at most 10000 bytes") {
		t.Fatalf("10000 bytes of blobs: %q", msg)
	}
	msg = e.fails("run_code", map[string]any{"language": "python", "code": code, "input_blobs": []string{"blob:0000000000000000"}}, sp.CodeInvalidParams)
	if !strings.Contains(msg, "unknown blob") {
		t.Fatalf("unknown blob: %q", msg)
	}
	e.ok("run_code", map[string]any{"language": "python", "code": code, "input_blobs": []string{a, b, a}}, &r)
	if r.Status != "completed" || !strings.Contains(string(r.Output), strings.TrimPrefix(b, "blob:")) {
		t.Fatalf("two blobs: %+v", r)
	}
}

// A batch holds at most MaxBatchRequests requests, and its answers stay
// under MaxBatchResponseBytes: later requests get an error and are not run.
func TestBatchCaps(t *testing.T) {
	e := newEnv(t, sp.Options{MaxBatchRequests: 5, MaxBatchResponseBytes: 25000})
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": strings.Repeat("x", 10000), "kind": "text/plain"}, &c)
	read := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"read_blob","params":{"blob_id":%q,"mode":"full"},"id":%d}`, c.BlobID, id)
	}
	items := []string{read(1), read(2), read(3), `{"jsonrpc":"2.0","method":"create_blob","params":{"content":"late","kind":"text/plain"}}`, read(5)}
	raw := e.post([]byte("[" + strings.Join(items, ",") + "]"))
	if len(raw) > 25000 {
		t.Fatalf("batch answer is %d bytes, cap 25000", len(raw))
	}
	var answers []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	if err := json.Unmarshal(raw, &answers); err != nil {
		t.Fatalf("%v: %.300s", err, raw)
	}
	if len(answers) != 4 || answers[0].Error != nil || answers[1].Error != nil {
		t.Fatalf("want 2 answers then 2 errors (the notification gets none): %.600s", raw)
	}
	for i, a := range answers[2:] {
		if a.Error == nil || a.Error.Code != sp.CodeInvalidRequest || !strings.Contains(a.Error.Message, "batch response too large") || a.ID != float64([]int{3, 5}[i]) {
			t.Fatalf("answer %d: %+v", i+2, a)
		}
	}
	// The create_blob after the cap was not run.
	stored, err := e.state.List(context.Background(), sp.DefaultBlobScope)
	if err != nil || len(stored) != 1 {
		t.Fatalf("blobs stored: %d (%v), want only the first", len(stored), err)
	}
	raw = e.post([]byte("[" + strings.Repeat(read(9)+",", 5) + read(10) + "]"))
	if !strings.Contains(string(raw), "batch of more than 5 requests; a batch holds at most 5") {
		t.Fatalf("6 requests: %.300s", raw)
	}
}

// A run cannot see the server: not its working directory, its environment,
// the work dir or a served folder (mountinfo, /proc/1), and the sandbox's
// hardening holds over /rpc: /dev/shm is capped and ptrace, bpf, io_uring
// and unshare fail with EPERM.
func TestRunCannotSeeTheServer(t *testing.T) {
	requireSandbox(t)
	t.Setenv("SP_SERVER_ONLY", "server-env-value")
	e := newEnv(t, sp.Options{Limits: sandbox.Limits{WorkspaceBytes: 8 << 20}})
	folder := copyFixtures(t)
	if err := e.rt.LoadFolders(folder); err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	code := `
import ctypes, errno, os
def read(p):
    try:
        with open(p, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError as e:
        return "<%s>" % e
def main(args):
    out = {p: read(p) for p in ["/proc/self/mountinfo", "/proc/1/cmdline", "/proc/1/environ", "/proc/self/environ"]}
    out["cwd1"] = os.readlink("/proc/1/cwd")
    out["env"] = dict(os.environ)
    try:
        with open("/dev/shm/fill", "wb") as f:
            for _ in range(64):
                f.write(b"x" * (1 << 20))
        out["shm"] = "WROTE"
    except OSError as e:
        out["shm"] = "capped"
    libc = ctypes.CDLL(None, use_errno=True)
    for name, nr in args["calls"].items():
        ctypes.set_errno(0)
        r = libc.syscall(nr, 0, 0, 0, 0, 0)
        out[name] = "EPERM" if r == -1 and ctypes.get_errno() == errno.EPERM else "ALLOWED"
    return out
`
	calls := map[string]uint32{}
	for _, d := range sandbox.DeniedSyscalls {
		if d.Name == "ptrace" || d.Name == "bpf" || d.Name == "io_uring_setup" || d.Name == "unshare" {
			calls[d.Name] = d.AMD64
			if runtime.GOARCH == "arm64" {
				calls[d.Name] = d.ARM64
			}
		}
	}
	var r run
	e.ok("run_code", map[string]any{"language": "python", "code": code, "mount_skills": []string{"conf.docs"}, "args": map[string]any{"calls": calls}}, &r)
	if r.Status != "completed" {
		t.Fatalf("run: %+v", r)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Output, &out); err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{cwd, folder, filepath.Base(folder), os.TempDir() + "/", "server-env-value", "SP_SERVER_ONLY"} {
		if strings.Contains(string(r.Output), leak) {
			t.Errorf("the run sees %q: %s", leak, r.Output)
		}
	}
	if out["shm"] != "capped" {
		t.Errorf("/dev/shm not capped: %v", out["shm"])
	}
	for name := range calls {
		if out[name] != "EPERM" {
			t.Errorf("%s: %v, want EPERM", name, out[name])
		}
	}
	// The server is unharmed: a blob stored before still reads back.
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": "kept", "kind": "text/plain"}, &c)
	e.ok("run_code", map[string]any{"language": "python", "code": "def main(args):\n    return open('/blobs/' + args['b'][5:]).read()\n",
		"args": map[string]any{"b": c.BlobID}, "input_blobs": []string{c.BlobID}}, &r)
	if string(r.Output) != `"kept"` {
		t.Fatalf("after the probe: %+v", r)
	}
}

// /rpc errors name no absolute host path: a file of a served skills
// folder (read on demand, as `skills --skills-folder` serves them) that
// vanished is reported by its name only.
func TestRPCErrorsHideHostPaths(t *testing.T) {
	e := newEnv(t, sp.Options{})
	folder := copyFixtures(t)
	set, err := fsource.Open(fsource.Options{Folders: []string{folder}, Catalog: e.cat, Logger: quiet(),
		Bundle: func(b fsource.BundleDir, en *catalog.Entry) error { return sp.CompleteEntry(b.Manifest, en) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	if err := os.RemoveAll(filepath.Join(folder, "conf.docs", "resources")); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	e.ok("describe_skill", map[string]any{"name": "conf.docs", "detail": "full"}, &d)
	var res string
	for _, f := range d.Files {
		if strings.HasPrefix(f.Path, "resources/") {
			res = f.Path
		}
	}
	if res == "" {
		t.Fatalf("conf.docs lists no resource: %+v", d)
	}
	msg := e.fails("read_skill_file", map[string]any{"name": "conf.docs", "path": res}, sp.CodeInternalError)
	if strings.Contains(msg, folder) || strings.Contains(msg, filepath.Dir(folder)) {
		t.Fatalf("error names the host folder: %q", msg)
	}
	if !strings.Contains(msg, filepath.Base(res)) {
		t.Fatalf("error no longer says which file: %q", msg)
	}
}

// copyFixtures copies the conformance bundles into a fresh folder the
// sandbox uid can read.
func copyFixtures(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sp-folder-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.CopyFS(dir, os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Many concurrent full reads of a big blob all succeed: the runtime reads
// at most MaxBlobLoadBytes of blobs from the store at once, so neither its
// memory nor its engine connection (which the engine drops past 32 MiB of
// unread answers) takes them all at the same time.
func TestConcurrentBlobReads(t *testing.T) {
	e := newEnv(t, sp.Options{})
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": strings.Repeat("z", 6<<20), "kind": "text/plain"}, &c)
	const readers = 24
	errs := make(chan string, readers)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "read_blob", "params": map[string]any{"blob_id": c.BlobID, "mode": "full"}})
	for range readers {
		go func() {
			resp, err := http.Post(e.url, "application/json", bytes.NewReader(body))
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			var r struct {
				Result struct {
					Content string `json:"content"`
				} `json:"result"`
				Error *rpcErr `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				errs <- err.Error()
				return
			}
			if r.Error != nil || len(r.Result.Content) != 6<<20 {
				errs <- fmt.Sprintf("%+v, %d bytes", r.Error, len(r.Result.Content))
				return
			}
			errs <- ""
		}()
	}
	for range readers {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
	// The runtime still reaches its store.
	var r struct {
		Size int `json:"size"`
	}
	e.ok("read_blob", map[string]any{"blob_id": c.BlobID}, &r)
	if r.Size != 6<<20 {
		t.Fatalf("size %d", r.Size)
	}
}

// Params that would decode into huge Go values are refused or passed on
// undecoded: args must be an object (kept as JSON), and input_blobs or
// mount_skills longer than 1000 entries are refused while being read.
func TestOversizedParams(t *testing.T) {
	e := newEnv(t, sp.Options{})
	code := "def main(args):\n    return args\n"
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"language": "python", "code": code, "args": []int{1}}, `parameter "args" must be an object, got array`},
		{map[string]any{"language": "python", "code": code, "args": "x"}, `parameter "args" must be an object, got string`},
		{map[string]any{"language": "python", "code": code, "input_blobs": make([]string, 1001)}, `parameter "input_blobs" must be an array of strings, got an array of more than 1000 entries`},
		{map[string]any{"language": "python", "code": code, "mount_skills": make([]string, 1001)}, `parameter "mount_skills" must be an array of strings, got an array of more than 1000 entries`},
		{map[string]any{"language": "python", "code": code, "input_blobs": []any{1}}, `parameter "input_blobs" must be an array of strings`},
		{map[string]any{"language": "python", "code": code, "input_blobs": "blob:0123456789abcdef"}, `parameter "input_blobs" must be an array of strings`},
		{map[string]any{"name": "x", "input_blobs": make([]string, 1001)}, `parameter "input_blobs" must be an array of strings, got an array of more than 1000 entries`},
	} {
		method := "run_code"
		if _, ok := c.params["name"]; ok {
			method = "execute_skill"
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": c.params})
		raw := e.post(body)
		var resp struct {
			Error *rpcErr `json:"error"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil || resp.Error == nil || resp.Error.Code != sp.CodeInvalidParams || !strings.Contains(resp.Error.Message, c.want) {
			t.Errorf("got %s\nwant -32602 %s", raw, c.want)
		}
	}
}
