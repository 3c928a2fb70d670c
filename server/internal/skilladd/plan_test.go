package skilladd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/testutil"
)

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\nlicense: MIT\n---\n" + body
}

// put writes files (path → content) under dir.
func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func ids(p []Planned) []string {
	var out []string
	for _, pl := range p {
		for _, s := range pl.Skills {
			out = append(out, s.ID)
		}
	}
	return out
}

func planOK(t *testing.T, o Options, args ...string) []Planned {
	t.Helper()
	p, err := Plan(context.Background(), args, o)
	if err != nil {
		t.Fatalf("Plan(%q): %v", args, err)
	}
	return p
}

func planFails(t *testing.T, o Options, args []string, parts ...string) {
	t.Helper()
	_, err := Plan(context.Background(), args, o)
	if err == nil {
		t.Fatalf("Plan(%q) passed; want a refusal with %q", args, parts)
	}
	t.Logf("refused as expected:\n%v", err)
	for _, part := range parts {
		if !strings.Contains(err.Error(), part) {
			t.Fatalf("Plan(%q): %v\nlacks %q", args, err, part)
		}
	}
}

// A folder of skills is read as the server reads --skills-folder: Agent
// Skills folders and markdown skills, hidden files ignored, prompts noted
// and left out; the body registered is SKILL.md without its frontmatter.
func TestPlanFolder(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"pdf/SKILL.md":                skillMD("pdf", "Read PDF files.", "# PDF\n\nRead them.\n"),
		"team/docx/SKILL.md":          skillMD("docx", "Word files.", "# DOCX\n"),
		"notes/tips.md":               "# Tips\n\nA markdown skill.\n",
		"iii/prompts/explain.md":      "---\ndescription: Explain\n---\nExplain it.\n",
		".git/config":                 "x",
		"pdf/.DS_Store":               "x",
		"team/docx/scripts/.keep.swp": "x",
	})
	p := planOK(t, Options{}, dir)
	if got := ids(p); !slices.Equal(got, []string{"notes/tips", "pdf", "team/docx"}) {
		t.Fatalf("ids %v", got)
	}
	pdf := p[0].Skills[1]
	if pdf.Body != "# PDF\n\nRead them.\n" || pdf.Provenance != (Provenance{Kind: KindFolder, Source: dir, Path: "pdf"}) {
		t.Fatalf("pdf: %q %+v", pdf.Body, pdf.Provenance)
	}
	if !slices.Equal(pdf.LeftOut, []string{"frontmatter description, license (the description served becomes the body's first paragraph)"}) {
		t.Fatalf("left out: %v", pdf.LeftOut)
	}
	if pdf.Message != "skills add: folder "+dir+" path=pdf" {
		t.Fatalf("message %q", pdf.Message)
	}
	if len(p[0].Notes) != 1 || !strings.Contains(p[0].Notes[0], "iii/prompts/explain.md: prompt explain is not added") {
		t.Fatalf("notes %v", p[0].Notes)
	}
	// One skill's folder: named after itself; Namespace and Message.
	p = planOK(t, Options{Namespace: "acme", Message: "from the team"}, filepath.Join(dir, "pdf"))
	if s := p[0].Skills[0]; s.ID != "acme/pdf" || s.Provenance.Source != filepath.Join(dir, "pdf") || s.Provenance.Path != "" ||
		s.Message != "from the team\n\nskills add: folder "+filepath.Join(dir, "pdf") {
		t.Fatalf("%+v", s)
	}
	// :subfolder of a folder.
	if got := ids(planOK(t, Options{}, dir+":team")); !slices.Equal(got, []string{"docx"}) {
		t.Fatalf("%v", got)
	}
}

