package skillsync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	digest := strings.Repeat("0a", 32)
	for raw, want := range map[string]Selector{
		"acme/pdf":                  {Kind: SelID, ID: "acme/pdf"},
		"acme/":                     {Kind: SelNamespace, Namespace: "acme/"},
		"@production":               {Kind: SelLabel, Label: "production"},
		"acme/pdf@3":                {Kind: SelPin, ID: "acme/pdf", Pin: "3"},
		"acme/pdf@sha256:" + digest: {Kind: SelPin, ID: "acme/pdf", Pin: "sha256:" + digest},
		"acme/pdf@staging":          {Kind: SelPin, ID: "acme/pdf", Pin: "staging"},
		"query:fill pdf forms":      {Kind: SelQuery, Query: "fill pdf forms"},
	} {
		got, err := ParseSelector(raw)
		want.Raw = raw
		if err != nil || got != want {
			t.Errorf("ParseSelector(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, msg := range map[string]string{
		"":                                "an empty selector",
		"/":                               "give no selector at all to sync every skill",
		"Acme/pdf":                        `selector "Acme/pdf"`,
		"acme//":                          `selector "acme//" is not a namespace`,
		"acme/pdf@0":                      `version "0": expected a version number from 1`,
		"acme/pdf@03":                     `version "03"`,
		"acme/pdf@":                       "nothing after '@'",
		"acme/pdf@sha256:" + "ABCD":       "expected sha256: and 64 lowercase hex digits",
		"acme/pdf@sha256:" + digest + "0": "expected sha256: and 64 lowercase hex digits",
		"@Prod":                           `label "Prod"`,
		"@12":                             "is a number",
		"query:   ":                       "an empty search query",
		"../etc/passwd":                   `selector "../etc/passwd"`,
	} {
		if _, err := ParseSelector(raw); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseSelector(%q): %v, want an error with %q", raw, err, msg)
		}
	}
	if _, err := NewSelection([]string{"@a", "@b"}, nil, 0); err == nil {
		t.Error("two labels accepted")
	}
	if _, err := NewSelection(nil, []string{"x"}, 101); err == nil {
		t.Error("a query limit over the registry's accepted")
	}
	s, err := NewSelection([]string{"b/", "a", "b/"}, []string{"find me"}, 0)
	if err != nil || strings.Join(s.Strings(), ",") != "a,b/,query:find me" || s.QueryLimit != DefaultQueryLimit {
		t.Errorf("NewSelection: %v %v", s.Strings(), err)
	}
}

