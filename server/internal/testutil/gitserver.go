package testutil

import (
	"encoding/pem"
	"io"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireGitEnv, when set (make test-go sets it once directory-deps
// installed git), turns NeedGit's skip into a failure.
const RequireGitEnv = "SKILLS_TEST_REQUIRE_GIT"

// NeedGit skips a test without git and git-http-backend ("not run"),
// unless RequireGitEnv is set: there a missing git is a failure.
func NeedGit(tb testing.TB) {
	tb.Helper()
	missing := ""
	if _, err := exec.LookPath("git"); err != nil {
		missing = "git is not installed"
	} else if out, err := exec.Command("git", "--exec-path").Output(); err != nil {
		missing = "git --exec-path: " + err.Error()
	} else if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")); err != nil {
		missing = "git-http-backend is missing: " + err.Error()
	}
	switch {
	case missing == "":
	case os.Getenv(RequireGitEnv) != "":
		tb.Fatal(missing + " (make directory-deps installs it)")
	default:
		tb.Skip("not run: " + missing + " (make directory-deps installs it)")
	}
}

// Git runs the real git in dir with a fixed identity and main as the
// default branch, and returns its output; it fails the test on error.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid",
		"-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// GitServer serves every bare repository under root (root/NAME.git is
// URL/NAME.git) through the real git-http-backend behind an HTTPS test
// server, and returns the base URL and the environment a git client
// needs to trust its certificate (GIT_SSL_CAINFO).
func GitServer(tb testing.TB, root string) (baseURL string, env []string) {
	tb.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		tb.Fatal("git --exec-path: ", err)
	}
	srv := httptest.NewTLSServer(&cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
		Stderr: io.Discard, // "Not a git repository" for the tests' missing ones
	})
	tb.Cleanup(srv.Close)
	ca := filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		tb.Fatal(err)
	}
	return srv.URL, []string{"GIT_SSL_CAINFO=" + ca}
}

// RequireArchiversEnv, when set (make test-go sets it once archive-deps
// installed zip and unzip), turns NeedArchivers' skip into a failure.
const RequireArchiversEnv = "SKILLS_TEST_REQUIRE_ARCHIVERS"

// NeedArchivers skips a test whose archivers (zip, unzip, tar) are not
// installed ("not run"), unless RequireArchiversEnv is set: there a
// missing tool is a failure.
func NeedArchivers(tb testing.TB, tools ...string) {
	tb.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := "not run: " + tool + " is not installed (make archive-deps installs it)"
			if os.Getenv(RequireArchiversEnv) != "" {
				tb.Fatal(msg)
			}
			tb.Skip(msg)
		}
	}
}
