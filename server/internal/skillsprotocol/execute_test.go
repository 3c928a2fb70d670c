package skillsprotocol_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/sandbox"
	"github.com/iii-skills/skills/server/internal/skillsext"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
)

func TestExecuteSkill(t *testing.T) {
	requireSandbox(t)
	t.Setenv("CONF_NOT_GRANTED", "leaked")
	e := newEnv(t, sp.Options{Secrets: map[string]string{"CONF_GRANTED_SECRET": "s3cret"},
		SecretGrants: []sp.SecretGrant{{Bundle: "conf.*", Origin: sp.OriginFolder, Names: []string{"CONF_GRANTED_SECRET"}}}})
	if err := e.rt.LoadFolders(fixtures); err != nil {
		t.Fatal(err)
	}
	var r run
	e.ok("execute_skill", map[string]any{"name": "conf.echo", "args": map[string]any{"n": 1}}, &r)
	if r.Status != "completed" || string(r.Output) != `{"version":"1.10.0","args":{"n":1}}` {
		t.Fatalf("latest: %+v", r)
	}
	e.ok("execute_skill", map[string]any{"name": "conf.echo", "version": "1.2.0"}, &r)
	if string(r.Output) != `{"version":"1.2.0","args":{}}` {
		t.Fatalf("version 1.2.0: %s", r.Output)
	}
	if _, ok := e.rt.Run(r.RunID); !ok {
		t.Fatal("run not kept")
	}

	// Only the secrets the manifest names and a grant gives, with the
	// server's values.
	e.ok("execute_skill", map[string]any{"name": "conf.secret"}, &r)
	var sec struct {
		Env     []string `json:"env"`
		Granted string   `json:"granted"`
	}
	_ = json.Unmarshal(r.Output, &sec)
	if sec.Granted != "s3cret" || strings.Join(sec.Env, ",") != "CONF_GRANTED_SECRET,HOME,LANG,PATH,PWD" {
		t.Fatalf("environment: %s", r.Output)
	}

	// Blobs in, large output out as a blob.
	var c struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": "a,b\n1,2\n", "kind": "text/csv"}, &c)
	code := "import runtime\ndef main(args):\n    t = runtime.blobs.read_text(args['b'])\n    assert open('/blobs/' + args['b'][5:]).read() == t\n    print('read', len(t))\n    return {'text': t, 'big': 'y' * args['n']}\n"
	e.ok("run_code", map[string]any{"language": "python", "code": code, "args": map[string]any{"b": c.BlobID, "n": 10}, "input_blobs": []string{c.BlobID}}, &r)
	if r.Status != "completed" || string(r.Output) != `{"text":"a,b\n1,2\n","big":"yyyyyyyyyy"}` || r.LogsPreview != "read 8\n" {
		t.Fatalf("blob in: %+v", r)
	}
	e.ok("run_code", map[string]any{"language": "python", "code": code, "args": map[string]any{"b": c.BlobID, "n": 10000}, "input_blobs": []string{c.BlobID}}, &r)
	if r.Status != "completed" || string(r.Output) != "null" || len(r.OutputBlobs) != 1 {
		t.Fatalf("large output: %+v", r)
	}
	var b struct {
		Size int    `json:"size"`
		Kind string `json:"kind"`
	}
	e.ok("read_blob", map[string]any{"blob_id": r.OutputBlobs[0]}, &b)
	if b.Kind != "application/json" || b.Size < 10000 {
		t.Fatalf("output blob: %+v", b)
	}

	// Mounted skills are importable and read-only.
	code = "from skills.conf.echo import run\nimport os\ndef main(args):\n    try:\n        open('/skills/conf.echo/x', 'w')\n        w = 'writable'\n    except OSError:\n        w = 'read-only'\n    return [run({'k': 1}), sorted(os.listdir('/skills/conf.echo')), w]\n"
	e.ok("run_code", map[string]any{"language": "python", "code": code, "mount_skills": []string{"conf.echo@1.9.3"}}, &r)
	if string(r.Output) != `[{"version":"1.9.3","args":{"k":1}},["SKILL.md","code","skill.toml"],"read-only"]` {
		t.Fatalf("mount: %+v", r)
	}

	// Execution errors are results; protocol errors are errors.
	e.ok("run_code", map[string]any{"language": "python", "code": "def main(args):\n    raise KeyError('nope')\n"}, &r)
	if r.Status != "failed" || r.Error.Type != "KeyError" {
		t.Fatalf("failing code: %+v", r)
	}
	e.ok("run_code", map[string]any{"language": "python", "code": "def other(args): pass\n"}, &r)
	if r.Error == nil || r.Error.Type != "EntrypointNotFound" {
		t.Fatalf("missing entrypoint: %+v", r)
	}
	e.ok("run_code", map[string]any{"language": "python", "code": "def go(args):\n    return args['x'] * 2\n", "entrypoint": "go", "args": map[string]any{"x": 21}}, &r)
	if string(r.Output) != "42" {
		t.Fatalf("entrypoint: %+v", r)
	}
	e.ok("run_code", map[string]any{"language": "python", "code": "def main(args):\n    return object()\n"}, &r)
	if r.Error == nil || r.Error.Type != "OutputNotSerializable" {
		t.Fatalf("unserializable: %+v", r)
	}
	e.fails("run_code", map[string]any{"language": "ruby", "code": "x"}, sp.CodeInvalidParams)
	e.fails("run_code", map[string]any{"language": "python"}, sp.CodeInvalidParams)
	e.fails("run_code", map[string]any{"language": "python", "code": "x", "mount_skills": []string{"nope.nope"}}, sp.CodeInvalidParams)
	e.fails("run_code", map[string]any{"language": "python", "code": "x", "mount_skills": []string{"conf.echo@9.9.9"}}, sp.CodeInvalidParams)
	e.fails("run_code", map[string]any{"language": "python", "code": "x", "mount_skills": []string{"conf.echo@1.9.3", "conf.echo"}}, sp.CodeInvalidParams)
	e.fails("run_code", map[string]any{"language": "python", "code": "x", "input_blobs": []string{"blob:0123456789abcdef"}}, sp.CodeInvalidParams)
	e.fails("run_code", map[string]any{"language": "python", "code": "x", "limits": map[string]any{"timeout_ms": -1}}, sp.CodeInvalidParams)
	if msg := e.fails("run_code", map[string]any{"language": "python", "code": "x", "limits": map[string]any{"timeout_ms": 300001}}, sp.CodeInvalidParams); msg != "timeout_ms 300001 is above the maximum of 300000 ms (5m0s)" {
		t.Fatalf("timeout above the maximum: %q", msg)
	}
	e.fails("execute_skill", map[string]any{"name": "conf.echo", "timeout_ms": int64(1) << 62}, sp.CodeInvalidParams)
	e.fails("execute_skill", map[string]any{"name": "conf.docs"}, sp.CodeInvalidParams)
	e.fails("execute_skill", map[string]any{"name": "conf.echo", "version": "3.0.0"}, sp.CodeInvalidParams)
}

