package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/skilladd"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func addSkillMD(name, body string) string {
	return "---\nname: " + name + "\ndescription: The " + name + " skill.\n---\n" + body
}

// writeFiles writes path → content under dir; "->target" makes a symlink.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// gitRepo commits files in base/name and publishes it bare as
// root/name.git; it returns the working copy.
func gitRepo(t *testing.T, base, root, name string, files map[string]string) string {
	t.Helper()
	work := filepath.Join(base, name)
	writeFiles(t, work, files)
	testutil.Git(t, work, "init", "-q")
	testutil.Git(t, work, "add", "-A")
	testutil.Git(t, work, "commit", "-q", "-m", name)
	return work
}

func publishBare(t *testing.T, work, root string) {
	t.Helper()
	testutil.Git(t, filepath.Dir(work), "clone", "-q", "--bare", work, filepath.Join(root, filepath.Base(work)+".git"))
}

// `skills add` against a real `skills --standalone` process, from a real
// git server (git-http-backend) and archives made by zip: the skills
// registered are read back with skill::fetch, their versions carry the
// provenance; hostile sources are refused with what and where, and
// nothing of them is registered; a SOURCE the registry refuses part-way
// is undone.
func TestAddAgainstARegistry(t *testing.T) {
	testutil.NeedGit(t)
	testutil.NeedArchivers(t, "zip")
	base, root := t.TempDir(), t.TempDir()
	gitURL, gitEnv := testutil.GitServer(t, root)
	for _, kv := range gitEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	work := gitRepo(t, base, root, "collection", map[string]string{
		"README.md":            "# Collection\n",
		"skills/pdf/SKILL.md":  addSkillMD("pdf", "# PDF v1\n\nRead PDF files.\n"),
		"skills/docx/SKILL.md": addSkillMD("docx", "# DOCX\n\nWord files.\n"),
	})
	testutil.Git(t, work, "tag", "v1")
	v1 := strings.TrimSpace(testutil.Git(t, work, "rev-parse", "HEAD"))
	if err := os.WriteFile(filepath.Join(work, "skills/pdf/SKILL.md"), []byte(addSkillMD("pdf", "# PDF v2\n\nRead PDF files.\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, work, "commit", "-q", "-am", "v2")
	head := strings.TrimSpace(testutil.Git(t, work, "rev-parse", "HEAD"))
	publishBare(t, work, root)
	publishBare(t, gitRepo(t, base, root, "evil-link", map[string]string{
		"skills/pdf/SKILL.md": addSkillMD("pdf", "# PDF\n"), "skills/pdf/passwd": "->/etc/passwd"}), root)
	publishBare(t, gitRepo(t, base, root, "bad-id", map[string]string{"skills/Not_An_Id/SKILL.md": addSkillMD("Not_An_Id", "# x\n")}), root)
	other := gitRepo(t, base, root, "other", map[string]string{"x.md": "# x\n"})
	sub := gitRepo(t, base, root, "evil-sub", map[string]string{"skills/sub/SKILL.md": addSkillMD("sub", "# Sub\n")})
	testutil.Git(t, sub, "submodule", "add", "-q", other, "skills/sub/vendor")
	testutil.Git(t, sub, "commit", "-q", "-m", "submodule")
	publishBare(t, sub, root)
	// Archives.
	writeFiles(t, filepath.Join(base, "arch"), map[string]string{
		"zipped/SKILL.md": addSkillMD("zipped", "# Zipped\n\nFrom a zip.\n"), "outside.txt": "x"})
	zipIn := func(dir, out string, names ...string) {
		cmd := exec.Command("zip", append([]string{"-q", out}, names...)...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("zip: %v\n%s", err, b)
		}
	}
	zipIn(filepath.Join(base, "arch"), "../zipped.zip", "zipped/SKILL.md")
	zipIn(filepath.Join(base, "arch", "zipped"), "../../slip.zip", "SKILL.md", "../outside.txt")
	bomb := filepath.Join(base, "bomb.zip")
	if err := os.WriteFile(bomb, testutil.ZipBomb(t, addSkillMD("bomb", "# Bomb\n"), "zeros", 10<<30, 10<<30), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, filepath.Join(base, "held"), map[string]string{
		"a/SKILL.md": addSkillMD("a", "# A\n"), "x/SKILL.md": addSkillMD("x", "# X\n")})

	url := "ws://" + testutil.FreeAddr(t)
	startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "")
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		rc := run(append([]string{"add", "--url", url}, args...), &out, &errb)
		return out.String(), errb.String(), rc
	}
	trigger := func(fn, payload string) (string, string, int) {
		var out, errb bytes.Buffer
		rc := run([]string{"trigger", "--url", url, "--function-id", fn, "--payload", payload, "--timeout", "5s"}, &out, &errb)
		return out.String(), errb.String(), rc
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, rc := trigger(rules.FnSkillsList, "{}"); rc == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registry did not come up")
		}
	}
	listed := func() []string {
		out, errb, rc := trigger(rules.FnSkillsList, "{}")
		var l struct {
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		}
		if rc != 0 || json.Unmarshal([]byte(out), &l) != nil {
			t.Fatalf("skills::list: rc %d %s%s", rc, out, errb)
		}
		var ids []string
		for _, s := range l.Skills {
			ids = append(ids, s.ID)
		}
		return ids
	}
	fetch := func(id string) string {
		out, errb, rc := trigger(rules.FnSkillFetch, `{"uri":"iii://`+id+`"}`)
		if rc != 0 {
			t.Fatalf("skill::fetch %s: rc %d %s", id, rc, errb)
		}
		return out
	}
	newest := func(id string) (int, string) {
		out, errb, rc := trigger(rules.FnSkillsVersions, `{"id":"`+id+`"}`)
		var l struct {
			Latest   int `json:"latest"`
			Versions []struct {
				Message string `json:"message"`
			} `json:"versions"`
		}
		if rc != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Versions) == 0 {
			t.Fatalf("skills::versions %s: rc %d %s%s", id, rc, out, errb)
		}
		return l.Latest, l.Versions[0].Message
	}

	// A tag and a subfolder of a repository.
	repo := gitURL + "/collection.git"
	out, errb, rc := cli(repo + "#v1:skills")
	if rc != 0 || !strings.Contains(out, "registered docx version 1") || !strings.Contains(out, "registered pdf version 1  git "+repo+" ref=v1 commit="+v1) {
		t.Fatalf("add #v1: rc %d\n%s%s", rc, out, errb)
	}
	if got := fetch("pdf"); !strings.Contains(got, "# PDF v1") {
		t.Fatalf("skill::fetch pdf: %s", got)
	}
	n, msg := newest("pdf")
	prov, err := skilladd.ParseProvenance(msg)
	want := skilladd.Provenance{Kind: skilladd.KindGit, Source: repo, Ref: "v1", Commit: v1, Subdir: "skills", Path: "skills/pdf"}
	if n != 1 || err != nil || prov != want {
		t.Fatalf("version %d message %q: %+v %v", n, msg, prov, err)
	}
	// The default branch: pdf changed, docx did not.
	out, errb, rc = cli(repo+":skills", "--author", "ci")
	if rc != 0 || !strings.Contains(out, "registered pdf version 2") || !strings.Contains(out, "unchanged docx version 1") {
		t.Fatalf("add main: rc %d\n%s%s", rc, out, errb)
	}
	if got := fetch("pdf"); !strings.Contains(got, "# PDF v2") {
		t.Fatalf("skill::fetch pdf: %s", got)
	}
	if _, msg := newest("pdf"); !strings.Contains(msg, "commit="+head) {
		t.Fatalf("message %q", msg)
	}
	// An archive made by zip, into a namespace.
	out, errb, rc = cli("--namespace", "arch", filepath.Join(base, "zipped.zip"))
	if rc != 0 || !strings.Contains(out, "registered arch/zipped version 1  archive "+filepath.Join(base, "zipped.zip")) {
		t.Fatalf("add zip: rc %d\n%s%s", rc, out, errb)
	}
	if got := fetch("arch/zipped"); !strings.Contains(got, "From a zip.") {
		t.Fatalf("skill::fetch arch/zipped: %s", got)
	}

	// Hostile sources: refused, naming what and where; nothing registered,
	// not even the good SOURCE given beside them.
	before := listed()
	for _, tc := range []struct {
		args  []string
		parts []string
	}{
		{[]string{filepath.Join(base, "slip.zip")}, []string{`slip.zip: entry "../outside.txt": name has a ".." component, which leaves the archive's root (zip slip)`}},
		{[]string{gitURL + "/evil-link.git:skills"}, []string{"evil-link.git@", `entry "pdf/passwd": symbolic link to the absolute path "/etc/passwd" leaves the repository's root`}},
		{[]string{bomb}, []string{`bomb.zip: entry "zeros": file of 10737418240 bytes, the limit is 16777216 per file`}},
		{[]string{gitURL + "/evil-sub.git"}, []string{`entry "skills/sub/vendor": a git submodule`, `url "` + other + `" in .gitmodules`}},
		{[]string{"file://" + work}, []string{"file:// URLs are refused"}},
		{[]string{repo + "#--upload-pack=touch " + filepath.Join(base, "pwned")}, []string{`ref "--upload-pack=touch`, "starts with '-'"}},
		{[]string{gitURL + "/bad-id.git:skills"}, []string{`skills/Not_An_Id/SKILL.md: folder name "Not_An_Id" must be lowercase letters`}},
		{[]string{"--namespace", "good", filepath.Join(base, "held"), gitURL + "/evil-link.git:skills"}, []string{"evil-link.git"}},
	} {
		out, errb, rc := cli(tc.args...)
		if rc != 1 || out != "" {
			t.Fatalf("skills add %v: rc %d, want 1\n%s%s", tc.args, rc, out, errb)
		}
		for _, p := range tc.parts {
			if !strings.Contains(errb, p) {
				t.Fatalf("skills add %v: stderr lacks %q:\n%s", tc.args, p, errb)
			}
		}
	}
	if after := listed(); !slices.Equal(before, after) {
		t.Fatalf("refused sources changed the registry: %v → %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(base, "pwned")); err == nil {
		t.Fatal("--upload-pack ran")
	}

	// A registry refusal part-way: another connection holds held/x, so
	// held/a (registered first) is undone.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder := iii.RegisterWorker(url, iii.WithName("holder"))
	defer holder.Close()
	if err := holder.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsRegister, Data: json.RawMessage(`{"id":"held/x","skill":"# Held\n"}`)}); err != nil {
		t.Fatal(err)
	}
	out, errb, rc = cli("--namespace", "held", "--owner-wait", "300ms", filepath.Join(base, "held"))
	t.Logf("a refusal part-way:\n%s%s", out, errb)
	if rc != 1 || !strings.Contains(out, "undone held/a") || !strings.Contains(errb, "skill held/x: FORBIDDEN") ||
		!strings.Contains(errb, "registered before it were undone") {
		t.Fatalf("held: rc %d\n%s%s", rc, out, errb)
	}
	if _, errb, rc := trigger(rules.FnSkillFetch, `{"uri":"iii://held/a"}`); rc != 1 || !strings.Contains(errb, "not found") {
		t.Fatalf("held/a after the undo: rc %d %s", rc, errb)
	}
	if got := fetch("held/x"); !strings.Contains(got, "# Held") {
		t.Fatalf("held/x: %s", got)
	}
}
