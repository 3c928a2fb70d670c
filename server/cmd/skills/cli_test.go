package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// Help goes to stdout and ends with a newline, for skills and for each
// command, through --help and through `skills help`.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}, {"help", "trigger"}, {"trigger", "--help"}, {"mcp", "--help"},
		{"search", "--help"}, {"versions", "--help"}, {"check", "--help"}, {"sp-tools", "--help"}} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 0 || errb.Len() != 0 || out.Len() == 0 || !strings.HasSuffix(out.String(), "\n") {
			t.Errorf("skills %v: rc %d, stdout %q, stderr %q; want the help on stdout ending with a newline", args, rc, out.String(), errb.String())
		}
	}
	var out bytes.Buffer
	run([]string{"help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "-http-addr string") || !strings.Contains(out.String(), "Alias of --http-addr") {
		t.Errorf("skills help omits --http-addr or its alias --mcp-addr:\n%s", out.String())
	}
}

// A mistyped flag or command is one line naming it and the one meant,
// with exit code 2, instead of the whole usage.
func TestMistypedFlagOrCommandGetsASuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--skill-folder", "x"}, "skills: unknown flag --skill-folder; did you mean --skills-folder? (skills --help lists every flag)\n"},
		{[]string{"--standalon"}, "skills: unknown flag --standalon; did you mean --standalone?"},
		{[]string{"trgger"}, `skills: unknown command "trgger"; did you mean skills trigger?`},
		{[]string{"trigger", "--functon-id", "x"}, "skills trigger: unknown flag --functon-id; did you mean --function-id?"},
		{[]string{"mcp", "--stdo"}, "skills mcp: unknown flag --stdo; did you mean --stdio?"},
		{[]string{"versions", "--promt", "x"}, "skills versions: unknown flag --promt; did you mean --prompt?"},
		{[]string{"check", "--formt", "json", "."}, "skills check: unknown flag --formt; did you mean --format?"},
		{[]string{"help", "serch"}, `skills: unknown command "serch"; did you mean skills search?`},
	} {
		var out, errb bytes.Buffer
		rc := run(c.args, &out, &errb)
		if rc != 2 || out.Len() != 0 || !strings.Contains(errb.String(), c.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("skills %v: rc %d, stdout %q, stderr %q; want exit 2 and the one line %q", c.args, rc, out.String(), errb.String(), c.want)
		}
	}
}

// The server refuses a config it cannot read as a skills config before it
// starts anything: exit 2 and the problem on stderr.
func TestBadConfigStopsTheStart(t *testing.T) {
	for yaml, want := range map[string]string{
		"skill_folder: ./skills\n":                 "config.yaml:1: unknown key skill_folder; did you mean skills_folder?",
		"workers:\n  - name: iii-state\n":          "this looks like the iii engine's config (top-level workers:), not a skills config",
		"scopes: [unclosed\n":                      "is not valid YAML",
		"skills_protocol:\n  cgroups: sometimes\n": `skills_protocol.cgroups "sometimes"`,
	} {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		rc := run([]string{"--config", path, "--standalone", "--url", "ws://" + testutil.FreeAddr(t), "--data", t.TempDir(), "--mcp-addr", ""}, &out, &errb)
		if rc != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: rc %d, stderr %q; want exit 2 naming %q", yaml, rc, errb.String(), want)
		}
	}
}

// `skills trigger` is a one-shot caller: the server logs nothing about it
// at info level (it used to log "worker joined" and "worker left" per call).
func TestTriggerIsQuietOnTheServer(t *testing.T) {
	url := "ws://" + testutil.FreeAddr(t)
	_, logs := startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "")
	waitFor(t, logs, "skills ready")
	for i := 0; i < 3; i++ {
		var out, errb bytes.Buffer
		if rc := run([]string{"trigger", "--url", url, "--function-id", "skills::list"}, &out, &errb); rc != 0 {
			t.Fatalf("skills trigger: rc %d %s", rc, errb.String())
		}
	}
	// A line the server logs after the calls: everything before it is out.
	var errb bytes.Buffer
	payload := `{"id":"quiet/marker","skill":"# marker"}`
	if rc := run([]string{"trigger", "--url", url, "--function-id", "skills::register", "--payload", payload}, io.Discard, &errb); rc != 0 {
		t.Fatalf("skills trigger: %s", errb.String())
	}
	waitFor(t, logs, "id=quiet/marker")
	if strings.Contains(logs.String(), "skills-trigger") || strings.Count(logs.String(), `msg="worker joined"`) != 1 ||
		strings.Contains(logs.String(), `msg="worker left"`) {
		t.Errorf("the server logged the trigger calls:\n%s", logs.String())
	}
}

// `skills mcp` refuses a bad config it was pointed at with --config, but
// skips (with a warning) a ./config.yaml that is not a skills config: its
// working directory is whatever project the MCP client runs in.
func TestMCPSkipsAForeignDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("workers:\n  - name: iii-state\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"mcp", "--stdio", "--url", "ws://" + testutil.FreeAddr(t), "--connect-timeout", "200ms"}
	var errb bytes.Buffer
	if rc := run(append(args, "--config", filepath.Join(dir, "config.yaml")), io.Discard, &errb); rc != 2 ||
		!strings.Contains(errb.String(), "this looks like the iii engine's config") {
		t.Errorf("--config naming the engine's config: rc %d, %s", rc, errb.String())
	}
	t.Chdir(dir)
	errb.Reset()
	rc := run(args, io.Discard, &errb)
	if rc == 2 || !strings.Contains(errb.String(), "is not a skills config; using the defaults") || !strings.Contains(errb.String(), "cannot reach the iii engine") {
		t.Errorf("default ./config.yaml of another program: rc %d, %s", rc, errb.String())
	}
}