// TestSandboxAttacks runs hostile code; each attempt fails inside the
// sandbox and the server keeps answering.
func TestSandboxAttacks(t *testing.T) {
	requireSandbox(t)
	t.Setenv("SP_SERVER_SECRET", "top-secret")
	e := newEnv(t, sp.Options{Limits: sandbox.Limits{MemoryBytes: 256 << 20, Processes: 32, OutputBytes: 1 << 20}})
	dataFile := filepath.Join(e.dataDir, "probe.txt")
	if err := os.WriteFile(dataFile, []byte("server data"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := func(body string) string {
		return fmt.Sprintf("def main(args):\n    try:\n%s\n        return 'ESCAPED'\n    except BaseException as e:\n        return 'blocked: ' + type(e).__name__\n", indent(body, 8))
	}
	attacks := []struct {
		name    string
		code    string
		timeout int
		check   func(r run) bool
	}{
		{"network", probe("import socket\nsocket.create_connection(('1.1.1.1', 443), timeout=3)"), 0, blocked},
		{"loopback network", probe("import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=3)"), 0, blocked},
		{"dns", probe("import socket\nsocket.getaddrinfo('example.com', 443)"), 0, blocked},
		{"read /etc/shadow", probe("open('/etc/shadow').read()"), 0, blocked},
		{"read the server data dir", probe(fmt.Sprintf("open(%q).read()", dataFile)), 0, blocked},
		{"read the server's process", probe("open('/proc/1/environ').read()\nassert 'SP_SERVER_SECRET' in open('/proc/1/environ').read()"), 0, blocked},
		{"write outside /workspace", probe("open('/usr/lib/evil', 'w').write('x')"), 0, blocked},
		{"write the root", probe("open('/evil', 'w').write('x')"), 0, blocked},
		{"write the runner", probe("open('/runtime/lib/sp_runner.py', 'a').write('x')"), 0, blocked},
		{"secret not granted", probe("import os\nassert os.environ.get('SP_SERVER_SECRET') == 'top-secret'"), 0, blocked},
		{"become root", probe("import os\nos.setuid(0)"), 0, blocked},
		{"fork bomb", "import os, time\ndef main(args):\n    n = 0\n    try:\n        while True:\n            if os.fork() == 0:\n                time.sleep(3)\n                os._exit(0)\n            n += 1\n    except OSError:\n        return 'capped at %d' % n\n", 0,
			func(r run) bool { return r.Status == "completed" && strings.Contains(string(r.Output), "capped at") }},
		{"memory bomb", "def main(args):\n    x = bytearray(4 << 30)\n    return 'ESCAPED'\n", 0,
			func(r run) bool { return r.Status == "failed" && r.Error.Type == "MemoryError" }},
		{"8 x 200 MiB processes", "import os, time\ndef main(args):\n    pids = []\n    for i in range(8):\n        pid = os.fork()\n        if pid == 0:\n            b = bytearray(200 << 20)\n            for j in range(0, len(b), 4096):\n                b[j] = 1\n            time.sleep(30)\n            os._exit(0)\n        pids.append(pid)\n    for p in pids:\n        os.waitpid(p, 0)\n    return 'ESCAPED'\n", 60000,
			func(r run) bool {
				if mode, _ := e.rt.Sandbox().CgroupMode(); mode == sandbox.CgroupNone {
					return true // only the per-process rlimits here: nothing to prove
				}
				return r.Status == "failed" && r.Error.Type == "MemoryLimitExceeded" && strings.Contains(r.Error.Message, "512 MiB")
			}},
		{"endless loop", "def main(args):\n    while True:\n        pass\n", 1500,
			func(r run) bool { return r.Status == "failed" && r.Error.Type == "TimeoutError" }},
		{"1 GiB stdout", "import sys\ndef main(args):\n    chunk = 'x' * (1 << 20)\n    for _ in range(1024):\n        sys.stdout.write(chunk)\n    return 'ESCAPED'\n", 0,
			func(r run) bool { return r.Status == "failed" && r.Error.Type == "OutputLimitExceeded" }},
		{"1 GiB result", "def main(args):\n    return 'x' * (1 << 30)\n", 0,
			func(r run) bool { return r.Status == "failed" && r.Error.Type != "" }},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			params := map[string]any{"language": "python", "code": a.code}
			if a.timeout > 0 {
				params["limits"] = map[string]any{"timeout_ms": a.timeout}
			}
			var r run
			e.ok("run_code", params, &r)
			if !a.check(r) {
				t.Fatalf("attack not contained: %+v (logs %q)", r, r.LogsPreview)
			}
			if strings.Contains(r.LogsPreview, "top-secret") || strings.Contains(string(r.Output), "top-secret") {
				t.Fatal("secret leaked")
			}
			// The server stays healthy.
			e.ok("run_code", map[string]any{"language": "python", "code": "def main(args):\n    return 1\n"}, &r)
			if string(r.Output) != "1" {
				t.Fatalf("server unhealthy after the attack: %+v", r)
			}
		})
	}
	if b, _ := os.ReadFile(dataFile); string(b) != "server data" {
		t.Fatal("data file changed")
	}
}

