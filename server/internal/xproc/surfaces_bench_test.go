package xproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// skillsHTTP is a `skills --standalone` child process with its HTTP
// listener (MCP, the web page) on a free port.
type skillsHTTP struct {
	*skillsProc
	http string // http://host:port
}

// startSkillsHTTP starts `skills --standalone` with its HTTP listener and
// waits until both the registry and the listener answer.
func startSkillsHTTP(b *testing.B) *skillsHTTP {
	b.Helper()
	bin := testutil.SkillsBinary(b)
	data := b.TempDir()
	addr := testutil.FreeAddr(b)
	p := &skillsProc{url: "ws://" + testutil.FreeAddr(b), data: data}
	p.cmd = exec.Command(bin, "--standalone", "--url", p.url, "--data", data, "--mcp-addr", addr,
		"--config", filepath.Join(data, "absent.yaml"), "--log-level", "error")
	p.cmd.Args = append(p.cmd.Args, strings.Fields(os.Getenv("XPROC_SKILLS_FLAGS"))...)
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.kill)
	s := &skillsHTTP{skillsProc: p, http: "http://" + addr}
	c := dial(b, p.url)
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(s.http + "/readyz")
		if err == nil {
			res.Body.Close()
		}
		if err == nil && res.StatusCode == http.StatusOK && call(c, rules.FnSkillsList, map[string]any{}) == nil {
			return s
		}
		if time.Now().After(deadline) {
			b.Fatal("skills --standalone did not answer within 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcpSessions opens n sessions of the official go-sdk client to endpoint
// over Streamable HTTP at protocol revision proto.
func mcpSessions(b *testing.B, endpoint, proto string, n int) []*sdk.ClientSession {
	b.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * n}}
	out := make([]*sdk.ClientSession, n)
	for i := range out {
		c := sdk.NewClient(&sdk.Implementation{Name: "xproc-bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc},
			&sdk.ClientSessionOptions{ProtocolVersion: proto})
		if err != nil {
			b.Fatal(err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != proto {
			b.Fatalf("%s negotiated protocol %s, asked %s", endpoint, got, proto)
		}
		b.Cleanup(func() { _ = cs.Close() })
		out[i] = cs
	}
	return out
}

// mcpOp is one MCP request a benchmark repeats, with a check of its answer.
type mcpOp struct {
	name string
	do   func(cs *sdk.ClientSession) error
}

func readOp(name, uri string, wantBytes int) mcpOp {
	return mcpOp{name, func(cs *sdk.ClientSession) error {
		res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			return err
		}
		if len(res.Contents) != 1 || len(res.Contents[0].Text) < wantBytes {
			return fmt.Errorf("%s: %d contents, %d bytes", uri, len(res.Contents), len(res.Contents[0].Text))
		}
		return nil
	}}
}

var promptOp = mcpOp{"prompt", func(cs *sdk.ClientSession) error {
	res, err := cs.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "you"}})
	if err != nil {
		return err
	}
	if len(res.Messages) != 1 {
		return fmt.Errorf("prompts/get greet: %d messages", len(res.Messages))
	}
	return nil
}}

