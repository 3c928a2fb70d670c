package main

// Binary-level tests of the Skills Protocol surface: the skills binary is
// built once and run as real processes on random ports.

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// waitListening waits until addr accepts connections (readiness, not a
// timing assertion: the deadline only bounds a broken start).
func waitListening(t testing.TB, addr string, logs *testutil.Buffer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens at %s; logs:\n%s", addr, logs.String())
}

// rpcCall posts one JSON-RPC request and returns the HTTP status and body.
func rpcCall(t *testing.T, url, method string, params any) (int, map[string]json.RawMessage) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]json.RawMessage
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: not JSON: %s", method, raw)
		}
	}
	return resp.StatusCode, out
}

func getBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sameJSON compares two JSON documents structurally.
func sameJSON(t *testing.T, what string, got []byte, want any) {
	t.Helper()
	wb, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", what, err, got)
	}
	_ = json.Unmarshal(wb, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s differs:\n got %s\nwant %s", what, got, wb)
	}
}

// In worker mode (no --standalone) the binary serves /rpc against an
// external engine: here `skills --standalone --engine-only`. Runs, blobs
// and the catalog go through that engine.
func TestRPCWorkerModeAgainstExternalEngine(t *testing.T) {
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	_, engLogs := startSkills(t, "--standalone", "--engine-only", "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", "")
	waitListening(t, engineAddr, engLogs)
	bundles, err := filepath.Abs("../../../examples/skills-protocol")
	if err != nil {
		t.Fatal(err)
	}
	_, logs := startSkills(t, "--url", "ws://"+engineAddr, "--data", t.TempDir(), "--mcp-addr", httpAddr, "--sp-bundles", bundles)
	waitListening(t, httpAddr, logs)
	url := "http://" + httpAddr + "/rpc"

	status, resp := rpcCall(t, url, "list_skills", map[string]any{})
	if status != http.StatusOK || resp["error"] != nil {
		t.Fatalf("list_skills: %d %s", status, resp["error"])
	}
	if !strings.Contains(string(resp["result"]), `"demo.text.stats"`) {
		t.Fatalf("list_skills misses the example bundle: %s", resp["result"])
	}
	// A blob lives in the external engine's state.
	status, resp = rpcCall(t, url, "create_blob", map[string]any{"content": "one two three", "kind": "text/plain"})
	if status != http.StatusOK || resp["error"] != nil {
		t.Fatalf("create_blob: %d %s", status, resp["error"])
	}
	var blob struct {
		BlobID string `json:"blob_id"`
	}
	if err := json.Unmarshal(resp["result"], &blob); err != nil || blob.BlobID == "" {
		t.Fatalf("create_blob result: %s", resp["result"])
	}
	status, resp = rpcCall(t, url, "run_code", map[string]any{"language": "python",
		"code": "def main(args):\n    return 6 * 7\n"})
	if status != http.StatusOK || resp["error"] != nil {
		t.Fatalf("run_code: %d %s", status, resp["error"])
	}
	var run struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Error  any             `json:"error"`
	}
	if err := json.Unmarshal(resp["result"], &run); err != nil || run.Status != "completed" || string(run.Output) != "42" {
		t.Fatalf("run_code in worker mode: %s", resp["result"])
	}
}

