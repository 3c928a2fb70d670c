package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
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
