package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/app"
)

// Every flag of `skills mcp` but its own (--stdio, --connect-timeout,
// --config) and the older names is a flag of the server, with the same
// help: one setting, one name.
func TestMCPFlagsAreTheServers(t *testing.T) {
	server := flag.NewFlagSet("skills", flag.ContinueOnError)
	cfg := app.DefaultConfig()
	declareWorkerFlags(server, &cfg, new(string), new(bool))
	c := newMCPCommand(app.DefaultConfig())
	mcp := c.flags()
	own := map[string]bool{"stdio": true, "connect-timeout": true, "config": true}
	shared := 0
	mcp.VisitAll(func(f *flag.Flag) {
		switch s := server.Lookup(f.Name); {
		case own[f.Name], strings.HasPrefix(f.Usage, olderName):
		case s == nil:
			t.Errorf("skills mcp --%s is no flag of the server: give the setting the server's name", f.Name)
		case s.Usage != f.Usage:
			t.Errorf("--%s: skills mcp says %q, the server %q", f.Name, f.Usage, s.Usage)
		default:
			shared++
		}
	})
	if shared != 11 {
		t.Errorf("skills mcp shares %d flags with the server; want its 11 settings (url, engine-token, log-level, http-addr and the seven mcp-…)", shared)
	}
	for _, r := range renamedMCPFlags {
		if mcp.Lookup(r.old) == nil || server.Lookup(r.name) == nil {
			t.Errorf("--%s is no longer accepted, or --%s is no server flag", r.old, r.name)
		}
	}
}

// `skills mcp` reads the server's keys for the settings it shares, the
// environment over them and its flags over both; the file's http_addr
// (the server's own listener) is not its address. The older flag names
// set the same settings, each with a warning naming the new one.
func TestMCPReadsTheServersKeys(t *testing.T) {
	for _, env := range []string{"III_URL", app.EnvMCPToken, app.EnvEngineToken, app.EnvLogLevel} {
		t.Setenv(env, "")
		_ = os.Unsetenv(env)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(`url: ws://engine.test:1
engine_token: file-engine-token
log_level: warn
http_addr: 127.0.0.1:49135
mcp_token: file-token
mcp_allow_host: [skills.example.com]
mcp_allow_origin: https://app.example
mcp_max_sessions: 7
mcp_idle_timeout: 90s
mcp_no_skill_tools: true
mcp:
  allow_side_effects: true
state_timeout_ms: 500
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, warnings, code, ok := parseMCP([]string{"--stdio", "--config", path}, io.Discard, io.Discard)
	if !ok {
		t.Fatalf("parse: exit %d", code)
	}
	got, h := c.cfg, c.cfg.HTTP
	if got.Engine.URL != "ws://engine.test:1" || got.Engine.Token != "file-engine-token" || got.LogLevel != "warn" || h.Token != "file-token" ||
		!reflect.DeepEqual([]string(h.AllowHost), []string{"skills.example.com"}) || !reflect.DeepEqual([]string(h.AllowOrigin), []string{"https://app.example"}) ||
		h.MaxSessions != 7 || h.IdleTimeout != 90*time.Second || !h.NoSkillTools || !got.Registry.MCP.AllowSideEffects || len(warnings) != 0 {
		t.Errorf("settings from the file: %+v, warnings %v", got, warnings)
	}
	if h.Addr != "" {
		t.Errorf("http_addr %q from the server's file: skills mcp would take the server's port", h.Addr)
	}

	t.Setenv(app.EnvMCPToken, "env-token")
	t.Setenv("III_URL", "ws://env.test:2")
	c, _, _, ok = parseMCP([]string{"--config", path, "--http-addr", "127.0.0.1:0", "--mcp-max-sessions", "3", "--mcp-allow-side-effects=false"}, io.Discard, io.Discard)
	if h := c.cfg.HTTP; !ok || h.Token != "env-token" || c.cfg.Engine.URL != "ws://env.test:2" || h.Addr != "127.0.0.1:0" || h.MaxSessions != 3 ||
		c.cfg.Registry.MCP.AllowSideEffects {
		t.Errorf("environment over the file, flags over both: %+v", c.cfg)
	}

	c, warnings, _, ok = parseMCP([]string{"--config", path, "--http", "127.0.0.1:0", "--token", "t", "--max-sessions", "2",
		"--idle-timeout", "1m", "--allow-host", "a.example", "--no-skill-tools", "--allow-side-effects"}, io.Discard, io.Discard)
	if h := c.cfg.HTTP; !ok || h.Addr != "127.0.0.1:0" || h.Token != "t" || h.MaxSessions != 2 || h.IdleTimeout != time.Minute ||
		!reflect.DeepEqual([]string(h.AllowHost), []string{"a.example"}) {
		t.Errorf("older names: %+v", h)
	}
	if len(warnings) != 7 || !strings.Contains(strings.Join(warnings, "\n"), "--token is the older name of --mcp-token (the server's); write --mcp-token") {
		t.Errorf("warnings for the older names: %q", warnings)
	}
}

// A setting `skills mcp` takes is checked as the server checks it, naming
// the key; settings it does not take (engine_tokens here) are not its
// business.
func TestMCPChecksItsSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("engine_tokens: [{name: a, token_env: SKILLS_TEST_UNSET_VAR, namespaces: [a]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, code, ok := parseMCP([]string{"--stdio", "--config", path}, io.Discard, io.Discard); !ok {
		t.Errorf("a server-only setting stopped skills mcp: exit %d", code)
	}
	var errb bytes.Buffer
	if _, _, code, ok := parseMCP([]string{"--stdio", "--config", path, "--mcp-idle-timeout", "soon"}, io.Discard, &errb); ok || code != 2 ||
		!strings.Contains(errb.String(), `invalid value "soon" for flag -mcp-idle-timeout`) {
		t.Errorf("bad duration flag: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if _, _, code, ok := parseMCP([]string{"--stdio", "--config", path, "--log-level", "loud"}, io.Discard, &errb); ok || code != 2 ||
		!strings.Contains(errb.String(), `log level "loud": expected debug, info, warn or error`) {
		t.Errorf("bad log level: exit %d, %s", code, errb.String())
	}
}

// --help prints the defaults, never a token the environment supplied.
func TestHelpPrintsNoTokenFromTheEnvironment(t *testing.T) {
	t.Setenv(app.EnvMCPToken, "secret-mcp-token")
	t.Setenv(app.EnvEngineToken, "secret-engine-token")
	t.Setenv(app.EnvAdminToken, "secret-admin-token")
	for _, args := range [][]string{{"--help"}, {"mcp", "--help"}} {
		var out bytes.Buffer
		run(args, &out, io.Discard)
		if strings.Contains(out.String(), "secret-") || !strings.Contains(out.String(), "-mcp-token") {
			t.Errorf("skills %v --help shows a token from the environment:\n%s", args, out.String())
		}
	}
}
