package clustertest

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// singleEngineConfig is one real engine with in-memory state: what a
// registry behind upstream's mcp worker needs, without Redis.
func singleEngineConfig(port, dir string) string {
	return `workers:
  - name: iii-worker-manager
    config:
      host: 127.0.0.1
      port: ` + port + `
  - name: iii-state
    config:
      adapter:
        name: kv
        config:
          store_method: in_memory
          file_path: ` + filepath.Join(dir, "state.db") + `
  - name: iii-observability
    config:
      enabled: false
`
}

// MCP bridges in front of our registry on a real engine, driven by the
// official MCP Go client over stdio: each must serve what our registry
// holds, unchanged. "skills-mcp" is our own `skills mcp --stdio`;
// "upstream-iii-mcp" is upstream's mcp worker (v0.5.x still bridges MCP to
// skills::resources-*, prompts::mcp-* and skill::fetch; docs/deploy.md,
// "Behind upstream's mcp worker"), found at $III_MCP_BIN or as iii-mcp on
// PATH; $III_MCP_ARGS replaces its arguments (the engine URL is appended
// as --engine-url unless they name it).
func TestMCPBridgesOnRealEngine(t *testing.T) {
	iiiBin := program(t, "III_BIN", "iii")
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(singleEngineConfig(port, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, "engine", dir, []string{"III_TELEMETRY_ENABLED=false"}, iiiBin, "--no-update-check", "--config", cfg)
	testutil.Eventually(t, 20*time.Second, "the engine listens", func() bool { return listening(addr) })
	n := &node{name: "solo", engineAddr: addr, mcpAddr: testutil.FreeAddr(t), dataDir: filepath.Join(dir, "registry")}
	c := &cluster{t: t, dir: dir, skillsBin: testutil.SkillsBinary(t)}
	c.startRegistry(n)
	n.caller = iii.RegisterWorker(n.url(), iii.WithName("mcp-bridge-test"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.caller.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.caller.Close() })

	body := "# Upstream bridge\n\nServed by our registry through an MCP bridge.\n"
	n.mustCall(t, "skills::register", map[string]string{"id": "bridge-demo", "skill": body}, nil)
	if _, err := n.caller.RegisterFunction("bridgetest::greet", func(_ context.Context, data json.RawMessage) (any, error) {
		var args struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(data, &args)
		return map[string]string{"content": "Greet " + args.Name + " warmly."}, nil
	}); err != nil {
		t.Fatal(err)
	}
	n.mustCall(t, "prompts::register", map[string]any{"name": "bridge-greet", "description": "Greet someone",
		"function_id": "bridgetest::greet",
		"arguments":   []map[string]any{{"name": "name", "description": "who", "required": true}}}, nil)

	t.Run("skills-mcp", func(t *testing.T) {
		checkMCPBridge(t, exec.Command(c.skillsBin, "mcp", "--stdio", "--url", n.url(), "--config", filepath.Join(dir, "none.yaml")), body)
	})
	t.Run("upstream-iii-mcp", func(t *testing.T) {
		mcpBin := upstreamProgram(t, "III_MCP_BIN", "iii-mcp")
		args := strings.Fields(os.Getenv("III_MCP_ARGS"))
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--engine-url") }) {
			args = append(args, "--engine-url", n.url())
		}
		checkMCPBridge(t, exec.Command(mcpBin, args...), body)
	})
}

// checkMCPBridge starts the bridge cmd (MCP over its stdio) and checks it
// serves the skill bridge-demo (body) and the prompt bridge-greet.
func checkMCPBridge(t *testing.T, cmd *exec.Cmd, body string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bridge stderr (tail):\n%s", tail(stderr.String(), 3000))
		}
	})
	client := sdk.NewClient(&sdk.Implementation{Name: "mcp-bridge-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to the bridge over stdio: %v", err)
	}
	defer cs.Close()

	// The bridge reaches our registry through the engine once it has
	// connected: poll the index until it lists the skill.
	testutil.Eventually(t, 20*time.Second, "the bridge's iii://skills lists our skill", func() bool {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://skills"})
		return err == nil && len(res.Contents) > 0 && strings.Contains(res.Contents[0].Text, "iii://bridge-demo")
	})

	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Resources, func(r *sdk.Resource) bool { return r.URI == "iii://bridge-demo" }) {
		t.Fatalf("resources/list lacks iii://bridge-demo: %+v", list.Resources)
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://bridge-demo"})
	if err != nil || len(res.Contents) == 0 || res.Contents[0].Text != body {
		t.Fatalf("resources/read iii://bridge-demo: %+v, %v", res, err)
	}
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) == 0 {
		t.Fatalf("resources/templates/list: %+v, %v", tpl, err)
	}

	fetched, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "skill__fetch", Arguments: map[string]any{"uri": "iii://bridge-demo"}})
	if err != nil {
		t.Fatal(err)
	}
	if fetched.IsError || len(fetched.Content) == 0 {
		t.Fatalf("skill__fetch: %+v", fetched)
	}
	if text, _ := fetched.Content[0].(*sdk.TextContent); text == nil || !strings.Contains(text.Text, "Served by our registry through an MCP bridge.") {
		t.Fatalf("skill__fetch answered %+v", fetched.Content[0])
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(prompts.Prompts, func(p *sdk.Prompt) bool { return p.Name == "bridge-greet" }) {
		t.Fatalf("prompts/list lacks bridge-greet: %+v", prompts.Prompts)
	}
	got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "bridge-greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(got.Messages) == 0 {
		t.Fatalf("prompts/get: %+v, %v", got, err)
	}
	if text, _ := got.Messages[0].Content.(*sdk.TextContent); text == nil || text.Text != "Greet Ada warmly." {
		t.Fatalf("prompts/get answered %+v", got.Messages[0].Content)
	}
}

// upstreamProgram is program for upstream's own programs, which are
// never needed by make test: absent, the test is "not run" even under
// CLUSTER_TESTS_REQUIRED=1.
func upstreamProgram(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("not run: no upstream %s (set %s or put it on PATH)", name, env)
	return ""
}
