package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain removes the skills binary the tests built (testutil.BuildSkills).
func TestMain(m *testing.M) { testutil.Main(m) }

var endpointLine = regexp.MustCompile(`MCP endpoint (http://\S+/mcp)`)

// TestBinaryStandalone runs `skills --standalone` with its MCP endpoint on
// a free port and a token, and drives it with the go-sdk client over real
// HTTP for both protocol revisions.
func TestBinaryStandalone(t *testing.T) {
	bin := testutil.BuildSkills(t)
	engineURL := "ws://" + testutil.FreeAddr(t)
	cmd := exec.Command(bin, "--standalone", "--url", engineURL, "--data", t.TempDir(), "--config", filepath.Join(t.TempDir(), "none.yaml"),
		"--mcp-addr", "127.0.0.1:0", "--mcp-token", "tok")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if os.Getenv("SKILLS_TEST_LOG") != "" {
				t.Log(sc.Text())
			}
			if m := endpointLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("no 'MCP endpoint http://…/mcp' log line")
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %s is not on loopback", endpoint)
	}

	pub := iii.RegisterWorker(engineURL, iii.WithName("publisher"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = pub.Close() })
	connect(t, pub)
	s := &stack{t: t, ctx: context.Background(), url: engineURL, pub: pub}
	s.seed()

	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: status %d, want 401", resp.StatusCode)
	}

	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			n := &notes{}
			cs := s.connectClient(&sdk.StreamableClientTransport{Endpoint: endpoint,
				HTTPClient: &http.Client{Transport: bearer{token: "tok", next: http.DefaultTransport}}}, v, n)
			checkSurface(t, cs)
			raw, rerr := rpc(t, endpoint, map[string]string{"Authorization": "Bearer tok", "Mcp-Protocol-Version": v, "Mcp-Session-Id": cs.ID()}, "skills/list", map[string]any{})
			if rerr != nil || !strings.Contains(string(raw), `"uri":"skill://demo/nested/SKILL.md","frontmatter":{"description":"A sub-skill.","name":"nested"}`) {
				t.Errorf("skills/list of the standalone server: %v %s", rerr, raw)
			}
			before := n.count(resourcesChanged)
			id := "from-" + strings.ReplaceAll(v, "-", "")
			s.registerSkill(id, "# New\n")
			defer s.trigger("skills::unregister", map[string]string{"id": id})
			testutil.Eventually(t, time.Second, "resources/list_changed after skills::register", func() bool { return n.count(resourcesChanged) > before })
		})
	}
}

// TestBinaryStdio launches `skills mcp --stdio --url …` the way Claude
// Desktop or Cursor do and drives it with the go-sdk command transport.
func TestBinaryStdio(t *testing.T) {
	bin := testutil.BuildSkills(t)
	s := newStack(t)
	s.seed()
	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			cmd := exec.Command(bin, "mcp", "--stdio", "--url", s.url, "--log-level", "warn")
			n := &notes{}
			cs := s.connectClient(&sdk.CommandTransport{Command: cmd}, v, n)
			checkSurface(t, cs)
			before := n.count(promptsChanged)
			name := "stdio-" + strings.ReplaceAll(v, "-", "")
			s.trigger("prompts::register", map[string]any{"name": name, "description": "d", "function_id": "greet::render"})
			defer s.trigger("prompts::unregister", map[string]any{"name": name})
			testutil.Eventually(t, time.Second, "prompts/list_changed after prompts::register", func() bool { return n.count(promptsChanged) > before })
		})
	}
}

// TestBinaryStdioSkills: `skills mcp --stdio` answers the Skills extension
// on its stdin/stdout, reading the registry's catalog over iii.
func TestBinaryStdioSkills(t *testing.T) {
	bin := testutil.BuildSkills(t)
	s := newStack(t)
	s.seed()
	cmd := exec.Command(bin, "mcp", "--stdio", "--url", s.url, "--log-level", "warn")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<24)
	ask := func(id int, method, params string) string {
		t.Helper()
		if _, err := fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if strings.Contains(lines.Text(), fmt.Sprintf(`"id":%d,`, id)) {
				return lines.Text()
			}
		}
		t.Fatalf("%s: no answer (%v)", method, lines.Err())
		return ""
	}
	init := ask(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if !strings.Contains(init, `"io.modelcontextprotocol/skills":{"directoryRead":true}`) {
		t.Fatalf("initialize does not declare the extension: %s", init)
	}
	_, _ = fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got := ask(2, "skills/list", `{}`); !strings.Contains(got, `"uri":"skill://demo/nested/SKILL.md","frontmatter":{"description":"A sub-skill.","name":"nested"}`) ||
		!strings.Contains(got, `"uri":"skill://demo/SKILL.md"`) || !strings.Contains(got, `"resources":"dynamic"`) {
		t.Fatalf("skills/list over stdio: %s", got)
	}
	if got := ask(3, "skills/get", `{"uri":"skill://nope/SKILL.md"}`); !strings.Contains(got, `"code":-32602`) {
		t.Fatalf("skills/get of an unknown skill over stdio: %s", got)
	}
	if got := ask(4, "resources/directory/read", `{"uri":"skill://demo/nested"}`); !strings.Contains(got, `"uri":"skill://demo/nested/SKILL.md"`) {
		t.Fatalf("resources/directory/read over stdio: %s", got)
	}
}
