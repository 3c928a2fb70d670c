package quietmake

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A Makefile with one green target that prints a go test summary line, and
// one that fails with exit 3 after printing a marker.
const makefile = `good:
	@echo 'ok  	example.com/quiet	0.01s'
lacking:
	@echo 'web-deps: not run: no apt-get here to install chromium'
	@echo 'deploy-deps: not run: no apt-get here to install caddy'
	@echo 'web-deps: not run: no apt-get here to install chromium'
	@echo 'lacking: not run: no iii engine (set III_BIN)'
bad:
	@echo bad-target-output-4711
	@exit 3
`

// quietMake runs scripts/quiet-make TARGETS… in a directory holding the
// Makefile above; it returns the output and the exit status.
func quietMake(t *testing.T, targets ...string) (string, int) {
	t.Helper()
	for _, tool := range []string{"bash", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("scripts/quiet-make needs %s: %v", tool, err)
		}
	}
	script, err := filepath.Abs("../../scripts/quiet-make")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script}, targets...)...)
	cmd.Dir = dir
	// A make above this test (make test) exports MAKEFLAGS and MAKELEVEL;
	// the script must run the temporary Makefile as a fresh make.
	cmd.Env = append(os.Environ(), "MAKE=make", "TEST_LOGS="+filepath.Join(dir, "logs"), "MAKEFLAGS=", "MAKELEVEL=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("quiet-make: %v\n%s", err, out)
	return "", 0
}

// linesStarting counts the lines of out that start with prefix.
func linesStarting(out, prefix string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestOneFailingTarget(t *testing.T) {
	// The failing target first: the one after it must still run.
	out, rc := quietMake(t, "bad", "good")
	if rc != 2 { // make's status when a recipe fails
		t.Errorf("exit status %d, want make's 2:\n%s", rc, out)
	}
	if linesStarting(out, "good:") != 1 || linesStarting(out, "bad:") != 1 {
		t.Errorf("want one line per target:\n%s", out)
	}
	if !strings.Contains(out, "\ngood: ok (1 Go packages ok)\n") {
		t.Errorf("the green target's line does not say what it ran:\n%s", out)
	}
	if !strings.HasPrefix(out, "bad: FAILED (exit 2)") {
		t.Errorf("the failing target's line does not say FAILED with its status:\n%s", out)
	}
	// Its log is printed, indented, right under its line.
	if !strings.Contains(out, "\n    bad-target-output-4711\n") {
		t.Errorf("the failing target's log is not printed:\n%s", out)
	}
	if strings.Contains(out, "example.com/quiet") {
		t.Errorf("the green target's log is printed:\n%s", out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "1 passed, 1 failed" {
		t.Errorf("last line %q, want \"1 passed, 1 failed\"", last)
	}
}

func TestAllTargetsPass(t *testing.T) {
	out, rc := quietMake(t, "good")
	if rc != 0 || out != "good: ok (1 Go packages ok)\n1 passed, 0 failed\n" {
		t.Errorf("exit status %d, output:\n%s", rc, out)
	}
}

// Every "not run" line of a green target is on its line, each once, the
// target's own name left out: a machine without apt-get says which install
// steps did not run.
func TestNotRunLinesAreAllShown(t *testing.T) {
	out, rc := quietMake(t, "lacking")
	want := "lacking: ok (web-deps: not run: no apt-get here to install chromium; deploy-deps: not run: no apt-get here to install caddy; " +
		"not run: no iii engine (set III_BIN))\n1 passed, 0 failed\n"
	if rc != 0 || out != want {
		t.Errorf("exit status %d, output:\n%s\nwant:\n%s", rc, out, want)
	}
}
