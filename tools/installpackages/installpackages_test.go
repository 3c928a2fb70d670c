package installpackages

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// setup is a PATH with the commands the script uses and, from stubs, the
// given stand-ins (name → shell body), plus a file the stand-ins log to.
func setup(t *testing.T, stubs map[string]string) (path, calls, deps string) {
	t.Helper()
	// Not t.TempDir: its parent is 0700, and the not-root cases run as
	// another uid.
	dir, err := os.MkdirTemp("", "install-packages-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "mkdir", "rm", "id", "dirname", "env", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("the script needs %s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	calls = filepath.Join(dir, "calls")
	for name, body := range stubs {
		script := "#!" + filepath.Join(bin, "bash") + "\necho \"" + name + " $*\" >>" + calls + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Everything must be reachable by another uid (the not-root cases).
	for _, d := range []string{dir, bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(calls, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(calls, 0o666); err != nil {
		t.Fatal(err)
	}
	deps = filepath.Join(dir, "deps")
	if err := os.Mkdir(deps, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(deps, 0o777); err != nil {
		t.Fatal(err)
	}
	return bin, calls, deps
}

// run runs the script with PATH and DEPS_DIR, as uid when uid >= 0 (root
// only), stdin not a terminal; it returns its output and exit status.
func run(t *testing.T, path, deps string, uid int, args ...string) (string, int) {
	t.Helper()
	script, err := filepath.Abs("../../scripts/install-packages")
	if err != nil {
		t.Fatal(err)
	}
	// The script must be readable by uid: copy it where it is.
	copyPath := filepath.Join(filepath.Dir(path), "install-packages")
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(path, "bash"), append([]string{copyPath}, args...)...)
	cmd.Env = []string{"PATH=" + path, "DEPS_DIR=" + deps}
	cmd.Stdin = nil // /dev/null: no terminal
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("install-packages: %v\n%s", err, out)
	return "", 0
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// asOther is a uid that is not root for the cases about sudo: the test's
// own when it is not root, else an unused one (switching needs root).
func asOther(t *testing.T) int {
	if os.Geteuid() != 0 {
		return -1
	}
	return 61235
}

// Where install-packages cannot install — no apt-get, not root without
// sudo, a sudo that needs a password with no terminal — it says "not run"
// naming the packages, records them for the tests, and exits 0.
func TestNotRunWhereItCannotInstall(t *testing.T) {
	for _, c := range []struct {
		name  string
		stubs map[string]string
		uid   int
		why   string
	}{
		{"no apt-get", nil, -1, "no apt-get here to install chromium fonts-liberation"},
		{"no sudo", map[string]string{"apt-get": "exit 0"}, asOther(t), "not root, and no sudo to run apt-get install chromium fonts-liberation"},
		{"sudo wants a password", map[string]string{"apt-get": "exit 0", "sudo": "exit 1"}, asOther(t),
			"sudo needs a password to run apt-get install chromium fonts-liberation, and there is no terminal to ask on"},
	} {
		path, calls, deps := setup(t, c.stubs)
		out, rc := run(t, path, deps, c.uid, "web-deps", "chromium", "fonts-liberation")
		want := "web-deps: not run: " + c.why + "; install chromium fonts-liberation with your package manager (the tests that need them are skipped)\n"
		if rc != 0 || out != want {
			t.Errorf("%s: exit %d, output %q; want 0 and %q", c.name, rc, out, want)
		}
		if got := read(t, filepath.Join(deps, "web-deps.missing")); got != "chromium fonts-liberation\n" {
			t.Errorf("%s: record %q, want the packages", c.name, got)
		}
		if got := read(t, calls); strings.Contains(got, "install") {
			t.Errorf("%s: something was installed: %q", c.name, got)
		}
	}
}

// With apt-get it installs the packages, as root directly and otherwise
// through a sudo that works without a password, and clears an old record;
// with nothing missing it only clears the record; a failing apt-get fails
// it.
func TestInstallsWithAptGet(t *testing.T) {
	sudo := `[ "$1" = -n ] && exit 0; exec "$@"`
	modes := []struct {
		name   string
		uid    int
		prefix string // how apt-get install is called
	}{{"not root", asOther(t), "sudo env DEBIAN_FRONTEND=noninteractive apt-get"}}
	if os.Geteuid() == 0 {
		modes = append(modes, struct {
			name   string
			uid    int
			prefix string
		}{"root", -1, "apt-get"})
	}
	for _, m := range modes {
		path, calls, deps := setup(t, map[string]string{"apt-get": "exit 0", "sudo": sudo})
		record := filepath.Join(deps, "deploy-deps.missing")
		if err := os.WriteFile(record, []byte("caddy\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		out, rc := run(t, path, deps, m.uid, "--no-install-recommends", "deploy-deps", "nginx-core", "caddy")
		if rc != 0 || out != "deploy-deps: apt-get install nginx-core caddy\n" {
			t.Errorf("%s: exit %d, output %q", m.name, rc, out)
		}
		got := read(t, calls)
		for _, want := range []string{"apt-get -o DPkg::Lock::Timeout=300 update -qq",
			m.prefix + " -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends nginx-core caddy"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: apt-get was not called as %q: %q", m.name, want, got)
			}
		}
		if _, err := os.Stat(record); !os.IsNotExist(err) {
			t.Errorf("%s: the old record is still there after the install: %v", m.name, err)
		}

		if err := os.WriteFile(record, []byte("caddy\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		if out, rc := run(t, path, deps, m.uid, "deploy-deps"); rc != 0 || out != "" {
			t.Errorf("%s, nothing missing: exit %d, output %q", m.name, rc, out)
		}
		if _, err := os.Stat(record); !os.IsNotExist(err) {
			t.Errorf("%s, nothing missing: the record is still there: %v", m.name, err)
		}

		failing, _, deps := setup(t, map[string]string{"apt-get": "exit 100", "sudo": sudo})
		if out, rc := run(t, failing, deps, m.uid, "web-deps", "chromium"); rc == 0 {
			t.Errorf("%s, a failing apt-get: exit 0, output %q; want the failure", m.name, out)
		}
	}
}
