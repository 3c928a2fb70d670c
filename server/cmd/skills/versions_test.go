package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// The version subcommands against a real standalone registry process.
func TestVersionSubcommands(t *testing.T) {
	url := "ws://" + testutil.FreeAddr(t)
	startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "",
		"--protected-labels", "production", "--admin-token", "tok", "--serve-label", "production")
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		rc := run(append(args, "--url", url), &out, &errb)
		return out.String(), errb.String(), rc
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, rc := cli("trigger", "--function-id", "skills::list", "--timeout", "2s"); rc == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registry did not come up")
		}
	}
	for i, body := range []string{"# V1\nsame\n", "# V2\nsame\n"} {
		payload := `{"id":"cli/x","skill":` + strings.ReplaceAll(`"`+body+`"`, "\n", `\n`) + `,"message":"m` + string(rune('1'+i)) + `","author":"me"}`
		// Each `skills trigger` is a new worker: the id stays the previous
		// one's until the engine has seen that connection close.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, errb, rc := cli("trigger", "--function-id", "skills::register", "--payload", payload)
			if rc == 0 {
				break
			}
			if !strings.Contains(errb, "belongs to another worker") || time.Now().After(deadline) {
				t.Fatal(errb)
			}
		}
	}
	out, errb, rc := cli("versions", "cli/x")
	if rc != 0 || !strings.Contains(out, "VERSION") || !strings.Contains(out, "latest") || !strings.Contains(out, "m2 (me)") {
		t.Fatalf("versions: rc %d\n%s%s", rc, out, errb)
	}
	out, errb, rc = cli("diff", "cli/x", "1", "latest")
	if rc != 0 || out != "--- cli/x@1\n+++ cli/x@2\n@@ -1,2 +1,2 @@\n-# V1\n+# V2\n same\n" {
		t.Fatalf("diff: rc %d\n%q%s", rc, out, errb)
	}
	_, errb, rc = cli("label", "--admin-token", "", "cli/x", "production", "1")
	if rc != 1 || !strings.Contains(errb, "protected") {
		t.Fatalf("protected label without token: rc %d %s", rc, errb)
	}
	out, errb, rc = cli("label", "--admin-token", "tok", "cli/x", "production", "1")
	if rc != 0 || !strings.Contains(out, "production → version 1 (new label)") {
		t.Fatalf("label: rc %d %s%s", rc, out, errb)
	}
	out, _, _ = cli("trigger", "--function-id", "skill::fetch", "--payload", `{"uri":"iii://cli/x"}`)
	if !strings.Contains(out, "# V1") {
		t.Fatalf("serve label not served: %s", out)
	}
	// What is listed is what is served: the index and the MCP Skills
	// extension's catalog describe V1 while V2 is the newest.
	out, _, _ = cli("trigger", "--function-id", "skill::fetch", "--payload", `{"uri":"iii://skills"}`)
	if !strings.Contains(out, "V1") || strings.Contains(out, "V2") {
		t.Fatalf("index with production at 1: %s", out)
	}
	// skill://cli/x@N/SKILL.md reads version N through the MCP Skills
	// extension's view; skill://cli/x/SKILL.md is the served one (V1).
	digest := func(path string) string {
		t.Helper()
		out, errb, rc := cli("trigger", "--function-id", "skills::catalog-get", "--payload", `{"path":"`+path+`"}`)
		var got struct {
			Skill *struct {
				Path  string `json:"path"`
				Files []struct {
					SHA256 string `json:"sha256"`
				} `json:"files"`
			} `json:"skill"`
		}
		if rc != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Skill == nil || got.Skill.Path != path || len(got.Skill.Files) != 1 {
			t.Fatalf("skills::catalog-get %s: rc %d %s%s", path, rc, out, errb)
		}
		return got.Skill.Files[0].SHA256
	}
	if served, v1, v2 := digest("cli/x"), digest("cli/x@1"), digest("cli/x@production"); served != v1 || v1 != v2 || v1 == digest("cli/x@2") {
		t.Fatalf("skill:// digests: served %s, @1 %s, @production %s, @2 %s", served, v1, v2, digest("cli/x@2"))
	}
	out, errb, rc = cli("rollback", "cli/x", "1", "--message", "back")
	if rc != 0 || !strings.Contains(out, "version 3 now holds version 1's content") {
		t.Fatalf("rollback: rc %d %s%s", rc, out, errb)
	}
	// Yank, unyank, deprecate; versions shows signer, yank and deprecation.
	// (Each CLI call is a new connection, the owner of the last change is
	// gone: allowed, after the engine has seen it close.)
	retry := func(args ...string) (string, string, int) {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			out, errb, rc := cli(args...)
			if rc == 0 || !strings.Contains(errb, "belongs to another worker") || time.Now().After(deadline) {
				return out, errb, rc
			}
		}
	}
	out, errb, rc = retry("yank", "cli/x", "3", "leaks a token")
	if rc != 0 || !strings.Contains(out, "cli/x: version 3 is yanked (leaks a token); reads without a version serve version 1") {
		t.Fatalf("yank: rc %d %s%s", rc, out, errb)
	}
	out, errb, rc = retry("deprecate", "cli/x", "use cli/y")
	if rc != 0 || out != "cli/x is deprecated: use cli/y\n" {
		t.Fatalf("deprecate: rc %d %q%s", rc, out, errb)
	}
	out, errb, rc = cli("versions", "cli/x")
	if rc != 0 || !strings.HasPrefix(out, "cli/x is deprecated: use cli/y\n") || !strings.Contains(out, "SIGNED") ||
		!strings.Contains(out, "unsigned") || !strings.Contains(out, "leaks a token") {
		t.Fatalf("versions after yank and deprecate: rc %d\n%s%s", rc, out, errb)
	}
	_, errb, rc = retry("yank", "cli/x", "9", "x")
	if rc != 1 || !strings.Contains(errb, "NOT_FOUND") && !strings.Contains(errb, "no version 9") {
		t.Fatalf("yank of an unknown version: rc %d %s", rc, errb)
	}
	out, errb, rc = retry("unyank", "cli/x", "3")
	if rc != 0 || !strings.Contains(out, "version 3 is in service") {
		t.Fatalf("unyank: rc %d %s%s", rc, out, errb)
	}
	out, errb, rc = retry("deprecate", "--undo", "cli/x")
	if rc != 0 || out != "cli/x is not deprecated\n" {
		t.Fatalf("undeprecate: rc %d %q%s", rc, out, errb)
	}
	_, errb, rc = cli("versions", "cli/x", "extra")
	if rc != 2 || !strings.Contains(errb, "expected 1 argument(s), got 2") {
		t.Fatalf("extra argument: rc %d %s", rc, errb)
	}
	_, errb, rc = cli("diff", "cli/x", "1", "9")
	if rc != 1 || !strings.Contains(errb, "skill cli/x has no version 9") {
		t.Fatalf("unknown version: rc %d %s", rc, errb)
	}
	// unregister removes it (once the registering connection is gone),
	// and says so when nothing was there.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, errb, rc = cli("unregister", "cli/x")
		if rc == 0 {
			break
		}
		if !strings.Contains(errb, "belongs to another worker") || time.Now().After(deadline) {
			t.Fatalf("unregister: rc %d %s%s", rc, out, errb)
		}
	}
	if out != "cli/x: unregistered\n" {
		t.Fatalf("unregister: %q", out)
	}
	if out, errb, rc = cli("unregister", "cli/x"); rc != 0 || out != "cli/x: nothing was registered under it\n" {
		t.Fatalf("unregister again: rc %d %q %s", rc, out, errb)
	}
}