func blocked(r run) bool {
	return r.Status == "completed" && strings.HasPrefix(string(r.Output), `"blocked: `)
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func TestConcurrentRuns(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t, sp.Options{ConcurrentRuns: 4})
	if err := e.rt.LoadFolders(fixtures); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "execute_skill", "id": i,
				"params": map[string]any{"name": "conf.echo", "args": map[string]any{"i": i}}})
			var resp struct {
				Result run `json:"result"`
			}
			raw := e.post(body)
			if err := json.Unmarshal(raw, &resp); err != nil || resp.Result.Status != "completed" ||
				!strings.Contains(string(resp.Result.Output), fmt.Sprintf(`"i":%d`, i)) {
				errs <- string(raw)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestMissingBubblewrap(t *testing.T) {
	e := newEnv(t, sp.Options{Sandbox: sandbox.New(sandbox.Config{Bwrap: "/nonexistent/bwrap"})})
	if err := e.rt.LoadFolders(fixtures); err != nil {
		t.Fatal(err)
	}
	var r run
	e.ok("execute_skill", map[string]any{"name": "conf.echo"}, &r)
	if r.Status != "failed" || r.Error.Type != "SandboxUnavailable" || !strings.Contains(r.Error.Message, "apt-get install -y bubblewrap") {
		t.Fatalf("run without bwrap: %+v", r)
	}
	var l listResult
	e.ok("list_skills", map[string]any{}, &l)
	if len(l.Skills) == 0 {
		t.Fatal("discovery broken without bwrap")
	}
}

// TestBwrapCannotBuildSandbox: a bwrap that fails (here a stand-in that
// fails like bwrap does where user namespaces are forbidden) is reported
// as SandboxUnavailable with the reason.
func TestBwrapCannotBuildSandbox(t *testing.T) {
	dir, err := os.MkdirTemp("", "fake-bwrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	fake := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, sp.Options{Sandbox: sandbox.New(sandbox.Config{Bwrap: fake})})
	var r run
	e.ok("run_code", map[string]any{"language": "python", "code": "def main(args):\n    return 1\n"}, &r)
	if r.Status != "failed" || r.Error.Type != "SandboxUnavailable" || !strings.Contains(r.Error.Message, "user namespaces") {
		t.Fatalf("run: %+v", r)
	}
}

// The example bundle (examples/skills-protocol) loads, is served by the
// MCP Skills extension too (its SKILL.md name is the last segment of the
// path demo/text/stats), and runs on text and on a blob.
func TestExampleBundle(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t, sp.Options{})
	if err := e.rt.LoadFolders("../../../examples/skills-protocol"); err != nil {
		t.Fatal(err)
	}
	view := skillsext.NewView(e.cat)
	defer view.Close()
	var s skillsext.Skill
	for i := 0; ; i++ {
		var ok bool
		var err error
		if s, ok, err = view.Skill(context.Background(), "demo/text/stats"); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if i > 500 {
			t.Fatal("the MCP Skills extension view never lists demo/text/stats")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Problem != "" || s.Name != "stats" {
		t.Fatalf("MCP Skills extension leaves the example out: name %q, problem %q", s.Name, s.Problem)
	}

	var d struct {
		Name     string `json:"name"`
		Manifest struct {
			Kind string `json:"kind"`
		} `json:"manifest"`
	}
	e.ok("describe_skill", map[string]any{"name": "demo.text.stats"}, &d)
	if d.Name != "demo.text.stats" || d.Manifest.Kind != "action" {
		t.Fatalf("describe_skill: %+v", d)
	}
	var r run
	e.ok("execute_skill", map[string]any{"name": "demo.text.stats", "args": map[string]any{"text": "one two\nthree"}}, &r)
	if r.Status != "completed" || string(r.Output) != `{"lines":2,"words":3,"chars":13}` {
		t.Fatalf("execute_skill on text: %+v (logs %q)", r, r.LogsPreview)
	}
	var blob struct {
		BlobID string `json:"blob_id"`
	}
	e.ok("create_blob", map[string]any{"content": "a b c d\ne\nf", "kind": "text/plain"}, &blob)
	e.ok("execute_skill", map[string]any{"name": "demo.text.stats", "args": map[string]any{"blob": blob.BlobID}, "input_blobs": []string{blob.BlobID}}, &r)
	if r.Status != "completed" || string(r.Output) != `{"lines":3,"words":6,"chars":11}` {
		t.Fatalf("execute_skill on a blob: %+v (logs %q)", r, r.LogsPreview)
	}
}
