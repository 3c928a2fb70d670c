package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/kv"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/worker"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	resourcesChanged = "notifications/resources/list_changed"
	resourceUpdated  = "notifications/resources/updated"
	promptsChanged   = "notifications/prompts/list_changed"
	toolsChanged     = "notifications/tools/list_changed"
)

// TestNotifications: registry changes made by another worker reach MCP
// clients of both protocol revisions, over HTTP and in memory.
func TestNotifications(t *testing.T) {
	for _, transport := range []string{"http", "memory"} {
		for _, v := range []string{v2026, v2025} {
			t.Run(transport+"/"+v, func(t *testing.T) {
				s := newStack(t)
				s.seed()
				s.startMCP(skillsmcp.Options{})
				n := &notes{}
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("notifications received: %s", n.dump())
					}
				})
				var cs *sdk.ClientSession
				if transport == "http" {
					cs = s.connectClient(&sdk.StreamableClientTransport{Endpoint: s.serveHTTP(skillsmcp.HTTPOptions{})}, v, n)
				} else {
					cs = s.connectInMemory(v, n)
				}
				ctx := context.Background()
				for _, uri := range []string{"iii://fresh", "iii://skills"} {
					if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
						t.Fatalf("subscribe %s: %v", uri, err)
					}
				}

				s.registerSkill("fresh", "# Fresh\n")
				testutil.Eventually(t, time.Second, "resources/list_changed after skills::register", func() bool { return n.count(resourcesChanged) > 0 })
				// A 2026-07-28 go-sdk client's Subscribe returns before the
				// server has its subscriptions/listen stream, so a change may
				// precede the subscription: register again until it is live.
				testutil.Eventually(t, 5*time.Second, "resources/updated for iii://fresh and iii://skills", func() bool {
					if n.has(resourceUpdated, "iii://fresh") && n.has(resourceUpdated, "iii://skills") {
						return true
					}
					s.registerSkill("fresh", "# Fresh\n")
					time.Sleep(100 * time.Millisecond)
					return n.has(resourceUpdated, "iii://fresh") && n.has(resourceUpdated, "iii://skills")
				})
				res, err := cs.ListResources(ctx, nil)
				if err != nil || !strings.Contains(mustJSON(res), "iii://fresh") {
					t.Fatalf("list after register: %v %s", err, mustJSON(res))
				}

				// Re-registering an identical skill is still a change event.
				before := n.count(resourcesChanged)
				s.registerSkill("fresh", "# Fresh\n")
				testutil.Eventually(t, time.Second, "list_changed after re-registration", func() bool { return n.count(resourcesChanged) > before })

				before = n.count(resourcesChanged)
				s.trigger("skills::unregister", map[string]string{"id": "fresh"})
				testutil.Eventually(t, time.Second, "list_changed after skills::unregister", func() bool { return n.count(resourcesChanged) > before })

				s.trigger("prompts::register", map[string]any{"name": "later", "description": "d", "function_id": "greet::render"})
				testutil.Eventually(t, time.Second, "prompts/list_changed after prompts::register", func() bool { return n.count(promptsChanged) > 0 })
				before = n.count(promptsChanged)
				s.trigger("prompts::unregister", map[string]any{"name": "later"})
				testutil.Eventually(t, time.Second, "prompts/list_changed after prompts::unregister", func() bool { return n.count(promptsChanged) > before })

				s.function("late::tool", func(context.Context, json.RawMessage) (any, error) { return "ok", nil }, iii.RegisterFunctionOptions{Metadata: readOnlyMeta})
				testutil.Eventually(t, 2*time.Second, "tools/list_changed after a new function", func() bool { return n.count(toolsChanged) > 0 })
				tools, err := cs.ListTools(ctx, nil)
				if err != nil || !strings.Contains(mustJSON(tools), "late__tool") {
					t.Fatalf("tools after registration: %v", err)
				}
			})
		}
	}
}

