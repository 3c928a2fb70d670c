package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFolderPromptsAreMCPPrompts: the prompts of a real skills folder are
// served by `skills --standalone`'s MCP endpoint on both revisions:
// listed with origin folder, rendered as their body, followed live when
// the file changes or goes, and shadowed by a registered prompt of the
// same name.
func TestFolderPromptsAreMCPPrompts(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "team", "prompts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "review-pr.md")
	write := func(desc, body string) {
		if err := os.WriteFile(file, []byte("---\ndescription: "+desc+"\n---\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Review a pull request", "Review the pull request: check the tests first.\n")
	cfg := appstack.Config(t)
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Logger = quiet()
	cfg.Directory.SkillsFolder = []string{root}
	srv := appstack.Start(t, cfg)
	ctx := context.Background()

	for _, v := range []string{v2026, v2025} {
		t.Run(v, func(t *testing.T) {
			c := sdk.NewClient(&sdk.Implementation{Name: "go-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.HTTPURL + "/mcp"}, &sdk.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			list, err := cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var found *sdk.Prompt
			for _, p := range list.Prompts {
				if p.Name == "review-pr" {
					found = p
				}
			}
			if found == nil || found.Description != "Review a pull request" || len(found.Arguments) != 0 || found.Meta["io.iii-skills/origin"] != "folder" {
				t.Fatalf("prompts/list: %+v", list.Prompts)
			}
			got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review-pr"})
			if err != nil || len(got.Messages) != 1 || got.Messages[0].Role != "user" || text(got.Messages[0].Content) != "Review the pull request: check the tests first.\n" {
				t.Fatalf("prompts/get: %v %+v", err, got)
			}
		})
	}

	// Live: a 2025-11-25 session hears list_changed when the file changes,
	// and reads the new text; a removed file is no longer a prompt.
	n := &notes{}
	c := sdk.NewClient(&sdk.Implementation{Name: "go-test", Version: "1"}, n.clientOptions())
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.HTTPURL + "/mcp"}, &sdk.ClientSessionOptions{ProtocolVersion: v2025})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	write("Review a pull request, carefully", "Read every line.\n")
	testutil.Eventually(t, 5*time.Second, "prompts/list_changed and the new body after the file changed", func() bool {
		got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review-pr"})
		return n.count(promptsChanged) > 0 && err == nil && text(got.Messages[0].Content) == "Read every line.\n" &&
			got.Description == "Review a pull request, carefully"
	})

	// A registered prompt of the same name wins; unregistered, the folder's is back.
	pub := iii.RegisterWorker(srv.EngineURL, iii.WithName("publisher"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = pub.Close() })
	connect(t, pub)
	if _, err := pub.RegisterFunction("team::review", func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"content": "registered review"}, nil
	}, iii.RegisterFunctionOptions{}); err != nil {
		t.Fatal(err)
	}
	trigger := func(fn string, payload any) {
		t.Helper()
		data, _ := json.Marshal(payload)
		if _, err := pub.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second}); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
	}
	trigger("prompts::register", map[string]any{"name": "review-pr", "description": "Registered review", "function_id": "team::review"})
	testutil.Eventually(t, 5*time.Second, "the registered prompt shadows the folder's", func() bool {
		got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review-pr"})
		return err == nil && strings.Contains(text(got.Messages[0].Content), "registered review")
	})
	trigger("prompts::unregister", map[string]any{"name": "review-pr"})
	testutil.Eventually(t, 5*time.Second, "the folder prompt is served again", func() bool {
		got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review-pr"})
		return err == nil && text(got.Messages[0].Content) == "Read every line.\n"
	})

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "a removed folder prompt leaves prompts/list", func() bool {
		list, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			return false
		}
		for _, p := range list.Prompts {
			if p.Name == "review-pr" {
				return false
			}
		}
		return true
	})
	if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review-pr"}); rpcCode(err) != -32602 {
		t.Fatalf("prompts/get of a removed folder prompt: %v", err)
	}
}