// What a published skill cannot hold is refused or listed; problems the
// server would list refuse the whole SOURCE, each named with its path;
// --only narrows the source.
func TestPlanRefusals(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"pdf/SKILL.md":           skillMD("pdf", "Read PDF files.", "# PDF\n"),
		"pdf/scripts/extract.py": "print(1)\n",
		"Bad_Name/SKILL.md":      skillMD("Bad_Name", "x", "# Bad\n"),
		"ok/SKILL.md":            skillMD("ok", "Fine.", "# OK\n"),
		"empty/SKILL.md":         skillMD("empty", "Frontmatter only.", ""),
		"bundle/skill.toml":      "name = \"x\"\n",
	})
	planFails(t, Options{}, []string{dir},
		dir+": refused, nothing from it is registered",
		`Bad_Name/SKILL.md: folder name "Bad_Name" must be lowercase letters`,
		"pdf/SKILL.md: skill pdf has 1 supporting file(s) (scripts/extract.py)", "give --skip-files",
		"empty/SKILL.md: skill empty: skill must be non-empty (skills::register's rule)",
		"bundle/skill.toml: Skills Protocol bundle rejected: skills add registers Agent Skills and markdown skills, not Skills Protocol bundles",
		"(SOURCE:subfolder) or the skills (--only ID,…)")
	p := planOK(t, Options{Only: []string{"ok", "pdf"}, SkipFiles: true}, dir)
	if got := ids(p); !slices.Equal(got, []string{"ok", "pdf"}) {
		t.Fatalf("%v", got)
	}
	if s := p[0].Skills[1]; !slices.Contains(s.LeftOut, "file scripts/extract.py") {
		t.Fatalf("left out %v", s.LeftOut)
	}
	planFails(t, Options{Only: []string{"nope"}}, []string{dir}, "--only nope: the source serves no skill nope")
	// The same id from two SOURCEs; a message over the registry's cap.
	planFails(t, Options{Only: []string{"ok"}}, []string{dir, filepath.Join(dir, "ok")}, "skill ok is also given by "+dir)
	planFails(t, Options{Only: []string{"ok"}, Message: strings.Repeat("m", 4096)}, []string{dir}, "the registry's limit is 4096")
	// A symlink leaving a skills folder: the server lists it as a
	// problem, so the SOURCE is refused.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "ok", "passwd.md")); err != nil {
		t.Fatal(err)
	}
	planFails(t, Options{Only: []string{"ok"}}, []string{dir}, "ok/passwd.md: path escapes the folder")
	planFails(t, Options{}, []string{filepath.Join(dir, "ok")}, `entry "passwd.md": symbolic link to the absolute path "/etc/passwd" leaves the folder's root`)
}

// Archives made by Debian's zip and tar: a folder of skills, one skill
// (named after the archive, or after the :subfolder), the flat layout of
// the discovery RFC; hostile ones refused with the archive and entry
// named.
func TestPlanArchives(t *testing.T) {
	testutil.NeedArchivers(t, "zip", "tar")
	base := t.TempDir()
	put(t, base, map[string]string{
		"src/pdf/SKILL.md":  skillMD("pdf", "Read PDF files.", "# PDF\n"),
		"src/docx/SKILL.md": skillMD("docx", "Word files.", "# DOCX\n"),
		"out.txt":           "outside\n",
	})
	run(t, filepath.Join(base, "src"), "zip", "-qr", "../both.zip", "pdf", "docx")
	run(t, filepath.Join(base, "src"), "tar", "-czf", "../both.tar.gz", "pdf", "docx")
	run(t, filepath.Join(base, "src", "pdf"), "tar", "-czf", "../../pdf.tgz", ".")
	run(t, filepath.Join(base, "src", "pdf"), "zip", "-q", "../../slip.zip", "SKILL.md", "../../out.txt")
	for _, tc := range []struct {
		arg  string
		want []string
		path string
	}{
		{"both.zip", []string{"docx", "pdf"}, "pdf"},
		{"both.tar.gz", []string{"docx", "pdf"}, "pdf"},
		{"both.zip:pdf", []string{"pdf"}, "pdf"},
		{"pdf.tgz", []string{"pdf"}, ""},
	} {
		p := planOK(t, Options{}, filepath.Join(base, tc.arg))
		if got := ids(p); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: %v", tc.arg, got)
		}
		s := p[0].Skills[len(p[0].Skills)-1]
		if s.Provenance.Kind != KindArchive || len(s.Provenance.SHA256) != 64 || s.Provenance.Path != tc.path || s.Body != "# PDF\n" {
			t.Fatalf("%s: %+v %q", tc.arg, s.Provenance, s.Body)
		}
	}
	planFails(t, Options{}, []string{filepath.Join(base, "slip.zip")},
		filepath.Join(base, "slip.zip")+`: entry "../../out.txt": name has a ".." component, which leaves the archive's root (zip slip)`)
	// A one-skill archive whose name is not its skill's: the folder rules
	// say so.
	if err := os.Rename(filepath.Join(base, "pdf.tgz"), filepath.Join(base, "PDF Tools.tgz")); err != nil {
		t.Fatal(err)
	}
	planFails(t, Options{}, []string{filepath.Join(base, "PDF Tools.tgz")}, `folder name "PDF Tools" must be lowercase letters`)
}