// The agent table: the source's 39 agents and the generic folder, each
// with a project folder and a user folder.
func TestAgentTable(t *testing.T) {
	if len(Agents) != 39 {
		t.Errorf("%d agents; the source (%s) has 39", len(Agents), AgentsSource)
	}
	seen := map[string]bool{}
	for _, a := range append([]Agent{Universal}, Agents...) {
		if seen[a.Name] || checkName(a.Name) != nil || a.Project == "" || a.User == "" || filepath.IsAbs(a.Project) {
			t.Errorf("agent %+v", a)
		}
		seen[a.Name] = true
	}
	env := Env{Home: "/home/u", Getenv: func(k string) string { return map[string]string{"CODEX_HOME": "/opt/codex"}[k] },
		Exists: func(p string) bool { return p == "/home/u/.clawdbot" }}
	for name, want := range map[string][2]string{
		"claude-code": {"/p/.claude/skills", "/home/u/.claude/skills"},
		"codex":       {"/p/.agents/skills", "/opt/codex/skills"},
		"cursor":      {"/p/.cursor/skills", "/home/u/.cursor/skills"},
		"goose":       {"/p/.goose/skills", "/home/u/.config/goose/skills"},
		"openclaw":    {"/p/skills", "/home/u/.clawdbot/skills"},
		"universal":   {"/p/.agents/skills", "/home/u/.agents/skills"},
	} {
		a, ok := FindAgent(name)
		if !ok {
			t.Fatalf("no agent %s", name)
		}
		if got := [2]string{a.Folder(ScopeProject, "/p", env), a.Folder(ScopeUser, "/p", env)}; got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	env.Exists = func(string) bool { return false }
	if a, _ := FindAgent("openclaw"); a.Folder(ScopeUser, "/p", env) != "/home/u/.moltbot/skills" {
		t.Errorf("openclaw without any home: %s", a.Folder(ScopeUser, "/p", env))
	}
	if names := AgentNames(); !sort.StringsAreSorted(names) || len(names) != 40 {
		t.Errorf("AgentNames: %v", names)
	}
}

// The lock is the same bytes for the same state, sorted, and reads back.
func TestLockEncoding(t *testing.T) {
	d := "sha256:" + strings.Repeat("1f", 32)
	l := NewLock()
	l.Sources["http://h:1/mcp"] = &LockSource{Selectors: []string{"b/", "a"}}
	l.Skills["zeta"] = &LockedSkill{Source: "http://h:1/mcp", ID: "b/zeta", Files: map[string]string{"SKILL.md": d, "a/b.md": d}, Targets: []string{"y", "x"}, Signature: "signed", SignedBy: "alice@example.com", Key: "SHA256:abc"}
	l.Skills["alpha"] = &LockedSkill{Source: "http://h:1/mcp", ID: "a", Version: 3, Selector: "a", Files: map[string]string{"SKILL.md": d}, Targets: []string{"x"}}
	b := l.Encode()
	back, err := ParseLock(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Encode()) != string(b) {
		t.Errorf("the lock does not read back the same:\n%s\n%s", b, back.Encode())
	}
	s := string(b)
	if strings.Index(s, `"alpha"`) > strings.Index(s, `"zeta"`) || strings.Index(s, `"a"`) > strings.Index(s, `"b/"`) || !strings.HasSuffix(s, "}\n") ||
		!strings.Contains(s, `"targets": [
        "x",
        "y"
      ]`) || !strings.Contains(s, `"signed_by": "alice@example.com"`) {
		t.Errorf("the lock is not sorted and indented:\n%s", s)
	}
	for name, bad := range map[string]string{
		"a target that is empty": strings.Replace(s, `"x",`, `"",`, 1),
		"an entry of no source": strings.Replace(s, `"source": "http://h:1/mcp",
      "id": "a"`, `"source": "http://other/mcp",
      "id": "a"`, 1),
		"a signature verdict of another word": strings.Replace(s, `"signed"`, `"trusted"`, 1),
	} {
		if _, err := ParseLock([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// parseMeta reads what a registry may add to a listing: the
// version, digest, signer and yank facts, and refuses malformed ones.
type jsonRaw = json.RawMessage

func TestParseMeta(t *testing.T) {
	get := func(m map[string]string) func(string) (jsonRaw, bool) {
		return func(k string) (jsonRaw, bool) { v, ok := m[k]; return jsonRaw(v), ok }
	}
	d := strings.Repeat("ab", 32)
	m, err := parseMeta("x", get(map[string]string{"version": "4", "sha256": `"sha256:` + d + `"`, "signed_by": `"alice@example.com"`, "key": `"SHA256:k"`, "yanked": `"broken"`}))
	if err != nil || m.Version != 4 || m.SHA256 != d || m.Signed != "signed" || m.SignedBy != "alice@example.com" || m.Key != "SHA256:k" || m.Yanked != "broken" {
		t.Errorf("%+v %v", m, err)
	}
	if m, err := parseMeta("x", get(map[string]string{"signed_by": "null"})); err != nil || m.Signed != "unsigned" {
		t.Errorf("signed_by null: %+v %v", m, err)
	}
	if m, err := parseMeta("x", get(nil)); err != nil || m != (Meta{}) {
		t.Errorf("nothing: %+v %v", m, err)
	}
	for _, bad := range []map[string]string{{"version": "0"}, {"version": `"x"`}, {"sha256": `"abc"`}, {"signed_by": "7"}, {"yanked": "{}"}} {
		if _, err := parseMeta("x", get(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A folder swap keeps what the sync did not write, and a removal leaves
// it behind, on real files.
func TestFolderSwap(t *testing.T) {
	root := t.TempDir()
	tg := &target{Target: Target{Path: root}}
	if err := tg.prepare(); err != nil {
		t.Fatal(err)
	}
	defer tg.release()
	dir := filepath.Join(root, "s")
	writeTree(t, dir, map[string]string{"SKILL.md": "old\n", "gone.md": "old\n", "mine.txt": "mine\n", "deep/mine.md": "mine\n"})
	if err := os.Symlink("mine.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	prev := map[string]string{"SKILL.md": sum([]byte("old\n")), "gone.md": sum([]byte("old\n"))}
	next := map[string][]byte{"SKILL.md": []byte("new\n"), "deep/ref.md": []byte("ref\n")}
	nextSums := map[string]string{}
	for p, b := range next {
		nextSums[p] = sum(b)
	}
	pf, err := planFolder(dir, nil, nextSums, prev)
	if err != nil || len(pf.conflicts) != 0 {
		t.Fatalf("%v %v", err, pf.conflicts)
	}
	st, err := stage(root, "s", pf, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.commit(); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the swap", readTree(t, dir, nil), map[string]string{"SKILL.md": "new\n", "deep/ref.md": "ref\n", "mine.txt": "mine\n", "deep/mine.md": "mine\n"})
	if to, err := os.Readlink(filepath.Join(dir, "link")); err != nil || to != "mine.txt" {
		t.Errorf("the user's link: %q %v", to, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, stagingDir)); len(entries) != 1 { // .lock
		t.Errorf("staging left: %v", entries)
	}
	// An edit of a file the sync wrote is a conflict.
	writeTree(t, dir, map[string]string{"deep/ref.md": "edited\n"})
	pf, _ = planFolder(dir, nil, map[string]string{"SKILL.md": sum([]byte("newer\n"))}, nextSums)
	if len(pf.conflicts) != 1 || pf.conflicts[0].File != "deep/ref.md" {
		t.Errorf("conflicts: %v", pf.conflicts)
	}
	conflicts, err := removeSkill(root, dir, nextSums, false)
	if err != nil || len(conflicts) != 1 {
		t.Fatalf("remove over an edit: %v %v", conflicts, err)
	}
	writeTree(t, dir, map[string]string{"deep/ref.md": "ref\n"})
	if conflicts, err := removeSkill(root, dir, nextSums, false); err != nil || len(conflicts) != 0 {
		t.Fatalf("remove: %v %v", conflicts, err)
	}
	sameTree(t, "after the removal", readTree(t, dir, nil), map[string]string{"mine.txt": "mine\n", "deep/mine.md": "mine\n"})
}

// A run that stopped between the two renames of a swap left the old
// folder aside: the next run puts it back.
func TestRecoverAside(t *testing.T) {
	root := t.TempDir()
	writeTree(t, filepath.Join(root, stagingDir), map[string]string{"s.aside-0123/SKILL.md": "old\n", "t.0123/SKILL.md": "half\n"})
	tg := &target{Target: Target{Path: root}}
	if err := tg.prepare(); err != nil {
		t.Fatal(err)
	}
	tg.release()
	sameTree(t, "after recovery", readTree(t, root, nil), map[string]string{"s/SKILL.md": "old\n"})
}

// Open refuses URLs it cannot use, before dialing.
func TestOpenURLs(t *testing.T) {
	for raw, msg := range map[string]string{
		"127.0.0.1:49135":          "expected http(s)://host:port",
		"file:///etc":              `scheme "file"`,
		"http://":                  "has no host",
		"https://u:p@example.com":  "carries user information",
		"http://h:1/mcp?x=1":       "has a query or fragment",
		"ws://127.0.0.1:1/#secret": "has a query or fragment",
	} {
		if _, err := Open(context.Background(), raw, ""); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Open(%q): %v, want %q", raw, err, msg)
		}
	}
	if u, _ := ParseSourceURL("http://127.0.0.1:49135"); u.String() != "http://127.0.0.1:49135/mcp" {
		t.Errorf("an HTTP URL without a path: %s", u)
	}
}
