package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCheckAndServerAgreeOnEdges: the Agent Skills edges as `skills check`
// reports them and as a running `skills --standalone` serves the same
// folder. A skill file named skill.md is the author's skill on every
// surface (MCP skill://…/SKILL.md, iii://, /rpc) with a warning in the
// log and diagnostics; a SKILL.md of frontmatter alone is served with an
// empty body; keys outside the specification are served and named by the
// check; a folder name the Agent Skills rule refuses is refused by both.
func TestCheckAndServerAgreeOnEdges(t *testing.T) {
	dir := t.TempDir()
	const notes = "---\nname: notes\ndescription: Take meeting notes. Use when asked for minutes.\n---\n# Notes\n\nWrite who decided what.\n"
	const minimal = "---\nname: minimal\ndescription: A skill of frontmatter alone.\n---\n"
	for path, content := range map[string]string{
		"notes/skill.md":    notes,
		"minimal/SKILL.md":  minimal,
		"keys/SKILL.md":     "---\nname: keys\ndescription: Keys a harness reads.\nargument-hint: \"[file]\"\n---\n# Keys\n",
		"My_Skill/SKILL.md": "---\nname: my-skill\ndescription: d\n---\n# Mine\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var out, errb bytes.Buffer
	if rc := runCheck([]string{dir}, &out, &errb); rc != 1 {
		t.Fatalf("skills check: rc %d, want 1 (the folder name)\n%s%s", rc, out.String(), errb.String())
	}
	report := out.String()
	for _, want := range []string{
		"My_Skill/SKILL.md:1: error: folder name \"My_Skill\" must be lowercase letters a-z, digits and '-' only, got 'M', '_' and 'S' (Agent Skills names; for example \"my-skill\")",
		"notes/skill.md:1: warning: the skill file is named skill.md, expected SKILL.md (Agent Skills)",
		"minimal/SKILL.md:4: warning: SKILL.md has no body after its frontmatter",
		"keys/SKILL.md:4: warning: frontmatter key `argument-hint` is not an Agent Skills field",
		"1 error, 3 warnings in 3 skills",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("skills check does not say %q:\n%s", want, report)
		}
	}

	httpAddr, engineAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	url := "ws://" + engineAddr
	_, logs := startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", httpAddr, "--skills-folder", dir)
	waitListening(t, httpAddr, logs)
	c := connectAttacker(t, url)
	fetch := func(uri string) (string, error) {
		raw, err := trigger(t, c, rules.FnSkillFetch, map[string]string{"uri": uri})
		if err != nil {
			return "", err
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %s", uri, raw)
		}
		return s, nil
	}
	var body string
	testutil.Eventually(t, 30*time.Second, "skill::fetch iii://notes", func() bool {
		var err error
		body, err = fetch("iii://notes")
		return err == nil
	})
	// skill::fetch heads every answer with the URI (upstream's format).
	if body != "# iii://notes\n\n# Notes\n\nWrite who decided what." {
		t.Errorf("iii://notes = %q", body)
	}
	if got, err := fetch("iii://notes/SKILL.md"); err != nil || got != "# iii://notes/SKILL.md\n\n"+strings.TrimSpace(notes) {
		t.Errorf("iii://notes/SKILL.md = %q, %v; want the file", got, err)
	}
	if got, err := fetch("iii://minimal"); err != nil || got != "# iii://minimal\n\n" {
		t.Errorf("iii://minimal = %q, %v; want the heading and an empty body", got, err)
	}
	if _, err := fetch("iii://notes/skill"); err == nil {
		t.Error("iii://notes/skill is served: skill.md became a skill of its own")
	}
	if _, err := fetch("iii://my-skill"); err == nil {
		t.Error("iii://my-skill is served from My_Skill/")
	}

	// MCP: the Skills extension's SKILL.md is the author's file.
	cs, _ := mcpTools(t, "http://"+httpAddr+"/mcp")
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "skill://notes/SKILL.md"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != notes {
		t.Fatalf("skill://notes/SKILL.md: %+v %v", res, err)
	}
	// The Skills Protocol's /rpc.
	status, rpc := rpcCall(t, "http://"+httpAddr+"/rpc", "read_skill_file", map[string]string{"name": "notes", "path": "SKILL.md"})
	var file struct {
		Content string `json:"content"`
	}
	if status != 200 || json.Unmarshal(rpc["result"], &file) != nil || file.Content != notes {
		t.Fatalf("/rpc read_skill_file notes SKILL.md: %d %s", status, rpc["error"])
	}

	// Diagnostics and the log name the file.
	raw, err := trigger(t, c, "directory::skills::diagnostics", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var diag struct {
		Skipped, Warnings []struct{ Path, Reason string }
	}
	if err := json.Unmarshal(raw, &diag); err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, w := range append(diag.Skipped, diag.Warnings...) {
		found[w.Path] = w.Reason
	}
	if !strings.HasPrefix(found["notes/skill.md"], "the skill file is named skill.md, expected SKILL.md") ||
		!strings.HasPrefix(found["My_Skill/SKILL.md"], `folder name "My_Skill" must be`) {
		t.Fatalf("diagnostics: %s", raw)
	}
	for _, want := range []string{"served fs entry with a warning", filepath.Join(dir, "notes", "skill.md"), "skipped fs entry"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
}
