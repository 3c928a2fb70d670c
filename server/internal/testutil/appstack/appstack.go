// Package appstack starts the whole skills server for a test the way
// `skills --standalone` runs it: app.Start on free loopback ports with its
// own data folder. Tests of packages that app assembles import it from an
// external test package (package mcp_test, directory_test …); an internal
// one would be an import cycle, and so would importing it from testutil.
package appstack

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/iii-skills/skills/server/internal/app"
)

// Config is a standalone server on free loopback ports, its data in a
// folder of the test, no HTTP listener and its log discarded (set Logger
// to see it).
func Config(tb testing.TB) app.Config {
	tb.Helper()
	cfg := app.DefaultConfig()
	cfg.Engine.Standalone, cfg.Engine.URL, cfg.Engine.DataDir = true, "ws://127.0.0.1:0", tb.TempDir()
	cfg.HTTP.Addr, cfg.Logger = "", slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

// Start starts the server cfg describes (usually Config changed by the
// test) and closes it when the test ends. It fails the test when Start
// fails, and when cfg.HTTP.Addr asked for a listener that did not start
// (app.Start only logs that).
func Start(tb testing.TB, cfg app.Config) *app.Server {
	tb.Helper()
	srv, err := app.Start(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("start the server: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	if cfg.HTTP.Addr != "" && srv.HTTPURL == "" {
		tb.Fatalf("the server's HTTP listener on %s did not start (see its log)", cfg.HTTP.Addr)
	}
	return srv
}
