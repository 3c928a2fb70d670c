package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal(errors.New("no go.work above the working directory"))
		}
		dir = parent
	}
}

// startServer builds and starts `skills --standalone` and returns its URL.
func startServer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SKILLS_BIN")
	if bin == "" {
		root := repoRoot(t)
		bin = filepath.Join(t.TempDir(), "skills")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/iii-skills/skills/server/cmd/skills")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build of the skills server: %v\n%s", err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("ws://%s", l.Addr())
	l.Close()
	srv := exec.Command(bin, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "",
		"--config", filepath.Join(t.TempDir(), "absent.yaml"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
	})
	return url
}

func TestResendExample(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, url, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	c := iii.RegisterWorker(url, iii.WithName("resend-example-test"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer c.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	if err := c.Connect(cctx); err != nil {
		t.Fatal(err)
	}
	trigger := func(fid string, payload any) (json.RawMessage, error) {
		if payload == nil {
			payload = struct{}{} // sent as {}, like an absent payload
		}
		data, err := json.Marshal(payload)
		if err != nil {
			return nil, err
		}
		return c.Trigger(cctx, iii.TriggerRequest{FunctionID: fid, Data: data, Timeout: 5 * time.Second})
	}
	var list struct {
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	for {
		res, err := trigger("skills::list", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(res, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Skills) == 4 {
			break
		}
		select {
		case <-cctx.Done():
			t.Fatalf("skills never registered: %s", res)
		case <-time.After(50 * time.Millisecond):
		}
	}
	var ids []string
	for _, s := range list.Skills {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "resend-go,resend-go/email,resend-go/email/send,resend-go/email/track" {
		t.Fatalf("ids %v", ids)
	}

	res, err := trigger("skill::fetch", map[string]any{"uris": []string{"iii://resend-go", "iii://fn/resend-go/health"}})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	_ = json.Unmarshal(res, &text)
	if !strings.Contains(text, "Live status check") || !strings.Contains(text, "# Resend health\n\nAPI: ok.") {
		t.Fatalf("fetch: %s", text)
	}

	for {
		res, err = trigger("prompts::mcp-get", map[string]any{"name": "send-email-go",
			"arguments": map[string]any{"to": "ada@example.com", "subject": "Hello"}})
		if err == nil {
			break
		}
		select {
		case <-cctx.Done():
			t.Fatalf("prompt never registered: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !strings.Contains(string(res), `Compose an email to ada@example.com with the subject \"Hello\". Be concise and friendly.`) {
		t.Fatalf("mcp-get: %s", res)
	}
	_, err = trigger("prompts::mcp-get", map[string]any{"name": "send-email-go", "arguments": map[string]any{"to": "x"}})
	if err == nil || !strings.Contains(err.Error(), `prompt "send-email-go": missing required argument "subject"`) {
		t.Fatalf("missing argument: %v", err)
	}
}
