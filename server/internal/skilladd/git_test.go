package skilladd

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// gitRepos are the repositories the git tests serve.
type gitRepos struct {
	url      string   // base URL of the server
	env      []string // for git clients (the server's CA)
	work     string   // the working copy of collection.git
	v1, head string   // commits of collection.git: tag v1, main
}

// makeRepo commits files (path → content; content "->target" is a
// symlink) in a new working copy under base/name and publishes it bare
// as root/name.git; it returns the working copy.
func makeRepo(t *testing.T, base, root, name string, files map[string]string) string {
	t.Helper()
	work := filepath.Join(base, name)
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, work, "init", "-q")
	testutil.Git(t, work, "add", "-A")
	testutil.Git(t, work, "commit", "-q", "-m", "skills")
	return work
}

func publish(t *testing.T, work, root, name string) {
	t.Helper()
	bare := filepath.Join(root, name+".git")
	testutil.Git(t, filepath.Dir(work), "clone", "-q", "--bare", work, bare)
	// Fetching a commit by its id (#<sha>) is what GitHub allows.
	testutil.Git(t, bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
}

func serveRepos(t *testing.T) gitRepos {
	t.Helper()
	testutil.NeedGit(t)
	base, root := t.TempDir(), t.TempDir()
	var r gitRepos
	r.url, r.env = testutil.GitServer(t, root)

	r.work = makeRepo(t, base, root, "collection", map[string]string{
		"README.md":               "# A collection\n",
		"skills/pdf/SKILL.md":     skillMD("pdf", "Read PDF files.", "# PDF v1\n"),
		"skills/docx/SKILL.md":    skillMD("docx", "Word files.", "# DOCX\n"),
		"skills/docx/.github/x":   "hidden",
		"skills/pdf/shared.md":    "->../docx/SKILL.md", // a link inside the repository
		"skills/pdf/.hidden-link": "->/etc/passwd",      // hidden: never read
	})
	testutil.Git(t, r.work, "tag", "v1")
	r.v1 = strings.TrimSpace(testutil.Git(t, r.work, "rev-parse", "HEAD"))
	put(t, r.work, map[string]string{"skills/pdf/SKILL.md": skillMD("pdf", "Read PDF files.", "# PDF v2\n")})
	testutil.Git(t, r.work, "commit", "-q", "-am", "v2")
	r.head = strings.TrimSpace(testutil.Git(t, r.work, "rev-parse", "HEAD"))
	publish(t, r.work, root, "collection")

	publish(t, makeRepo(t, base, root, "one-skill", map[string]string{"SKILL.md": skillMD("one-skill", "One.", "# One\n")}), root, "one-skill")
	publish(t, makeRepo(t, base, root, "evil-link", map[string]string{
		"skills/pdf/SKILL.md": skillMD("pdf", "x", "# PDF\n"),
		"skills/pdf/passwd":   "->/etc/passwd",
	}), root, "evil-link")
	publish(t, makeRepo(t, base, root, "bad-id", map[string]string{"skills/Bad_Name/SKILL.md": skillMD("Bad_Name", "x", "# Bad\n")}), root, "bad-id")
	// A submodule pointing at a local path.
	other := makeRepo(t, base, root, "other", map[string]string{"x.md": "# x\n"})
	sub := makeRepo(t, base, root, "evil-sub", map[string]string{"skills/pdf/SKILL.md": skillMD("pdf", "x", "# PDF\n")})
	testutil.Git(t, sub, "submodule", "add", "-q", other, "skills/pdf/vendor")
	testutil.Git(t, sub, "commit", "-q", "-m", "submodule")
	publish(t, sub, root, "evil-sub")
	// 2 MiB that do not compress, for the download cap.
	noise := make([]byte, 2<<20)
	_, _ = rand.Read(noise)
	publish(t, makeRepo(t, base, root, "big", map[string]string{"pdf/SKILL.md": skillMD("pdf", "x", "# PDF\n"), "pdf/.noise": string(noise)}), root, "big")
	return r
}

// Skills from a real git server (git-http-backend over HTTPS): #ref (tag,
// branch, commit), :subfolder, a repository that is one skill, a local
// repository named by its path; the provenance names the commit.
func TestPlanGit(t *testing.T) {
	r := serveRepos(t)
	o := Options{GitEnv: r.env, SkipFiles: true}
	repo := r.url + "/collection.git"

	p := planOK(t, o, repo+"#v1:skills")
	if got := ids(p); !slices.Equal(got, []string{"docx", "pdf"}) {
		t.Fatalf("ids %v", got)
	}
	pdf := p[0].Skills[1]
	if pdf.Body != "# PDF v1\n" {
		t.Fatalf("body at v1: %q", pdf.Body)
	}
	want := Provenance{Kind: KindGit, Source: repo, Ref: "v1", Commit: r.v1, Subdir: "skills", Path: "skills/pdf"}
	if pdf.Provenance != want {
		t.Fatalf("provenance %+v\nwant %+v", pdf.Provenance, want)
	}
	if pdf.Message != "skills add: git "+repo+" ref=v1 commit="+r.v1+" subdir=skills path=skills/pdf" {
		t.Fatalf("message %q", pdf.Message)
	}
	if !slices.Contains(pdf.LeftOut, "file shared.md") {
		t.Fatalf("the link inside the repository, kept as a file: %v", pdf.LeftOut)
	}
	// The default branch; a commit by its id; a branch.
	for _, tc := range []struct{ arg, body, commit string }{
		{repo + ":skills", "# PDF v2\n", r.head},
		{repo + "#" + r.v1 + ":skills", "# PDF v1\n", r.v1},
		{repo + "#main:skills", "# PDF v2\n", r.head},
	} {
		p := planOK(t, Options{GitEnv: r.env, SkipFiles: true, Only: []string{"pdf"}}, tc.arg)
		s := p[0].Skills[0]
		if s.ID != "pdf" || s.Body != tc.body || s.Provenance.Commit != tc.commit || s.Provenance.Path != "skills/pdf" {
			t.Fatalf("%s: %+v %q", tc.arg, s.Provenance, s.Body)
		}
	}
	// A repository that is one skill is named after the repository.
	if got := ids(planOK(t, o, r.url+"/one-skill.git")); !slices.Equal(got, []string{"one-skill"}) {
		t.Fatalf("%v", got)
	}
	// A local repository named by its path: cloned (file:// allowed for it).
	p = planOK(t, o, r.work+"#v1:skills/docx")
	if s := p[0].Skills[0]; s.ID != "docx" || s.Provenance.Source != r.work || s.Provenance.Commit != r.v1 {
		t.Fatalf("%+v", s)
	}
	// The whole repository: README.md is no valid skill id, so the
	// SOURCE is refused, with the way out named.
	planFails(t, o, []string{repo}, `README.md: invalid id "README"`, "name its folder (SOURCE:subfolder)")
}

// Hostile repositories and arguments: each refused, naming what and
// where, before anything is registered.
func TestPlanGitRefusals(t *testing.T) {
	r := serveRepos(t)
	o := Options{GitEnv: r.env}
	planFails(t, o, []string{r.url + "/evil-link.git:skills"},
		r.url+"/evil-link.git@", `:skills: entry "pdf/passwd": symbolic link to the absolute path "/etc/passwd" leaves the repository's root`)
	// The root is the :subfolder: a link out of it leaves the root.
	planFails(t, o, []string{r.url + "/collection.git:skills/pdf"}, `entry "shared.md": symbolic link to "../docx/SKILL.md" leaves the repository's root`)
	planFails(t, o, []string{r.url + "/evil-sub.git"},
		`entry "skills/pdf/vendor": a git submodule (commit `, `url "`+filepath.Join(filepath.Dir(r.work), "other")+`" in .gitmodules): submodules are never fetched`)
	planFails(t, o, []string{r.url + "/bad-id.git:skills"}, `skills/Bad_Name/SKILL.md: folder name "Bad_Name" must be lowercase letters`)
	planFails(t, o, []string{r.url + "/collection.git#no-such-tag"}, `the repository has no ref "no-such-tag"`)
	planFails(t, o, []string{r.url + "/collection.git#v1:nope"}, "the repository has no folder nope at commit "+r.v1)
	planFails(t, o, []string{r.url + "/missing.git"}, "cannot fetch "+r.url+"/missing.git")
	planFails(t, o, []string{r.url + "/collection.git#--upload-pack=touch /tmp/pwned"}, `starts with '-': refused so that git never reads it as an option`)
	planFails(t, o, []string{"file://" + filepath.Dir(r.work) + "/collection"}, "file:// URLs are refused")
	planFails(t, Options{GitEnv: r.env, MaxDownload: 512 << 10}, []string{r.url + "/big.git"}, "the repository is larger than 524288 bytes at depth 1")
	// The submodule's local path is never fetched: no file:// for remote
	// repositories, whatever their .gitmodules say (nothing fetches
	// submodules at all; this checks git's own refusal stays on).
	g := &gitRun{git: "git", repo: t.TempDir()}
	if _, err := g.output(t.Context(), "init", "--bare", "--quiet"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.output(t.Context(), "fetch", "--depth=1", "--", r.work, "HEAD"); err == nil || !strings.Contains(err.Error(), "transport 'file' not allowed") {
		t.Fatalf("fetch from a local path without allowFile: %v", err)
	}
}
