package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// `skills sync` as a user types it, against a real standalone registry:
// the exit codes (0 in sync, 1 differs or failed, 2 usage), the project
// file, --check and --frozen.
func TestSyncCommand(t *testing.T) {
	folder := t.TempDir()
	for p, c := range map[string]string{
		"pdf-tools/SKILL.md":            "---\nname: pdf-tools\ndescription: Fill PDF forms.\n---\n\n# PDF tools\n",
		"pdf-tools/references/guide.md": "# Guide\n",
		"mail/SKILL.md":                 "---\nname: mail\ndescription: Send mail.\n---\n\n# Mail\n",
	} {
		full := filepath.Join(folder, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	httpAddr := testutil.FreeAddr(t)
	startSkills(t, "--standalone", "--url", "ws://"+testutil.FreeAddr(t), "--http-addr", httpAddr, "--data", t.TempDir(), "--skills-folder", folder)
	url := "http://" + httpAddr
	project := t.TempDir()
	t.Chdir(project)
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		rc := run(append([]string{"sync"}, args...), &out, &errb)
		return out.String(), errb.String(), rc
	}
	if _, errb, rc := cli("--check"); rc != 1 || !strings.Contains(errb, "there is no lock at "+filepath.Join(project, "skills.lock")) {
		t.Errorf("--check without a lock: rc %d %s", rc, errb)
	}
	testutil.Eventually(t, 20*time.Second, "the registry answers", func() bool {
		out, _, _ := cli("--url", url, "--dir", "probe", "--lock", "probe.lock", "mail")
		return strings.Contains(out, "in sync")
	})

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", "x"}, "say which registry with --url"},
		{[]string{"--url", url}, "say where to write with --dir DIR or --agent NAME"},
		{[]string{"--url", url, "--dir", "x", "--agent", "codex"}, "give --dir or --agent, not both"},
		{[]string{"--url", url, "--dir", "x", "--frozen", "--check"}, "give at most one of --frozen, --check and --watch"},
		{[]string{"--url", url, "--agent", "claude"}, `unknown agent "claude"; did you mean claude-code?`},
		{[]string{"--url", url, "--agent", "codex", "--scope", "everywhere"}, `scope "everywhere": expected project`},
		{[]string{"--url", "ftp://host", "--dir", "x"}, `scheme "ftp" is not one of http, https`},
		{[]string{"--url", "http://user:pw@host", "--dir", "x"}, "carries user information: give the token with --token"},
		{[]string{"--url", url, "--dir", "x", "Bad@"}, `selector "Bad@"`},
		{[]string{"--url", url, "--dir", "x", "@prod", "@staging"}, "two labels, @prod and @staging"},
		{[]string{"--url", url, "--dir", "x", "--yank-policy", "keep"}, `yank policy "keep"`},
		{[]string{"--url", url, "--dir", "x", "--sope", "user"}, "unknown flag --sope; did you mean --scope?"},
	} {
		_, errb, rc := cli(c.args...)
		if rc != 2 || !strings.Contains(errb, c.want) {
			t.Errorf("skills sync %v: rc %d, want 2 and %q in:\n%s", c.args, rc, c.want, errb)
		}
	}

	// The project file says it all; flags would win.
	yaml := "url: " + url + "\nagents: [claude-code, codex, cursor]\nselectors: [pdf-tools, mail]\n"
	if err := os.WriteFile("skills.yaml", []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errb, rc := cli()
	if rc != 0 || !strings.Contains(out, "skills sync: in sync (6 written") {
		t.Fatalf("sync from skills.yaml: rc %d\n%s%s", rc, out, errb)
	}
	for _, dir := range []string{".claude/skills", ".agents/skills", ".cursor/skills"} {
		if _, err := os.Stat(filepath.Join(dir, "pdf-tools", "references", "guide.md")); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	if out, errb, rc = cli("--check"); rc != 0 || !strings.Contains(out, "skills check: in sync") {
		t.Fatalf("check: rc %d\n%s%s", rc, out, errb)
	}
	if err := os.WriteFile(".cursor/skills/mail/SKILL.md", []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errb, rc = cli("--check"); rc != 1 || !strings.Contains(errb, "mail in .cursor/skills, file SKILL.md: changed since the sync") {
		t.Fatalf("check after an edit: rc %d\n%s%s", rc, out, errb)
	}
	if out, errb, rc = cli(); rc != 1 || !strings.Contains(errb, "mail in .cursor/skills, file SKILL.md: edited since the last sync") {
		t.Fatalf("sync over an edit: rc %d\n%s%s", rc, out, errb)
	}
	if out, errb, rc = cli("--frozen", "--force"); rc != 0 {
		t.Fatalf("frozen --force: rc %d\n%s%s", rc, out, errb)
	}
	if out, errb, rc = cli("--check"); rc != 0 {
		t.Fatalf("check after frozen: rc %d\n%s%s", rc, out, errb)
	}
	// Selectors on the command line replace the file's; a skill the
	// registry does not serve is exit 1, naming it.
	if out, errb, rc = cli("nope"); rc != 1 || !strings.Contains(errb, "the registry serves no skill nope (selector nope)") {
		t.Fatalf("an unknown skill: rc %d\n%s%s", rc, out, errb)
	}

	// A repository whose agent folder is a link out of it: refused.
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, ".windsurf"); err != nil {
		t.Fatal(err)
	}
	if out, errb, rc = cli("--agent", "windsurf", "--lock", "ws.lock", "mail"); rc != 1 || !strings.Contains(errb, ".windsurf is a symbolic link to "+elsewhere) {
		t.Fatalf("a linked agent folder: rc %d\n%s%s", rc, out, errb)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written through the link: %v", entries)
	}

	// --help-agents names the table's source and every agent.
	if out, _, rc = cli("--help-agents"); rc != 0 || !strings.Contains(out, "vercel-labs/skills v1.3.9") || !strings.Contains(out, "claude-code      .claude/skills") {
		t.Errorf("--help-agents: rc %d\n%s", rc, out)
	}
}
