package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/app"
)

// startEngine starts an embedded engine alone (no registry) and returns
// its URL.
func startEngine(t *testing.T) string {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.Engine.Standalone, cfg.Engine.Only, cfg.Engine.URL, cfg.Engine.DataDir = true, true, "ws://127.0.0.1:0", t.TempDir()
	cfg.HTTP.Addr, cfg.Logger = "", slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := app.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv.EngineURL
}

// A payload over the kernel's per-argument limit (~128 KiB) goes through
// @FILE or stdin.
func TestTriggerPayloadFromFileAndStdin(t *testing.T) {
	url := startEngine(t)
	big := strings.Repeat("x", 300<<10)
	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(`{"scope":"s","key":"k","value":"`+big+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := runTrigger([]string{"--url", url, "--function-id", "state::set", "--payload", "@" + file}, nil, &out, &errb); rc != 0 {
		t.Fatalf("trigger @file: rc %d, stderr %s", rc, errb.String())
	}
	out.Reset()
	stdin := strings.NewReader(`{"scope":"s","key":"k"}`)
	if rc := runTrigger([]string{"--url", url, "--function-id", "state::get", "--payload", "-"}, stdin, &out, &errb); rc != 0 {
		t.Fatalf("trigger -: rc %d, stderr %s", rc, errb.String())
	}
	if strings.TrimSpace(out.String()) != big {
		t.Fatalf("state::get returned %d bytes, want the %d-byte value", len(strings.TrimSpace(out.String())), len(big))
	}
}

func TestTriggerRefusesBadPayloads(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{"@/nonexistent/p.json", "cannot read /nonexistent/p.json"},
		{"{", "--payload is not valid JSON: { (use @FILE"},
	} {
		var errb bytes.Buffer
		if rc := runTrigger([]string{"--function-id", "skills::list", "--payload", tc.payload}, nil, io.Discard, &errb); rc != 2 {
			t.Fatalf("%q: rc %d, want 2", tc.payload, rc)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("%q: stderr %q, want %q", tc.payload, errb.String(), tc.want)
		}
	}
}

// With nothing at --url, trigger says so at once (one TCP probe) instead of
// retrying until --timeout.
func TestTriggerWithoutEngineSaysNothingListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var errb bytes.Buffer
	rc := runTrigger([]string{"--url", "ws://" + addr, "--function-id", "skills::list", "--timeout", "10m"}, nil, io.Discard, &errb)
	if rc != 1 || !strings.Contains(errb.String(), "nothing listens at ws://"+addr+"; start it with make run") {
		t.Fatalf("rc %d, stderr %q", rc, errb.String())
	}
}

func TestHelpListsEverySubcommand(t *testing.T) {
	var errb bytes.Buffer
	// Help goes to stdout (it used to go to stderr).
	if rc := run([]string{"--help"}, &errb, io.Discard); rc != 0 {
		t.Fatalf("rc %d", rc)
	}
	help := errb.String()
	for _, c := range subcommands {
		if !strings.Contains(help, "\n  skills "+c.name+" ") {
			t.Errorf("--help omits the %q subcommand:\n%s", c.name, help)
		}
		// And run dispatches it: its own flag set answers --help.
		var sub bytes.Buffer
		if rc := run([]string{c.name, "--help"}, &sub, &sub); rc != 0 || !strings.Contains(sub.String(), "-") {
			t.Errorf("skills %s --help: rc %d, output %q", c.name, rc, sub.String())
		}
	}
	// runMCP refuses to start without --stdio or --http ADDR, so the
	// synopsis must show both and no optional-looking [--stdio].
	if !strings.Contains(help, "skills mcp --stdio | --http-addr ADDR") || strings.Contains(help, "[--stdio]") {
		t.Errorf("--help misstates the mcp synopsis:\n%s", help)
	}

	// A stray argument names every subcommand.
	errb.Reset()
	if rc := run([]string{"bogus"}, io.Discard, &errb); rc != 2 {
		t.Fatalf("skills bogus: rc %d, want 2", rc)
	}
	for _, c := range subcommands {
		if !strings.Contains(errb.String(), c.name) {
			t.Errorf("skills bogus: the error omits %q: %s", c.name, errb.String())
		}
	}
}