// TestRemovedFunction: a function that goes away is a tools/list_changed
// and leaves the listing.
func TestRemovedFunction(t *testing.T) {
	s := newStack(t)
	s.seed()
	s.startMCP(skillsmcp.Options{})
	n := &notes{}
	cs := s.connectInMemory(v2025, n)
	ref, err := s.pub.RegisterFunction("gone::soon", func(context.Context, json.RawMessage) (any, error) { return "x", nil },
		iii.RegisterFunctionOptions{Metadata: readOnlyMeta})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Second, "new tool listed", func() bool {
		tools, err := cs.ListTools(context.Background(), nil)
		return err == nil && strings.Contains(mustJSON(tools), "gone__soon")
	})
	before := n.count(toolsChanged)
	if err := ref.Unregister(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Second, "tools/list_changed after a removed function", func() bool { return n.count(toolsChanged) > before })
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || strings.Contains(mustJSON(tools), "gone__soon") {
		t.Fatalf("removed tool still listed: %v", err)
	}
}

func TestHTTPSecurity(t *testing.T) {
	s := newStack(t)
	s.startMCP(skillsmcp.Options{})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{Token: "s3cret"})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	post := func(headers map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"not bearer", map[string]string{"Authorization": "Basic s3cret"}, http.StatusUnauthorized},
		{"token", map[string]string{"Authorization": "Bearer s3cret"}, http.StatusOK},
		{"foreign origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"null origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "null"}, http.StatusForbidden},
		{"loopback origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://localhost:5173"}, http.StatusOK},
		{"2026 without token", map[string]string{"Mcp-Protocol-Version": v2026}, http.StatusUnauthorized},
		{"rebinding host", map[string]string{"Authorization": "Bearer s3cret", "Host": "evil.example"}, http.StatusForbidden},
	} {
		if c.name == "rebinding host" {
			req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
			req.Host = "evil.example"
			req.Header.Set("Authorization", "Bearer s3cret")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
			}
			continue
		}
		if got := post(c.headers); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}

	// The go-sdk client works with the token, for both revisions.
	for _, v := range []string{v2026, v2025} {
		cs := s.connectClient(&sdk.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{token: "s3cret", next: http.DefaultTransport}}}, v, nil)
		if _, err := cs.ListResources(context.Background(), nil); err != nil {
			t.Fatalf("%s with token: %v", v, err)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLateRegistry: an MCP server started before the registry (same
// engine) serves it, and notifies its changes, once it is up.
func TestLateRegistry(t *testing.T) {
	ctx, eng := startEngine(t)
	s := &stack{t: t, ctx: ctx, url: eng.URL()}
	s.startMCP(skillsmcp.Options{})
	n := &notes{}
	cs := s.connectInMemory(v2025, n)
	if _, err := cs.ListResources(ctx, nil); rpcCode(err) != -32603 || !strings.Contains(err.Error(), "skills registry unavailable") {
		t.Fatalf("resources/list without a registry: %v", err)
	}

	regCli := iii.RegisterWorker(s.url, iii.WithName(worker.Name), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = regCli.Close() })
	reg := core.New(regCli, core.DefaultConfig(), core.Options{Logger: quiet(), State: kv.III(regCli, 10*time.Second)})
	t.Cleanup(reg.Close)
	w := worker.New(regCli, reg, quiet())
	if err := w.Register(); err != nil {
		t.Fatal(err)
	}
	connect(t, regCli)
	reg.Start(ctx)
	s.pub = iii.RegisterWorker(s.url, iii.WithName("publisher"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = s.pub.Close() })
	connect(t, s.pub)

	testutil.Eventually(t, 5*time.Second, "the registry's index listed", func() bool {
		res, err := cs.ListResources(ctx, nil)
		return err == nil && len(res.Resources) == 1 && res.Resources[0].URI == "iii://skills"
	})
	// The on-change binding made before the registry existed reaches it.
	testutil.Eventually(t, 5*time.Second, "resources/list_changed after the registry came up", func() bool {
		before := n.count(resourcesChanged)
		s.registerSkill("late", "# Late\n")
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if n.count(resourcesChanged) > before {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	})
}
