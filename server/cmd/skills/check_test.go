package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// fixtures is skillcheck's folder of broken (and good) skills.
const fixtures = "../../internal/skillcheck/testdata"

func TestCheckExitStatusAndFormats(t *testing.T) {
	var out, errb bytes.Buffer
	// A good skill: exit 0, flags after the path work.
	if rc := runCheck([]string{filepath.Join(fixtures, "broken/good"), "--format", "github"}, &out, &errb); rc != 0 {
		t.Fatalf("good skill: rc %d\n%s%s", rc, out.String(), errb.String())
	}
	// Warnings only: 0, or 1 with --strict.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a/x.md", "b/x.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("# X\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	out.Reset()
	if rc := runCheck([]string{a, b}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "warning: skill id x is also served by") {
		t.Fatalf("shadowed copy: rc %d, want 0 with a warning\n%s", rc, out.String())
	}
	if rc := runCheck([]string{"--strict", a, b}, io.Discard, &errb); rc != 1 {
		t.Fatalf("--strict with a warning: rc %d, want 1", rc)
	}
	// Errors: 1, and the JSON form parses.
	out.Reset()
	if rc := runCheck([]string{"--format=json", filepath.Join(fixtures, "broken")}, &out, &errb); rc != 1 {
		t.Fatalf("broken skills: rc %d, want 1", rc)
	}
	var rep struct {
		Errors   int `json:"errors"`
		Findings []struct {
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Errors == 0 || len(rep.Findings) == 0 {
		t.Fatalf("json report: %v %+v\n%s", err, rep, out.String())
	}
	// Usage errors: 2, on stderr; --help: 0, on stdout.
	for _, args := range [][]string{{}, {"--format", "xml", "."}, {"--bogus"}} {
		errb.Reset()
		if rc := runCheck(args, io.Discard, &errb); rc != 2 || errb.Len() == 0 {
			t.Errorf("skills check %v: rc %d, stderr %q; want 2 and a message", args, rc, errb.String())
		}
	}
	out.Reset()
	if rc := runCheck([]string{"--help"}, &out, io.Discard); rc != 0 || !strings.Contains(out.String(), "Usage: skills check") {
		t.Fatalf("--help: rc %d, stdout %q", rc, out.String())
	}
	// After "--" a name that looks like a flag is a path.
	out.Reset()
	if rc := runCheck([]string{"--", "--format"}, &out, io.Discard); rc != 1 || !strings.Contains(out.String(), "cannot check --format") {
		t.Fatalf("-- --format: rc %d\n%s", rc, out.String())
	}
}

// With --url, links outside the checked set are looked up on a running
// registry: skills through skill::fetch, sections in the engine's functions.
func TestCheckAgainstServer(t *testing.T) {
	addr := testutil.FreeAddr(t)
	url := "ws://" + addr
	_, logs := startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "")
	waitListening(t, addr, logs)
	payload := `{"id":"on-server","skill":"# On the server\n"}`
	deadline := time.Now().Add(60 * time.Second)
	for {
		var errb bytes.Buffer
		if runTrigger([]string{"--url", url, "--function-id", "skills::register", "--payload", payload}, nil, io.Discard, &errb) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("skills::register never succeeded: %s\n%s", errb.String(), logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	dir := t.TempDir()
	md := "# Links\n\n[a](iii://on-server)\n[b](iii://not-on-server)\n[c](iii://fn/skill/fetch)\n[d](iii://fn/acme/none)\n"
	if err := os.WriteFile(filepath.Join(dir, "links.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	rc := runCheck([]string{"--url", url, dir}, &out, &errb)
	got := out.String()
	if rc != 1 || strings.Count(got, ": error: ") != 2 ||
		!strings.Contains(got, "links.md:4: error: link iii://not-on-server: no skill not-on-server in the checked folders or on the server") ||
		!strings.Contains(got, "links.md:6: error: link iii://fn/acme/none: no function acme::none on the engine") {
		t.Fatalf("rc %d, want 1 with the two missing targets named:\n%s%s", rc, got, errb.String())
	}
	// Nothing listening: a clear error, exit 1.
	errb.Reset()
	if rc := runCheck([]string{"--url", "ws://" + testutil.FreeAddr(t), dir}, io.Discard, &errb); rc != 1 || errb.Len() == 0 {
		t.Fatalf("no engine: rc %d, stderr %q", rc, errb.String())
	}
}
