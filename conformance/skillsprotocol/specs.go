package skillsprotocol

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// JSON-RPC error codes.
const (
	parseError     = -32700
	invalidRequest = -32600
	methodNotFound = -32601
	invalidParams  = -32602
)

var _ = group.Describe("load_skills_protocol_guide", Label("guide"), func() {
	It("returns the SKILL.md of the built-in skills.protocol.guide 0.1.0", func() {
		var g struct {
			Content string `json:"content"`
		}
		ok("load_skills_protocol_guide", map[string]any{}, &g)
		Expect(g.Content).To(HavePrefix("# Skills Protocol Overview"))
		var f struct {
			Content string `json:"content"`
		}
		ok("read_skill_file", map[string]any{"name": "skills.protocol.guide", "version": "0.1.0", "path": "SKILL.md"}, &f)
		Expect(f.Content).To(Equal(g.Content))
		var d map[string]any
		ok("describe_skill", map[string]any{"name": "skills.protocol.guide"}, &d)
		Expect(d).To(HaveKeyWithValue("kind", "instruction"))
		Expect(d).To(HaveKeyWithValue("version", "0.1.0"))
	})
	It("takes no parameters", func() {
		fails("load_skills_protocol_guide", map[string]any{"verbose": true}, invalidParams)
	})
})

var _ = group.Describe("list_skills", Label("discovery"), func() {
	It("lists every skill once, at its latest version, in a deterministic order", func() {
		var a, b List
		ok("list_skills", map[string]any{"limit": 1000}, &a)
		ok("list_skills", map[string]any{"limit": 1000}, &b)
		Expect(a.Names()).To(Equal(b.Names()))
		names := make([]string, len(a.Skills))
		for i, s := range a.Skills {
			names[i] = s.Name
		}
		Expect(slices.IsSorted(names)).To(BeTrue(), "%v", names)
		Expect(a.Names()).To(ContainElements("conf.echo@1.10.0", "conf.docs@0.3.0", "skills.protocol.guide@0.1.0"))
		Expect(names).NotTo(ContainElement("conf.symlink"), "a bundle holding a symlink is refused")
		Expect(strings.Join(names, " ")).NotTo(ContainSubstring("nvalid"), "a bundle with an invalid skill.toml is refused")
	})
	It("gives names by default and descriptions, namespaces and kinds with detail summary", func() {
		var l List
		ok("list_skills", map[string]any{"namespace": "conf.echo"}, &l)
		Expect(l.Skills).To(HaveLen(1))
		Expect(l.Skills[0].Description).To(BeEmpty())
		ok("list_skills", map[string]any{"namespace": "conf.echo", "detail": "summary"}, &l)
		Expect(l.Skills[0].Kind).To(Equal("action"))
		Expect(l.Skills[0].Namespace).To(Equal("conf"))
		Expect(l.Skills[0].Description).To(Equal("Conformance fixture: returns its version and args."))
	})
	It("filters by namespace on whole name segments", func() {
		var l List
		ok("list_skills", map[string]any{"namespace": "conf", "limit": 1000}, &l)
		Expect(l.Names()).To(HaveLen(10))
		ok("list_skills", map[string]any{"namespace": "con"}, &l)
		Expect(l.Skills).To(BeEmpty())
		Expect(l.NextCursor).To(BeNil())
	})
	It("pages with an opaque cursor until next_cursor is null", func() {
		var all []string
		params := map[string]any{"namespace": "conf.page", "limit": 3}
		for page := 0; page < 10; page++ {
			var l List
			ok("list_skills", params, &l)
			Expect(len(l.Skills)).To(BeNumerically("<=", 3))
			all = append(all, l.Names()...)
			if l.NextCursor == nil {
				break
			}
			params["cursor"] = *l.NextCursor
		}
		Expect(all).To(Equal([]string{"conf.page.a@1.0.0", "conf.page.b@1.0.0", "conf.page.c@1.0.0",
			"conf.page.d@1.0.0", "conf.page.e@1.0.0", "conf.page.f@1.0.0", "conf.page.g@1.0.0"}))
	})
	It("returns at most 50 skills without a limit", func() {
		var l List
		ok("list_skills", map[string]any{}, &l)
		Expect(len(l.Skills)).To(BeNumerically("<=", 50))
	})
	DescribeTable("refuses bad parameters with -32602",
		func(params map[string]any) { fails("list_skills", params, invalidParams) },
		Entry("a cursor it never gave", map[string]any{"cursor": "not-a-cursor"}),
		Entry("limit 0", map[string]any{"limit": 0}),
		Entry("a negative limit", map[string]any{"limit": -5}),
		Entry("an unknown detail", map[string]any{"detail": "everything"}),
		Entry("a string limit", map[string]any{"limit": "5"}),
		Entry("an unknown parameter", map[string]any{"namespaces": "conf"}),
	)
})

