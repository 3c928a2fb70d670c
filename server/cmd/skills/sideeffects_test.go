package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTools connects the official go-sdk client to endpoint and returns
// its session and the tool names it lists.
func mcpTools(t *testing.T, endpoint string) (*sdk.ClientSession, map[string]bool) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "cmd-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	names := map[string]bool{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tl.Name] = true
	}
	return cs, names
}

// TestMCPAllowSideEffectsFlagAndConfig: `skills --standalone` withholds the
// download tool from MCP unless --mcp-allow-side-effects or the config's
// mcp.allow_side_effects says otherwise; `skills mcp` has the same switch
// (--mcp-allow-side-effects, or its --config), and download_hosts from the
// config reaches the download.
func TestMCPAllowSideEffectsFlagAndConfig(t *testing.T) {
	folder := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  allow_side_effects: true\ndownload_hosts: [git.example]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const download = "directory__skills__download"
	start := func(extra ...string) (engineURL, endpoint string) {
		httpAddr, engineAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
		_, logs := startSkills(t, append([]string{"--standalone", "--url", "ws://" + engineAddr, "--data", t.TempDir(),
			"--mcp-addr", httpAddr, "--skills-folder", folder}, extra...)...)
		waitListening(t, httpAddr, logs)
		return "ws://" + engineAddr, "http://" + httpAddr + "/mcp"
	}

	engineURL, endpoint := start()
	cs, tools := mcpTools(t, endpoint)
	if tools[download] || !tools["directory__skills__list"] {
		t.Fatalf("default tools: %v", tools)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: download, Arguments: map[string]any{"worker": "w"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "--mcp-allow-side-effects (or mcp.allow_side_effects: true in config.yaml)") {
		t.Fatalf("default download call: %v %+v", err, res)
	}

	// `skills mcp` against the same engine: withheld, then allowed by flag
	// and by config.
	for _, c := range []struct {
		args  []string
		allow bool
	}{{nil, false}, {[]string{"--mcp-allow-side-effects"}, true}, {[]string{"--config", cfg}, true}} {
		addr := testutil.FreeAddr(t)
		cmd := skillsCommand(append([]string{"mcp", "--http-addr", addr, "--url", engineURL, "--config", filepath.Join(t.TempDir(), "none.yaml")}, c.args...)...)
		logs := &testutil.Buffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitListening(t, addr, logs)
		if _, tools := mcpTools(t, "http://"+addr+"/mcp"); tools[download] != c.allow {
			t.Errorf("skills mcp %v: download listed = %v", c.args, tools[download])
		}
	}

	for _, extra := range [][]string{{"--mcp-allow-side-effects"}, {"--config", cfg}} {
		_, endpoint := start(extra...)
		cs, tools := mcpTools(t, endpoint)
		if !tools[download] {
			t.Fatalf("%v: download not listed: %v", extra, tools)
		}
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: download,
			Arguments: map[string]any{"repo": "https://127.0.0.1:1/r.git", "skill": "x"}})
		want := "downloads are off: download_hosts"
		if extra[0] == "--config" {
			want = "download host 127.0.0.1:1 is not allowed: add it to download_hosts in config.yaml (allowed: git.example)"
		}
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, want) {
			t.Fatalf("%v: download call: %v %+v", extra, err, res)
		}
	}
}
