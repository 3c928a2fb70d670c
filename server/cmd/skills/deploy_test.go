package main

// Tests of what an operator deploying the binary relies on: the Host names
// the listeners answer to (--mcp-allow-host, --engine-allow-host and their
// config keys) and the /healthz and /readyz probes, over real sockets
// against real processes.

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// do sends one request with the given Host and returns status and body.
func do(t *testing.T, method, url, host, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls url until it answers status with body (a condition, not a
// timing assertion: the deadline only bounds a broken process).
func waitForStatus(t *testing.T, url string, status int, body string, logs *testutil.Buffer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var gotStatus int
	var gotBody string
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			gotStatus, gotBody = resp.StatusCode, string(b)
			if gotStatus == status && gotBody == body {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never answered %d %q (last %d %q); logs:\n%s", url, status, body, gotStatus, gotBody, logs.String())
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Behind a reverse proxy the listener sees the public name in Host: with
// --mcp-allow-host it serves /mcp and /rpc under that name (and wildcard
// subdomains), other names are refused with a 403 that names the flag.
func TestAllowHostFlag(t *testing.T) {
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	_, logs := startSkills(t, "--standalone", "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", httpAddr,
		"--mcp-allow-host", "skills.example.com, *.skills.test", "--engine-allow-host", "iii.example.com")
	waitListening(t, httpAddr, logs)
	base := "http://" + httpAddr
	for _, host := range []string{"skills.example.com", "skills.example.com:443", "eu.skills.test", httpAddr, "localhost"} {
		if status, body := do(t, http.MethodPost, base+"/mcp", host, mcpInitialize); status != http.StatusOK {
			t.Errorf("/mcp with Host %s: %d %s", host, status, body)
		}
		if status, body := do(t, http.MethodPost, base+"/rpc", host, `{"jsonrpc":"2.0","id":1,"method":"list_skills","params":{}}`); status != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Errorf("/rpc with Host %s: %d %s", host, status, body)
		}
	}
	for _, path := range []string{"/mcp", "/rpc"} {
		status, body := do(t, http.MethodPost, base+path, "evil.example", mcpInitialize)
		want := `Forbidden: Host "evil.example" is not a name this server answers to (expected localhost, 127.0.0.1 or the listen address, or a name given with --mcp-allow-host (config mcp_allow_host))`
		if status != http.StatusForbidden || strings.TrimSpace(body) != want {
			t.Errorf("%s with a foreign Host: %d %q, want 403 %q", path, status, body, want)
		}
	}
	// The engine socket takes its own list.
	engineBase := "ws://" + engineAddr
	if got := dialStatusT(t, engineBase, "iii.example.com"); got != http.StatusSwitchingProtocols {
		t.Errorf("engine socket with Host iii.example.com: %d", got)
	}
	if got := dialStatusT(t, engineBase, "skills.example.com"); got != http.StatusForbidden {
		t.Errorf("engine socket with the HTTP listener's name: %d, want 403", got)
	}
}

// The config keys do what the flags do; a flag replaces its key.
func TestAllowHostConfigKeys(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp_allow_host: [skills.example.com]\nengine_allow_host: iii.example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	cmd := skillsCommand("--config", cfg, "--standalone", "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", httpAddr)
	logs := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitListening(t, httpAddr, logs)
	if status, body := do(t, http.MethodPost, "http://"+httpAddr+"/mcp", "skills.example.com", mcpInitialize); status != http.StatusOK {
		t.Errorf("/mcp under the configured name: %d %s", status, body)
	}
	if got := dialStatusT(t, "ws://"+engineAddr, "iii.example.com"); got != http.StatusSwitchingProtocols {
		t.Errorf("engine socket under the configured name: %d", got)
	}
}

// A host list that is not host names stops the start with exit code 2 and
// says what was expected.
func TestAllowHostRefusesURLs(t *testing.T) {
	for _, args := range [][]string{
		{"--mcp-allow-host", "https://skills.example.com"},
		{"--engine-allow-host", "iii.example.com/ws"},
		{"mcp", "--http-addr", "127.0.0.1:0", "--mcp-allow-host", "user@host"},
	} {
		cmd := skillsCommand(append([]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, args...)...)
		if args[0] == "mcp" {
			cmd = skillsCommand(append(args, "--config", filepath.Join(t.TempDir(), "none.yaml"))...)
		}
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
			t.Errorf("%v: exit %d (%v), want 2; output %s", args, code, err, out)
		}
		if !strings.Contains(string(out), "expected a host name such as skills.example.com") {
			t.Errorf("%v: output %q", args, out)
		}
	}
}

// /healthz and /readyz answer without the token and under any Host (a
// load balancer probes by IP); /readyz follows the registry's connection
// to its engine: 503 with the reason while the engine is gone.
func TestHealthAndReadiness(t *testing.T) {
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	engine, engLogs := startSkills(t, "--standalone", "--engine-only", "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", "")
	waitListening(t, engineAddr, engLogs)
	_, logs := startSkills(t, "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", httpAddr, "--mcp-token", "s3cret")
	waitListening(t, httpAddr, logs)
	base := "http://" + httpAddr
	waitForStatus(t, base+"/readyz", http.StatusOK, "ready\n", logs)
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := do(t, http.MethodGet, base+path, "10.0.0.7:49135", ""); status != http.StatusOK {
			t.Errorf("%s probed by IP without a token: %d %q", path, status, body)
		}
	}
	// The door rules still hold for the endpoints themselves.
	if status, _ := do(t, http.MethodPost, base+"/mcp", "", mcpInitialize); status != http.StatusUnauthorized {
		t.Errorf("/mcp without the token: %d, want 401", status)
	}
	// The engine goes away: the registry stays alive but is not ready.
	_ = engine.Process.Kill()
	_ = engine.Wait()
	waitForStatus(t, base+"/readyz", http.StatusServiceUnavailable, "not ready: not connected to the iii engine\n", logs)
	if status, body := do(t, http.MethodGet, base+"/healthz", "", ""); status != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz without the engine: %d %q", status, body)
	}
}

