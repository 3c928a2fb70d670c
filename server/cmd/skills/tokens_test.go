package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/skills"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// skills --standalone with engine_tokens: a team token connects, publishes
// its own skill and is refused another team's; a bad entry stops the start.
func TestStandaloneScopedTokens(t *testing.T) {
	const acmeTok = "acme-token-0123456789"
	addr := testutil.FreeAddr(t)
	cfg := writeConfig(t, "engine_tokens:\n  - name: acme\n    token: "+acmeTok+"\n    namespaces: [acme]\n")
	cmd := skillsCommand("--standalone", "--config", cfg, "--url", "ws://"+addr, "--data", t.TempDir(), "--mcp-addr", "")
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("skills:\n%s", out.String())
		}
	})
	waitFor(t, out, "skills ready")
	if _, resp, err := websocket.DefaultDialer.Dial("ws://"+addr, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a socket without a token: %v %v; want 401", resp, err)
	}
	acme := iii.RegisterWorker("ws://"+addr, iii.WithName("acme"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		iii.WithHeaders(http.Header{"Authorization": {"Bearer " + acmeTok}}))
	defer acme.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := acme.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	call := func(fn string, payload string) error {
		_, err := acme.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: json.RawMessage(payload)})
		return err
	}
	if err := call("skills::register", `{"id":"acme/crm","skill":"# acme"}`); err != nil {
		t.Fatalf("acme publishing its own skill: %v", err)
	}
	err := call("skills::register", `{"id":"billing/x","skill":"# pwned"}`)
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != "OUT_OF_SCOPE" || !strings.Contains(ie.Message, `outside the namespaces of token "acme"`) {
		t.Fatalf("acme publishing billing/x: %v", err)
	}
	if err := call("state::set", `{"scope":"skills","key":"billing/x","value":{}}`); err == nil || !strings.Contains(err.Error(), "cannot call state::set") {
		t.Fatalf("acme writing state: %v", err)
	}

	// The Go publisher with its defaults (private iii-skills:: functions,
	// prompt::<name> handlers, sections under the skill's path) works
	// under the team token.
	pc := iii.RegisterWorker("ws://"+addr, iii.WithName("acme-publisher"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		iii.WithHeaders(http.Header{"Authorization": {"Bearer " + acmeTok}}))
	defer pc.Close()
	pub := skills.NewPublisher(pc)
	if err := pub.Skill("acme/orders", "# acme orders\n\n- [health](iii://fn/acme/orders/health)\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Section("acme/orders/health", func(context.Context) (any, error) { return skills.Content("all good"), nil }); err != nil {
		t.Fatal(err)
	}
	type noArgs struct{}
	if _, err := skills.Prompt(pub, "acme-review", "Review an order", func(context.Context, noArgs) (skills.PromptResult, error) {
		return skills.Text("review"), nil
	}); err != nil {
		t.Fatal(err)
	}
	unsubscribe, err := pub.OnSkillChange(func(context.Context, skills.SkillChange) {})
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	if err := pub.Start(ctx); err != nil {
		t.Fatalf("the Go publisher under a scoped token: %v", err)
	}
	section, err := acme.Trigger(ctx, iii.TriggerRequest{FunctionID: "skill::fetch", Data: json.RawMessage(`{"uri":"iii://fn/acme/orders/health"}`)})
	if err != nil || !strings.Contains(string(section), "all good") {
		t.Fatalf("the published section: %s %v", section, err)
	}
	if logs := out.String(); strings.Contains(logs, "registerfunction refused") || strings.Contains(logs, "registertrigger refused") ||
		strings.Contains(logs, "registertriggertype refused") {
		t.Fatalf("the engine refused something of the scoped publisher:\n%s", out.String())
	}
	stopSkills(t, cmd)

	bad := writeConfig(t, "engine_tokens:\n  - name: acme\n    token: short\n    namespaces: [acme]\n")
	c := skillsCommand("--standalone", "--config", bad, "--url", "ws://"+testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", "")
	msg, err := c.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(msg), "at least 16 characters") {
		t.Fatalf("a bad engine_tokens entry: %v\n%s", err, msg)
	}
}
