package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// quiet is a logger for tests that assert nothing about logs.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testConfig is a standalone server on free loopback ports with its own
// data folder and no HTTP listener.
func testConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Engine.Standalone, cfg.Engine.URL, cfg.Engine.DataDir = true, "ws://127.0.0.1:0", t.TempDir()
	cfg.HTTP.Addr, cfg.Logger = "", quiet
	return cfg
}

// startEngineOnly starts the embedded engine alone and returns its URL.
func startEngineOnly(t *testing.T) string {
	t.Helper()
	cfg := testConfig(t)
	cfg.Engine.Only = true
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.EngineURL
}

// Start brings up the whole server on free ports and says where: the
// registry answers on EngineURL, the probes and /mcp on HTTPURL; Close
// stops both.
func TestStartServesTheRegistryAndHTTP(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Directory.SkillsFolder = FolderList{t.TempDir()}
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.EngineURL, "ws://127.0.0.1:") || strings.HasSuffix(srv.EngineURL, ":0") ||
		!strings.HasPrefix(srv.HTTPURL, "http://127.0.0.1:") || strings.HasSuffix(srv.HTTPURL, ":0") {
		t.Fatalf("addresses %q %q", srv.EngineURL, srv.HTTPURL)
	}
	c := iii.RegisterWorker(srv.EngineURL, iii.WithAnonymous(), iii.WithLogger(quiet))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: "skills::register", Data: json.RawMessage(`{"id":"app/x","skill":"# x"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Catalog.Get("app/x"); !ok {
		t.Error("the registered skill is not in the server's catalog")
	}
	resp, err := http.Get(srv.HTTPURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(srv.HTTPURL + "/healthz"); err == nil {
		t.Error("the HTTP listener still answers after Close")
	}
}

// Start refuses what Validate refuses, before it opens anything.
func TestStartValidates(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine.URL = "http://127.0.0.1:0"
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "invalid --url for --standalone") {
		t.Fatalf("Start with a bad --url: %v", err)
	}
}

// Start returns its errors and logs none of them: its caller (main) says
// each once. A taken port, the HTTP listener's or the engine's, is an error
// naming the address and the setting to change, and no ERROR line.
func TestStartReturnsErrorsWithoutLoggingThem(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"HTTP port", func(c *Config) { c.HTTP.Addr = busy }, "cannot listen on " + busy + ": bind: address already in use; choose another address with --http-addr"},
		{"engine port", func(c *Config) { c.Engine.URL = "ws://" + busy }, "the iii engine cannot listen on " + busy},
	} {
		logs := &testutil.Buffer{}
		cfg := testConfig(t)
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		c.edit(&cfg)
		srv, err := Start(context.Background(), cfg)
		if err == nil {
			_ = srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s taken: %v; want an error with %q", c.name, err, c.want)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("%s taken: Start logged an error its caller logs again:\n%s", c.name, logs.String())
		}
	}
}