// BenchmarkMCP measures the MCP surface as an agent sees it: the official
// go-sdk client in this process, over Streamable HTTP at each protocol
// revision (2025-11-25: a session; 2026-07-28: stateless requests),
// against `skills --standalone` in another process and, in the same run,
// against a bare go-sdk server in a third process that returns a constant
// 2 KiB resource and a constant prompt (the floor: go-sdk and HTTP alone). Reads
// of a 2 KiB published skill as iii:// and as skill:// (its synthesized
// SKILL.md), and prompts/get of a prompt whose handler runs in a fourth
// process (a publisher on the engine). The skills rows report their p50 as
// a multiple of the bare server's (x_bare_p50), their throughput as a
// fraction of it (of_bare_ops) and the registry process's CPU per request.
func BenchmarkMCP(b *testing.B) {
	bare, barePID := startRoleProc(b, roleBareMCP)
	skills := startSkillsHTTP(b)
	if err := call(dial(b, skills.url), rules.FnSkillsRegister, map[string]string{"id": "bench/one", "skill": body2K(1)}); err != nil {
		b.Fatal(err)
	}
	if ready := startRole(b, rolePromptPublisher, upEnv+"="+skills.url); ready != "ready" {
		b.Fatalf("prompt publisher: %q", ready)
	}
	ops := []mcpOp{readOp("iii", "iii://bench/one", 2048), readOp("skill", "skill://bench/one/SKILL.md", 2048), promptOp}
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		for _, op := range ops {
			for _, sessions := range []int{1, 16} {
				var floor result
				name := fmt.Sprintf("proto=%s/op=%s/sessions=%d", proto, op.name, sessions)
				b.Run(name+"/server=bare", func(b *testing.B) {
					cpu0 := procCPU(b, barePID)
					floor = measureMCP(b, bare, proto, sessions, op)
					b.ReportMetric(float64((procCPU(b, barePID)-cpu0).Microseconds())/float64(b.N), "server_cpu_µs/op")
				})
				b.Run(name+"/server=skills", func(b *testing.B) {
					pid := skills.cmd.Process.Pid
					cpu0 := procCPU(b, pid)
					r := measureMCP(b, skills.http+"/mcp", proto, sessions, op)
					b.ReportMetric(float64((procCPU(b, pid)-cpu0).Microseconds())/float64(b.N), "server_cpu_µs/op")
					if floor.opsPerSec > 0 {
						b.ReportMetric(float64(r.p50)/float64(floor.p50), "x_bare_p50")
						b.ReportMetric(r.opsPerSec/floor.opsPerSec, "of_bare_ops")
					}
				})
			}
		}
	}
}

// measureMCP runs op over sessions sessions to endpoint.
func measureMCP(b *testing.B, endpoint, proto string, sessions int, op mcpOp) result {
	b.Helper()
	css := mcpSessions(b, endpoint, proto, sessions)
	for _, cs := range css { // every session works before the clock starts
		if err := op.do(cs); err != nil {
			b.Fatal(err)
		}
	}
	calls := make([]func() error, len(css))
	for i, cs := range css {
		calls[i] = func() error { return op.do(cs) }
	}
	return measure(b, calls)
}

// BenchmarkWebSkillPage measures the web page of one 2 KiB published skill
// (rendered markdown, its versions, who published it) from this process
// against `skills --standalone`, and in the same run the same HTML served
// from memory by a bare net/http server in another process: x_memory_p50
// is the page's p50 over that floor's, of_memory_ops its throughput over
// the floor's.
func BenchmarkWebSkillPage(b *testing.B) {
	skills := startSkillsHTTP(b)
	if err := call(dial(b, skills.url), rules.FnSkillsRegister, map[string]string{"id": "bench/one", "skill": body2K(1)}); err != nil {
		b.Fatal(err)
	}
	page := skills.http + "/skill/bench/one"
	html, err := getPage(http.DefaultClient, page)
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "page.html")
	if err := os.WriteFile(file, html, 0o600); err != nil {
		b.Fatal(err)
	}
	static := startRole(b, roleStaticHTML, htmlEnv+"="+file) + "/skill/bench/one"
	for _, clients := range []int{1, 16} {
		var floor result
		b.Run(fmt.Sprintf("clients=%d/server=memory", clients), func(b *testing.B) {
			floor = measurePages(b, static, clients)
		})
		b.Run(fmt.Sprintf("clients=%d/server=skills", clients), func(b *testing.B) {
			pid := skills.cmd.Process.Pid
			cpu0 := procCPU(b, pid)
			r := measurePages(b, page, clients)
			b.ReportMetric(float64((procCPU(b, pid)-cpu0).Microseconds())/float64(b.N), "server_cpu_µs/op")
			if floor.opsPerSec > 0 {
				b.ReportMetric(float64(r.p50)/float64(floor.p50), "x_memory_p50")
				b.ReportMetric(r.opsPerSec/floor.opsPerSec, "of_memory_ops")
			}
		})
	}
}

func getPage(hc *http.Client, url string) ([]byte, error) {
	res, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK || len(body) < 2048 {
		return nil, fmt.Errorf("GET %s: status %d, %d bytes", url, res.StatusCode, len(body))
	}
	return body, nil
}

func measurePages(b *testing.B, url string, clients int) result {
	b.Helper()
	calls := make([]func() error, clients)
	for i := range calls {
		// A browser: it keeps the page's cookies (the CSRF value).
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}, Jar: jar}
		calls[i] = func() error { _, err := getPage(hc, url); return err }
		if err := calls[i](); err != nil {
			b.Fatal(err)
		}
	}
	return measure(b, calls)
}