// dialStatusT opens a WebSocket upgrade on wsURL with the given Host and
// returns the HTTP status (101 when the engine let it in).
func dialStatusT(t *testing.T, wsURL, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.Replace(wsURL, "ws://", "http://", 1)+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// A config whose host keys do not parse stops the start with exit code 2
// naming the key and its line (it used to be reported and
// ignored, the registry answering loopback names only).
func TestMalformedHostConfigIsRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp_allow_host: {skills.example.com: yes}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := skillsCommand("--config", cfg, "--standalone", "--url", "ws://"+testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", testutil.FreeAddr(t))
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
		t.Fatalf("exit %d (%v), want 2; output %s", code, err, out)
	}
	if !strings.Contains(string(out), cfg+": line 1: expected a host name or a list of host names") {
		t.Errorf("the error does not name the file, line and what was expected: %s", out)
	}
}

// runUntilExit runs `skills ARGS…` to its end (killed after 90 s: a broken
// start that keeps running fails the test instead of hanging it) and
// returns its exit code and output.
func runUntilExit(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := skillsCommand(append([]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, args...)...)
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	_ = cmd.Wait()
	return cmd.ProcessState.ExitCode(), out.String()
}

// A port the server cannot listen on stops start-up, whether it is the
// HTTP listener's or the engine's: exit 1 before the registry serves, with
// an error that names the address and the setting to change. (A taken
// HTTP port used to leave a registry running without /mcp, /rpc and its
// web page, with one WARN line.)
func TestTakenPortStopsStartup(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	for _, c := range []struct {
		name, engine, http, want string
	}{
		{"HTTP port", testutil.FreeAddr(t), busy, "the HTTP endpoints (/mcp, /rpc, the web page) cannot listen on " + busy +
			": bind: address already in use; choose another address with --http-addr / --mcp-addr (config http_addr; make run: MCP_ADDR=host:port)"},
		{"engine port", busy, testutil.FreeAddr(t), "the iii engine cannot listen on " + busy +
			": bind: address already in use; choose another address with --url (config url; make run: ADDR=host:port)"},
	} {
		rc, out := runUntilExit(t, "--standalone", "--url", "ws://"+c.engine, "--data", t.TempDir(), "--mcp-addr", c.http)
		if rc != 1 || !strings.Contains(out, c.want) || strings.Contains(out, "skills ready") {
			t.Errorf("%s taken: exit %d, want 1 before the registry serves, with %q; output:\n%s", c.name, rc, c.want, out)
		}
	}
}

// --mcp-allow-host (or --public-url) naming a host beyond loopback without
// a token warns at start: a proxy forwarding that name exposes /mcp, /rpc
// and the web page as much as a public address would. Loopback names, or a
// token, do not warn.
func TestPublicHostWithoutTokenWarns(t *testing.T) {
	const warning = "SECURITY: the HTTP endpoints answer to "
	for _, c := range []struct {
		args []string
		want string // "" = no warning
	}{
		{[]string{"--mcp-allow-host", "skills.example.com,localhost:8080"}, warning + "skills.example.com (--mcp-allow-host, --public-url) without a token"},
		{[]string{"--public-url", "https://skills.example.com"}, warning + "skills.example.com (--mcp-allow-host, --public-url) without a token"},
		{[]string{"--mcp-allow-host", "localhost,127.0.0.1:8080"}, ""},
		{[]string{"--mcp-allow-host", "skills.example.com", "--mcp-token", "s3cret"}, ""},
	} {
		httpAddr := testutil.FreeAddr(t)
		cmd, logs := startSkills(t, append([]string{"--standalone", "--url", "ws://" + testutil.FreeAddr(t), "--data", t.TempDir(),
			"--mcp-addr", httpAddr}, c.args...)...)
		waitForStatus(t, "http://"+httpAddr+"/readyz", http.StatusOK, "ready\n", logs)
		// Stopped, so that every line of the start is written.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		out := logs.String()
		if c.want != "" && !strings.Contains(out, c.want) || c.want == "" && strings.Contains(out, "SECURITY") {
			t.Errorf("%v: want warning %q; output:\n%s", c.args, c.want, out)
		}
	}
}