// --rpc-path moves the endpoint (and its /tools companion); "" disables it.
func TestRPCPathFlag(t *testing.T) {
	t.Run("moved", func(t *testing.T) {
		httpAddr := testutil.FreeAddr(t)
		_, logs := startSkills(t, "--standalone", "--url", "ws://"+testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", httpAddr, "--rpc-path", "/x")
		waitListening(t, httpAddr, logs)
		status, resp := rpcCall(t, "http://"+httpAddr+"/x", "list_skills", map[string]any{})
		if status != http.StatusOK || resp["result"] == nil {
			t.Fatalf("POST /x: %d %v", status, resp)
		}
		if status, _ := rpcCall(t, "http://"+httpAddr+"/rpc", "list_skills", map[string]any{}); status != http.StatusNotFound {
			t.Fatalf("POST /rpc with --rpc-path /x: %d, want 404", status)
		}
		if status, body := getBody(t, "http://"+httpAddr+"/x/tools"); status != http.StatusOK {
			t.Fatalf("GET /x/tools: %d %s", status, body)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		httpAddr := testutil.FreeAddr(t)
		_, logs := startSkills(t, "--standalone", "--url", "ws://"+testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", httpAddr, "--rpc-path", "")
		waitListening(t, httpAddr, logs)
		if status, _ := rpcCall(t, "http://"+httpAddr+"/rpc", "list_skills", map[string]any{}); status != http.StatusNotFound {
			t.Fatalf("POST /rpc with --rpc-path \"\": %d, want 404", status)
		}
		if status, _ := getBody(t, "http://"+httpAddr+"/rpc/tools"); status != http.StatusNotFound {
			t.Fatalf("GET /rpc/tools with --rpc-path \"\": %d, want 404", status)
		}
	})
}

// `skills sp-tools --format F` and GET /rpc/tools?format=F print the same
// definitions as skillsprotocol.ToolDefinitions(F).
func TestToolDefinitionsFromBinaryAndHTTP(t *testing.T) {
	httpAddr := testutil.FreeAddr(t)
	_, logs := startSkills(t, "--standalone", "--url", "ws://"+testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", httpAddr)
	for _, format := range []string{"schema", "openai", "anthropic"} {
		want, err := skillsprotocol.ToolDefinitions(format)
		if err != nil {
			t.Fatal(err)
		}
		out, err := skillsCommand("sp-tools", "--format", format).Output()
		if err != nil {
			t.Fatalf("sp-tools --format %s: %v", format, err)
		}
		sameJSON(t, "sp-tools --format "+format, out, want)
		var list []json.RawMessage
		if err := json.Unmarshal(out, &list); err != nil || len(list) != 8 {
			t.Fatalf("sp-tools --format %s: %d tools, want 8", format, len(list))
		}
	}
	var stderr bytes.Buffer
	cmd := skillsCommand("sp-tools", "--format", "yaml")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 ||
		!strings.Contains(stderr.String(), `unknown tool format "yaml" (expected schema, openai or anthropic)`) {
		t.Fatalf("sp-tools --format yaml: %v, stderr %q", err, stderr.String())
	}

	waitListening(t, httpAddr, logs)
	for _, format := range []string{"", "schema", "openai", "anthropic"} {
		want, _ := skillsprotocol.ToolDefinitions(format)
		status, body := getBody(t, "http://"+httpAddr+"/rpc/tools?format="+format)
		if status != http.StatusOK {
			t.Fatalf("GET /rpc/tools?format=%s: %d %s", format, status, body)
		}
		sameJSON(t, "GET /rpc/tools?format="+format, body, want)
	}
	if status, body := getBody(t, "http://"+httpAddr+"/rpc/tools?format=yaml"); status != http.StatusBadRequest ||
		!strings.Contains(string(body), `unknown tool format "yaml"`) {
		t.Fatalf("GET /rpc/tools?format=yaml: %d %s", status, body)
	}
}

// The HTTP endpoints refuse a foreign browser Origin, naming the flag that
// admits it, and --mcp-allow-origin does.
func TestHTTPEndpointsAllowOriginFlag(t *testing.T) {
	httpAddr := testutil.FreeAddr(t)
	_, logs := startSkills(t, "--standalone", "--url", "ws://"+testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", httpAddr,
		"--mcp-allow-origin", "https://app.example")
	waitListening(t, httpAddr, logs)
	post := func(origin string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/rpc",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"list_skills","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := post("https://evil.example"); status != http.StatusForbidden || !strings.Contains(body, "--mcp-allow-origin") {
		t.Fatalf("foreign origin: %d %s", status, body)
	}
	if status, body := post("https://app.example"); status != http.StatusOK {
		t.Fatalf("allowed origin: %d %s", status, body)
	}
}
