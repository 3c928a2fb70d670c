package skilladd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSource(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "skills")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "pdf-tools.tar.gz")
	if err := os.WriteFile(archive, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg, forge string
		want       Source
	}{
		{"anthropics/skills", "", Source{Kind: KindGit, URL: "https://github.com/anthropics/skills", Shown: "https://github.com/anthropics/skills", Name: "skills"}},
		{"anthropics/skills#v1.2:skills/pdf", "", Source{Kind: KindGit, URL: "https://github.com/anthropics/skills", Shown: "https://github.com/anthropics/skills", Ref: "v1.2", Subdir: "skills/pdf", Name: "skills"}},
		{"o/r:sub", "https://gitlab.example/", Source{Kind: KindGit, URL: "https://gitlab.example/o/r", Shown: "https://gitlab.example/o/r", Subdir: "sub", Name: "r"}},
		{"o/r", "git@gitlab.example:", Source{Kind: KindGit, URL: "git@gitlab.example:o/r", Shown: "git@gitlab.example:o/r", Name: "r"}},
		{"https://host:8443/o/r.git:skills", "", Source{Kind: KindGit, URL: "https://host:8443/o/r.git", Shown: "https://host:8443/o/r.git", Subdir: "skills", Name: "r"}},
		{"https://x-token:s3cr3t@host/o/r#main", "", Source{Kind: KindGit, URL: "https://x-token:s3cr3t@host/o/r", Shown: "https://host/o/r", Ref: "main", Name: "r"}},
		{"ssh://git@host/o/r.git#0123456789abcdef0123456789abcdef01234567", "", Source{Kind: KindGit, URL: "ssh://git@host/o/r.git", Shown: "ssh://git@host/o/r.git", Ref: "0123456789abcdef0123456789abcdef01234567", Name: "r"}},
		{"git@github.com:o/r.git#dev:a/b", "", Source{Kind: KindGit, URL: "git@github.com:o/r.git", Shown: "git@github.com:o/r.git", Ref: "dev", Subdir: "a/b", Name: "r"}},
		{"git://host/r", "", Source{Kind: KindGit, URL: "git://host/r", Shown: "git://host/r", Name: "r"}},
		{folder, "", Source{Kind: KindFolder, Path: folder, Name: "skills"}},
		{folder + ":pdf", "", Source{Kind: KindFolder, Path: folder, Subdir: "pdf", Name: "skills"}},
		{archive, "", Source{Kind: KindArchive, Path: archive, Name: "pdf-tools"}},
		{archive + ":pdf", "", Source{Kind: KindArchive, Path: archive, Subdir: "pdf", Name: "pdf-tools"}},
		{repo + "#main:skills", "", Source{Kind: KindGit, Path: repo, URL: repo, Shown: repo, Ref: "main", Subdir: "skills", Name: "repo"}},
	} {
		got, err := ParseSource(tc.arg, tc.forge)
		if err != nil {
			t.Errorf("ParseSource(%q): %v", tc.arg, err)
			continue
		}
		tc.want.Arg = strings.Replace(tc.arg, "x-token:s3cr3t@", "", 1)
		if got != tc.want {
			t.Errorf("ParseSource(%q)\n got %+v\nwant %+v", tc.arg, got, tc.want)
		}
	}
}

// A token in a URL reaches git only: never a message, a report or a
// version.
func TestTokensAreNeverShown(t *testing.T) {
	for _, arg := range []string{"https://x-token:s3cr3t@host/o/r#--bad", "ssh://git:s3cr3t@host/o/r#--bad", "https://s3cr3t@host/o/r#--bad"} {
		src, err := ParseSource(arg, "")
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(src.Arg, "s3cr3t") {
			t.Fatalf("%q: %v (Arg %q)", arg, err, src.Arg)
		}
	}
	_, err := Plan(t.Context(), []string{"https://x-token:s3cr3t@127.0.0.1:1/o/r"}, Options{})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "https://127.0.0.1:1/o/r") {
		t.Fatalf("Plan: %v", err)
	}
}

func TestParseSourceRefuses(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "a.zip")
	if err := os.WriteFile(archive, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "SKILL.md")
	if err := os.WriteFile(md, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want string }{
		{md, "is a markdown file: give the folder that holds it"},
		{"", "an empty SOURCE"},
		{"--upload-pack=touch /tmp/x", "starts with '-'"},
		{"file:///etc", "file:// URLs are refused"},
		{"FILE:///etc", "file:// URLs are refused"},
		{"ext::sh -c touch% /tmp/pwned", `the git transport "ext::" is refused`},
		{"fd::17", `the git transport "fd::" is refused`},
		{"ftp://host/r", `the URL scheme "ftp://" is refused`},
		{"https://host/o/r#--upload-pack=touch /tmp/x", `ref "--upload-pack=touch /tmp/x" starts with '-'`},
		{"o/r#main --upload-pack=x", "is not a valid git ref name"},
		{"o/r#a..b", "is not a valid git ref name"},
		{"o/r#refs/heads/x.lock", "is not a valid git ref name"},
		{"o/r#@{-1}", "is not a valid git ref name"},
		{"o/r:../etc", `subfolder "../etc"`},
		{"o/r:/etc", `subfolder "/etc"`},
		{"https://host", "is not a repository URL"},
		{"https://host/o/r?x=1", "with a query"},
		{"git@host:-oProxyCommand=x", "is not a repository address"},
		{"no-such-thing", "is no existing folder or archive"},
		{"a\x00b", "control character"},
		{archive + "#v1", "is a file, not a repository"},
		{dir + "#v1", "is not a git repository"},
		{"o/r", "forge \"ftp-ish\""},
	} {
		forge := ""
		if tc.arg == "o/r" {
			forge = "ftp-ish"
		}
		if _, err := ParseSource(tc.arg, forge); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSource(%q): %v, want %q", tc.arg, err, tc.want)
		}
	}
}