var _ = group.Describe("describe_skill", Label("discovery", "versions"), func() {
	It("describes the latest version by semver order, not text order", func() {
		var d map[string]any
		ok("describe_skill", map[string]any{"name": "conf.echo"}, &d)
		Expect(d["version"]).To(Equal("1.10.0"))
		Expect(d["versions"]).To(Equal([]any{"1.10.0", "1.9.3", "1.2.0"}))
		Expect(d["manifest"]).To(HaveKeyWithValue("runtime", HaveKeyWithValue("entrypoint", "code/main.py")))
		Expect(d["frontmatter"]).To(HaveKeyWithValue("version", "1.10.0"))
	})
	It("selects a version and gives instructions and files with detail full", func() {
		var d map[string]any
		ok("describe_skill", map[string]any{"name": "conf.echo", "version": "1.2.0", "detail": "full"}, &d)
		Expect(d["version"]).To(Equal("1.2.0"))
		Expect(d["instructions"]).To(ContainSubstring("# conf.echo 1.2.0"))
		var paths []string
		for _, f := range d["files"].([]any) {
			paths = append(paths, f.(map[string]any)["path"].(string))
		}
		Expect(paths).To(Equal([]string{"SKILL.md", "code/helper.py", "code/main.py", "skill.toml"}))
	})
	It("gives only the manifest with detail manifest", func() {
		var d map[string]any
		ok("describe_skill", map[string]any{"name": "conf.docs", "detail": "manifest"}, &d)
		Expect(d).To(HaveLen(3))
		Expect(d["manifest"]).To(HaveKeyWithValue("kind", "instruction"))
	})
	DescribeTable("refuses with -32602",
		func(params map[string]any) { fails("describe_skill", params, invalidParams) },
		Entry("an unknown skill", map[string]any{"name": "conf.nothing"}),
		Entry("an unknown version", map[string]any{"name": "conf.echo", "version": "9.9.9"}),
		Entry("no name", map[string]any{}),
		Entry("an unknown detail", map[string]any{"name": "conf.echo", "detail": "all"}),
	)
})

var _ = group.Describe("read_skill_file", Label("discovery"), func() {
	type file struct {
		Path     string `json:"path"`
		MIME     string `json:"mime"`
		Size     int    `json:"size"`
		Encoding string `json:"encoding"`
		Content  string `json:"content"`
	}
	It("reads text files as UTF-8 and binary files as base64", func() {
		var f file
		ok("read_skill_file", map[string]any{"name": "conf.docs", "path": "resources/notes.txt"}, &f)
		Expect(f.Encoding).To(Equal("utf-8"))
		Expect(f.Content).To(Equal("notes of conf.docs\n"))
		ok("read_skill_file", map[string]any{"name": "conf.docs", "path": "resources/pixel.png"}, &f)
		Expect(f.Encoding).To(Equal("base64"))
		b, err := base64.StdEncoding.DecodeString(f.Content)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(HavePrefix("\x89PNG"))
		Expect(f.Size).To(Equal(len(b)))
	})
	It("reads a file of any version", func() {
		var f file
		ok("read_skill_file", map[string]any{"name": "conf.echo", "version": "1.9.3", "path": "code/helper.py"}, &f)
		Expect(f.Content).To(Equal("VERSION = \"1.9.3\"\n"))
	})
	DescribeTable("never reads outside the bundle (-32602)",
		func(path string) {
			fails("read_skill_file", map[string]any{"name": "conf.echo", "path": path}, invalidParams)
		},
		Entry("parent", "../conf.secret/code/main.py"),
		Entry("absolute", "/etc/passwd"),
		Entry("nested parent", "code/../../x"),
		Entry("unknown file", "code/missing.py"),
		Entry("empty path", ""),
	)
})