// An archive URL is downloaded (over a real listener) and read through the
// archive rules like a file; its provenance is the URL and the archive's
// sha256. A refusal of the server names its status and its plain-text
// reason; a body over --max-download, a redirect elsewhere than http(s)
// and a zip slip are refused.
func TestPlanArchiveURLs(t *testing.T) {
	testutil.NeedArchivers(t, "zip", "tar")
	base := t.TempDir()
	put(t, base, map[string]string{
		"src/pdf/SKILL.md":  skillMD("pdf", "Read PDF files.", "# PDF\n"),
		"src/docx/SKILL.md": skillMD("docx", "Word files.", "# DOCX\n"),
		"out.txt":           "outside\n",
	})
	run(t, filepath.Join(base, "src"), "zip", "-qr", "../both.zip", "pdf", "docx")
	run(t, filepath.Join(base, "src", "pdf"), "tar", "-czf", "../../pdf.tgz", ".")
	run(t, filepath.Join(base, "src", "pdf"), "zip", "-q", "../../slip.zip", "SKILL.md", "../../out.txt")
	mux := http.NewServeMux()
	serveFile := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(base, name)) }
	}
	mux.HandleFunc("/dl/both.zip", serveFile("both.zip"))
	mux.HandleFunc("/dl/pdf@3.tgz", serveFile("pdf.tgz"))
	mux.HandleFunc("/dl/slip.zip", serveFile("slip.zip"))
	mux.HandleFunc("/dl/gone.zip", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no skill gone is served here", http.StatusNotFound)
	})
	mux.HandleFunc("/dl/away.zip", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://elsewhere/x.zip", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	p := planOK(t, Options{}, srv.URL+"/dl/both.zip")
	if got := ids(p); !slices.Equal(got, []string{"docx", "pdf"}) {
		t.Fatalf("ids %v", got)
	}
	p = append(p, planOK(t, Options{}, srv.URL+"/dl/pdf@3.tgz")...) // one skill, named after the file without its selector
	if got := ids(p); !slices.Equal(got, []string{"docx", "pdf", "pdf"}) {
		t.Fatalf("ids %v", got)
	}
	for _, pl := range p {
		for _, s := range pl.Skills {
			if s.Provenance.Kind != KindArchive || !strings.HasPrefix(s.Provenance.Source, srv.URL+"/dl/") || len(s.Provenance.SHA256) != 64 {
				t.Fatalf("%s: provenance %+v", s.ID, s.Provenance)
			}
		}
	}
	planFails(t, Options{}, []string{srv.URL + "/dl/gone.zip"}, "downloading "+srv.URL+"/dl/gone.zip: 404 Not Found: no skill gone is served here")
	planFails(t, Options{MaxDownload: 100}, []string{srv.URL + "/dl/both.zip"}, "over 100 bytes (--max-download)")
	planFails(t, Options{}, []string{srv.URL + "/dl/away.zip"}, "a redirect to a ftp:// URL is refused")
	planFails(t, Options{}, []string{srv.URL + "/dl/slip.zip"}, `entry "../../out.txt": name has a ".." component`)
}