func TestProvenanceLine(t *testing.T) {
	for _, p := range []Provenance{
		{Kind: KindGit, Source: "https://github.com/o/r", Ref: "v1", Commit: strings.Repeat("a", 40), Subdir: "skills", Path: "skills/pdf"},
		{Kind: KindArchive, Source: "/home/me/my skills.zip", SHA256: strings.Repeat("b", 64), Path: "pdf"},
		{Kind: KindFolder, Source: `/odd "dir"/x=y`, Path: "a b"},
		{Kind: KindFolder, Source: "/srv/skills/pdf"},
	} {
		line := p.Line()
		if strings.Contains(line, "\n") {
			t.Fatalf("two lines: %q", line)
		}
		got, err := ParseProvenance("my message\n\n" + line)
		if err != nil || got != p {
			t.Fatalf("ParseProvenance(%q) = %+v, %v; want %+v", line, got, err, p)
		}
	}
	want := "skills add: git https://github.com/o/r ref=v1 commit=" + strings.Repeat("a", 40) + " subdir=skills path=skills/pdf"
	if got := (Provenance{Kind: KindGit, Source: "https://github.com/o/r", Ref: "v1", Commit: strings.Repeat("a", 40), Subdir: "skills", Path: "skills/pdf"}).Line(); got != want {
		t.Fatalf("Line() = %q, want %q", got, want)
	}
	if _, err := ParseProvenance("rollback to version 1"); err == nil {
		t.Fatal("a message without the line parsed")
	}
}

// FuzzParseSource: no argument panics ParseSource, and whatever it takes
// for git can never reach git as an option or a program-running transport.
func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"o/r", "o/r#v1:s", "https://h/o/r#x:y", "git@h:o/r", "ext::sh", "-x", "file:///x", "https://u:p@h/r", "o/r#--upload-pack=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		src, err := ParseSource(arg, "")
		if err != nil || src.Kind != KindGit {
			return
		}
		if strings.HasPrefix(src.URL, "-") || strings.HasPrefix(src.Ref, "-") || transport.MatchString(src.URL) ||
			strings.HasPrefix(strings.ToLower(src.URL), "file:") || checkRef(src.Ref) != nil {
			t.Fatalf("ParseSource(%q) = %+v", arg, src)
		}
	})
}

// An http(s) URL whose path ends in an archive's extension is an archive
// to download, not a repository: the registry's own download paths
// (…/pdf@sha256:<hex>.zip: a ':' and an '@' in the name) included; a
// signed URL's query is sent, never shown.
func TestParseArchiveURL(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		arg  string
		want Source
	}{
		{"https://host/archive/acme/pdf.zip", Source{Kind: KindArchive, URL: "https://host/archive/acme/pdf.zip", Shown: "https://host/archive/acme/pdf.zip", Name: "pdf"}},
		{"http://127.0.0.1:49135/.well-known/agent-skills/pdf@" + pin + ".zip", Source{Kind: KindArchive,
			URL: "http://127.0.0.1:49135/.well-known/agent-skills/pdf@" + pin + ".zip", Shown: "http://127.0.0.1:49135/.well-known/agent-skills/pdf@" + pin + ".zip", Name: "pdf"}},
		{"https://host/archive/pdf@production.tar.gz", Source{Kind: KindArchive, URL: "https://host/archive/pdf@production.tar.gz", Shown: "https://host/archive/pdf@production.tar.gz", Name: "pdf"}},
		{"https://host/releases/skills.tgz:pdf", Source{Kind: KindArchive, URL: "https://host/releases/skills.tgz", Shown: "https://host/releases/skills.tgz", Subdir: "pdf", Name: "skills"}},
		{"https://u:s3cr3t@host/x/pdf.tar?sig=k3y", Source{Kind: KindArchive, URL: "https://u:s3cr3t@host/x/pdf.tar?sig=k3y", Shown: "https://host/x/pdf.tar?…", Name: "pdf", Arg: "https://host/x/pdf.tar?…"}},
	} {
		got, err := ParseSource(tc.arg, "")
		if err != nil {
			t.Errorf("ParseSource(%q): %v", tc.arg, err)
			continue
		}
		if tc.want.Arg == "" {
			tc.want.Arg = tc.arg
		}
		if got != tc.want {
			t.Errorf("ParseSource(%q)\n got %+v\nwant %+v", tc.arg, got, tc.want)
		}
	}
	if _, err := ParseSource("https://host/pdf.zip#main", ""); err == nil || !strings.Contains(err.Error(), "#main asks for a git ref, but https://host/pdf.zip is an archive to download") {
		t.Fatalf("an archive URL with a #ref: %v", err)
	}
	// Without an archive's extension an https URL is still a repository.
	if got, err := ParseSource("https://host/o/skills.git", ""); err != nil || got.Kind != KindGit {
		t.Fatalf("a repository URL: %+v %v", got, err)
	}
}