var _ = group.Describe("execute_skill", Label("execution"), func() {
	It("runs the latest version's entrypoint with args in a sandbox", func() {
		var r Run
		ok("execute_skill", map[string]any{"name": "conf.echo", "args": map[string]any{"n": 1}}, &r)
		Expect(r.Status).To(Equal("completed"), "%+v", r)
		Expect(r.RunID).NotTo(BeEmpty())
		Expect(string(r.Output)).To(MatchJSON(`{"version":"1.10.0","args":{"n":1}}`))
	})
	It("runs the requested version", func() {
		var r Run
		ok("execute_skill", map[string]any{"name": "conf.echo", "version": "1.2.0"}, &r)
		Expect(string(r.Output)).To(MatchJSON(`{"version":"1.2.0","args":{}}`))
	})
	It("gives a skill only the secrets its manifest names", func() {
		var r Run
		ok("execute_skill", map[string]any{"name": "conf.secret"}, &r)
		var out struct {
			Env     []string `json:"env"`
			Granted *string  `json:"granted"`
		}
		Expect(json.Unmarshal(r.Output, &out)).To(Succeed())
		Expect(out.Env).NotTo(ContainElement(notGranted))
		for _, k := range out.Env {
			Expect([]string{"CONF_GRANTED_SECRET", "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "PWD"}).To(ContainElement(k))
		}
		if launched {
			Expect(out.Granted).To(HaveValue(Equal(grantedSecret)))
		}
	})
	DescribeTable("refuses with -32602",
		func(params map[string]any) { fails("execute_skill", params, invalidParams) },
		Entry("an unknown skill", map[string]any{"name": "conf.nothing"}),
		Entry("an unknown version", map[string]any{"name": "conf.echo", "version": "0.0.1"}),
		Entry("an instruction skill", map[string]any{"name": "conf.docs"}),
		Entry("an unknown input blob", map[string]any{"name": "conf.echo", "input_blobs": []string{"blob:0000000000000000"}}),
		Entry("a negative timeout", map[string]any{"name": "conf.echo", "timeout_ms": -1}),
		Entry("args that are not an object", map[string]any{"name": "conf.echo", "args": []int{1}}),
	)
})

var _ = group.Describe("run_code", Label("execution"), func() {
	It("calls main(args) and returns its value", func() {
		r := runCode("def main(args):\n    print('log line')\n    return {'sum': args['a'] + args['b']}\n", map[string]any{"args": map[string]any{"a": 2, "b": 3}})
		Expect(r.Status).To(Equal("completed"), "%+v", r)
		Expect(string(r.Output)).To(MatchJSON(`{"sum":5}`))
		Expect(r.LogsPreview).To(ContainSubstring("log line"))
	})
	It("calls another entrypoint", func() {
		r := runCode("def go(args):\n    return 42\n", map[string]any{"entrypoint": "go"})
		Expect(string(r.Output)).To(Equal("42"))
	})
	It("mounts skills read-only and makes them importable", func() {
		code := "from skills.conf.echo import run\nimport os\ndef main(args):\n    try:\n        open('/skills/conf.echo/new', 'w')\n        w = 'writable'\n    except OSError:\n        w = 'read-only'\n    return [run({'x': 1}), w, os.path.isfile('/skills/conf.echo/skill.toml')]\n"
		r := runCode(code, map[string]any{"mount_skills": []string{"conf.echo"}})
		Expect(string(r.Output)).To(MatchJSON(`[{"version":"1.10.0","args":{"x":1}},"read-only",true]`), "%+v", r)
	})
	It("reports an execution error inside a successful result (two-level errors)", func() {
		r := runCode("def main(args):\n    raise ValueError('bad input')\n", nil)
		Expect(r.Status).To(Equal("failed"))
		Expect(r.Error.Type).To(Equal("ValueError"))
		Expect(r.Error.Message).To(Equal("bad input"))
		Expect(r.LogsPreview).To(ContainSubstring("Traceback"))
	})
	It("has an empty writable /workspace", func() {
		r := runCode("import os\ndef main(args):\n    before = os.listdir('/workspace')\n    open('/workspace/f', 'w').write('x')\n    return [before, open('/workspace/f').read(), os.getcwd()]\n", nil)
		Expect(string(r.Output)).To(MatchJSON(`[[],"x","/workspace"]`), "%+v", r)
	})
	It("starts every run from a fresh sandbox", func() {
		runCode("def main(args):\n    open('/workspace/left-over', 'w').write('x')\n", nil)
		r := runCode("import os\ndef main(args):\n    return os.path.exists('/workspace/left-over')\n", nil)
		Expect(string(r.Output)).To(Equal("false"))
	})
	DescribeTable("refuses with -32602",
		func(params map[string]any) { fails("run_code", params, invalidParams) },
		Entry("another language", map[string]any{"language": "javascript", "code": "1"}),
		Entry("no code", map[string]any{"language": "python"}),
		Entry("no language", map[string]any{"code": "def main(a): pass"}),
		Entry("an unknown mounted skill", map[string]any{"language": "python", "code": "x", "mount_skills": []string{"conf.nothing"}}),
		Entry("an unknown input blob", map[string]any{"language": "python", "code": "x", "input_blobs": []string{"blob:0000000000000000"}}),
		Entry("a bad entrypoint", map[string]any{"language": "python", "code": "x", "entrypoint": "a b"}),
	)
})

var _ = group.Describe("blobs", Label("blobs"), func() {
	It("stores content and reads it back by head, tail and in full", func() {
		content := "head-" + strings.Repeat("0123456789", 500) + "-tail"
		var c struct {
			BlobID string `json:"blob_id"`
		}
		ok("create_blob", map[string]any{"content": content, "kind": "text/plain"}, &c)
		Expect(c.BlobID).To(MatchRegexp(`^blob:[0-9a-f]{16}$`))
		var r struct {
			Content   string `json:"content"`
			Size      int    `json:"size"`
			Truncated bool   `json:"truncated"`
			Kind      string `json:"kind"`
		}
		ok("read_blob", map[string]any{"blob_id": c.BlobID}, &r)
		Expect(r.Content).To(Equal(content[:2000]))
		Expect(r.Size).To(Equal(len(content)))
		Expect(r.Truncated).To(BeTrue())
		Expect(r.Kind).To(Equal("text/plain"))
		ok("read_blob", map[string]any{"blob_id": c.BlobID, "mode": "sample_tail", "max_bytes": 5}, &r)
		Expect(r.Content).To(Equal("-tail"))
		ok("read_blob", map[string]any{"blob_id": c.BlobID, "mode": "full"}, &r)
		Expect(r.Content).To(Equal(content))
		Expect(r.Truncated).To(BeFalse())
	})
	It("mounts input blobs read-only at /blobs/<id> and through runtime.blobs", func() {
		var c struct {
			BlobID string `json:"blob_id"`
		}
		ok("create_blob", map[string]any{"content": "a,b\n1,2\n", "kind": "text/csv"}, &c)
		code := "import runtime\ndef main(args):\n    t = runtime.blobs.read_text(args['id'])\n    f = open('/blobs/' + args['id'][len('blob:'):]).read()\n    try:\n        open('/blobs/' + args['id'][len('blob:'):], 'w')\n        w = 'writable'\n    except OSError:\n        w = 'read-only'\n    return [t == f, t, w]\n"
		r := runCode(code, map[string]any{"args": map[string]any{"id": c.BlobID}, "input_blobs": []string{c.BlobID}})
		Expect(string(r.Output)).To(MatchJSON(`[true,"a,b\n1,2\n","read-only"]`), "%+v", r)
		var e Run
		ok("execute_skill", map[string]any{"name": "conf.echo", "input_blobs": []string{c.BlobID}}, &e)
		Expect(e.Status).To(Equal("completed"))
	})
	It("turns a large output into a blob", func() {
		r := runCode("def main(args):\n    return 'z' * 100000\n", nil)
		Expect(r.Status).To(Equal("completed"))
		Expect(r.OutputBlobs).NotTo(BeEmpty())
		var b struct {
			Size    int    `json:"size"`
			Content string `json:"content"`
		}
		ok("read_blob", map[string]any{"blob_id": r.OutputBlobs[0], "max_bytes": 10}, &b)
		Expect(b.Size).To(BeNumerically(">=", 100000))
		Expect(b.Content).To(Equal(`"zzzzzzzzz`))
	})
	DescribeTable("refuses with -32602",
		func(method string, params map[string]any) { fails(method, params, invalidParams) },
		Entry("an unknown blob", "read_blob", map[string]any{"blob_id": "blob:0000000000000000"}),
		Entry("a malformed handle", "read_blob", map[string]any{"blob_id": "blob:../../etc/passwd"}),
		Entry("no blob_id", "read_blob", map[string]any{}),
		Entry("an unknown mode", "read_blob", map[string]any{"blob_id": "blob:0000000000000000", "mode": "middle"}),
		Entry("no content", "create_blob", map[string]any{"kind": "text/plain"}),
		Entry("a kind that is not a MIME type", "create_blob", map[string]any{"content": "x", "kind": "text"}),
	)
})

var _ = group.Describe("the JSON-RPC envelope", Label("jsonrpc"), func() {
	post := func(body string) map[string]any {
		out, err := rpc.raw(context.Background(), []byte(body))
		Expect(err).NotTo(HaveOccurred())
		var m map[string]any
		Expect(json.Unmarshal(out, &m)).To(Succeed(), string(out))
		return m
	}
	code := func(m map[string]any) float64 {
		Expect(m).To(HaveKey("error"), "%v", m)
		return m["error"].(map[string]any)["code"].(float64)
	}
	It("answers invalid JSON with -32700 and id null", func() {
		m := post(`{"jsonrpc":"2.0",`)
		Expect(code(m)).To(Equal(float64(parseError)))
		Expect(m).To(HaveKeyWithValue("id", BeNil()))
	})
	It("answers a malformed request with -32600", func() {
		Expect(code(post(`{"method":"list_skills","id":1}`))).To(Equal(float64(invalidRequest)))
		Expect(code(post(`{"jsonrpc":"2.0","id":1}`))).To(Equal(float64(invalidRequest)))
		Expect(code(post(`{"jsonrpc":"2.0","method":"list_skills","id":[1]}`))).To(Equal(float64(invalidRequest)))
		Expect(code(post(`"list_skills"`))).To(Equal(float64(invalidRequest)))
		Expect(code(post(`[]`))).To(Equal(float64(invalidRequest)))
	})
	It("answers an unknown method with -32601", func() {
		Expect(code(post(`{"jsonrpc":"2.0","method":"tools/call","id":1}`))).To(Equal(float64(methodNotFound)))
	})
	It("answers params that are not an object with -32602", func() {
		Expect(code(post(`{"jsonrpc":"2.0","method":"list_skills","params":["conf"],"id":1}`))).To(Equal(float64(invalidParams)))
	})
	It("echoes string, number and null ids", func() {
		Expect(post(`{"jsonrpc":"2.0","method":"list_skills","id":"a-1"}`)).To(HaveKeyWithValue("id", "a-1"))
		Expect(post(`{"jsonrpc":"2.0","method":"list_skills","id":12}`)).To(HaveKeyWithValue("id", 12.0))
		Expect(post(`{"jsonrpc":"2.0","method":"list_skills","id":null}`)).To(HaveKeyWithValue("id", BeNil()))
	})
	It("answers a batch per request and leaves notifications unanswered", func() {
		out, err := rpc.raw(context.Background(), []byte(`[
			{"jsonrpc":"2.0","method":"list_skills","params":{"limit":1},"id":1},
			{"jsonrpc":"2.0","method":"list_skills"},
			{"jsonrpc":"2.0","method":"nope","id":2},
			7]`))
		Expect(err).NotTo(HaveOccurred())
		var batch []map[string]any
		Expect(json.Unmarshal(out, &batch)).To(Succeed(), string(out))
		Expect(batch).To(HaveLen(3))
		ids := []any{}
		for _, m := range batch {
			ids = append(ids, m["id"])
		}
		Expect(ids).To(ConsistOf(1.0, 2.0, nil))
		out, err = rpc.raw(context.Background(), []byte(`[{"jsonrpc":"2.0","method":"list_skills"}]`))
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(BeEmpty())
	})
	It("takes requests by POST only and refuses foreign browser origins and Host names", func() {
		resp, err := http.Get(rpc.url)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
		req, _ := http.NewRequest(http.MethodPost, rpc.url, strings.NewReader(`{"jsonrpc":"2.0","method":"list_skills","id":1}`))
		req.Header.Set("Origin", "https://evil.example")
		resp, err = http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		// A DNS-rebinding page reaches the loopback listener under its own name.
		req, _ = http.NewRequest(http.MethodPost, rpc.url, strings.NewReader(`{"jsonrpc":"2.0","method":"list_skills","id":1}`))
		req.Host = "rebind.evil.example"
		resp, err = http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	})
})

var _ = group.Describe("the sandbox", Label("sandbox"), func() {
	// probe runs body inside try; "blocked: <Error>" means the attempt failed.
	probe := func(body string) string {
		lines := strings.Split(body, "\n")
		for i := range lines {
			lines[i] = "        " + lines[i]
		}
		return fmt.Sprintf("def main(args):\n    try:\n%s\n        return 'ESCAPED'\n    except BaseException as e:\n        return 'blocked: ' + type(e).__name__\n", strings.Join(lines, "\n"))
	}
	healthy := func() {
		var l List
		ok("list_skills", map[string]any{"limit": 1}, &l)
		r := runCode("def main(args):\n    return 'alive'\n", nil)
		Expect(string(r.Output)).To(Equal(`"alive"`), "the server must keep working: %+v", r)
	}
	DescribeTable("contains hostile code and stays healthy",
		func(code string, extra map[string]any, check func(Run)) {
			if a, found := extra["args"].(map[string]any); found && a["dir"] == "@data" {
				extra = map[string]any{"args": map[string]any{"dir": dataDirOr("/var/lib")}}
			}
			r := runCode(code, extra)
			check(r)
			Expect(r.LogsPreview + string(r.Output)).NotTo(ContainSubstring("must-not-leak"))
			healthy()
		},
		Entry("network access", probe("import socket\nsocket.create_connection(('1.1.1.1', 443), timeout=3)"), nil, blocked),
		Entry("DNS", probe("import socket\nsocket.getaddrinfo('example.com', 443)"), nil, blocked),
		Entry("reading /etc/shadow", probe("open('/etc/shadow').read()"), nil, blocked),
		Entry("reading the server's data directory", probe("import os\nos.listdir(args['dir'])"), map[string]any{"args": map[string]any{"dir": "@data"}}, blocked),
		Entry("writing outside /workspace", probe("open('/usr/lib/evil', 'w').write('x')"), nil, blocked),
		Entry("writing the sandbox root", probe("open('/evil', 'w').write('x')"), nil, blocked),
		Entry("reading a secret not granted", probe("import os\nassert os.environ['"+notGranted+"']"), nil, blocked),
		Entry("becoming root", probe("import os\nos.setuid(0)"), nil, blocked),
		Entry("a fork bomb",
			"import os, time\ndef main(args):\n    n = 0\n    try:\n        while True:\n            if os.fork() == 0:\n                time.sleep(3)\n                os._exit(0)\n            n += 1\n    except OSError:\n        return 'capped'\n",
			nil, func(r Run) { Expect(string(r.Output)).To(Equal(`"capped"`), "%+v", r) }),
		Entry("a memory bomb", "def main(args):\n    x = bytearray(8 << 30)\n    return 'ESCAPED'\n", nil,
			func(r Run) { Expect(r.Status).To(Equal("failed")); Expect(r.Error.Type).To(Equal("MemoryError")) }),
		Entry("an endless loop", "def main(args):\n    while True:\n        pass\n", map[string]any{"limits": map[string]any{"timeout_ms": 1000}},
			func(r Run) { Expect(r.Status).To(Equal("failed")); Expect(r.Error.Type).To(Equal("TimeoutError")) }),
		Entry("1 GiB on stdout", "import sys\ndef main(args):\n    c = 'x' * (1 << 20)\n    for _ in range(1024):\n        sys.stdout.write(c)\n", nil,
			func(r Run) {
				Expect(r.Status).To(Equal("failed"))
				Expect(r.Error.Type).To(Equal("OutputLimitExceeded"))
			}),
	)
})

func blocked(r Run) {
	Expect(r.Status).To(Equal("completed"), "%+v", r)
	Expect(string(r.Output)).To(HavePrefix(`"blocked: `), "%+v", r)
}

// dataDirOr is the launched server's data directory, or fallback for an
// external server.
func dataDirOr(fallback string) string {
	if dataDir != "" {
		return dataDir
	}
	return fallback
}
