package skills_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Go programs of the root README and of this package's README are
// copy-and-run code: each is built as written, in a new module, and run
// against a real registry (it publishes, and unregisters on Ctrl-C) and
// with a malformed III_URL (it fails at once, naming the address).
func TestReadmeProgramsRun(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		readme string
		ids    []string
	}{
		{filepath.Join(root, "README.md"), []string{"resend"}},
		{filepath.Join(root, "sdk-go", "skills", "README.md"), []string{"resend", "resend/email"}},
	} {
		t.Run(filepath.Base(filepath.Dir(c.readme)), func(t *testing.T) {
			bin := buildReadmeProgram(t, root, c.readme)
			srv := startServer(t, freePort(t), t.TempDir())

			var out bytes.Buffer
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "III_URL="+srv.url)
			cmd.Stdout, cmd.Stderr = &lockedWriter{w: &out}, &lockedWriter{w: &out}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			observer := dial(t, srv.url)
			waitFor(t, "the README program to publish", func() bool {
				ids := skillIDs(t, observer)
				for _, id := range c.ids {
					if !slices.Contains(ids, id) {
						return false
					}
				}
				return strings.Contains(out.String(), "published")
			})
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the README program exited with %v:\n%s", err, out.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the README program did not stop on Ctrl-C:\n%s", out.String())
			}
			if ids := skillIDs(t, observer); slices.Contains(ids, c.ids[0]) {
				t.Fatalf("after Ctrl-C the registry still lists %v", ids)
			}

			// A malformed engine address is an error at once, not a retry loop.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			bad := exec.CommandContext(ctx, bin)
			bad.Env = append(os.Environ(), "III_URL=localhost:49134")
			msg, err := bad.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || ctx.Err() != nil {
				t.Fatalf("with III_URL=localhost:49134 the program ended with %v (want a failure at once):\n%s", err, msg)
			}
			if want := `invalid engine URL "localhost:49134" (from III_URL): it has no scheme`; !strings.Contains(string(msg), want) {
				t.Fatalf("output %q does not say %q", msg, want)
			}
		})
	}
}

// buildReadmeProgram builds the first ```go block of readme that is a whole
// program (package main) in a new module.
func buildReadmeProgram(t *testing.T, root, readme string) string {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var program string
	for _, block := range strings.Split(string(doc), "```go\n")[1:] {
		code, _, _ := strings.Cut(block, "```")
		if strings.HasPrefix(code, "package main\n") {
			program = code
			break
		}
	}
	if program == "" {
		t.Fatalf("%s has no ```go block with a whole program (package main)", readme)
	}
	// A new module with a replace onto the checkout, as the README says;
	// sdk-go's go.sum vouches for the dependencies (no download).
	dir := t.TempDir()
	sums, err := os.ReadFile(filepath.Join(root, "sdk-go", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"main.go": program,
		"go.mod": "module readme\n\ngo 1.25.0\n\nrequire github.com/iii-skills/skills/sdk-go v0.0.0\n\n" +
			"replace github.com/iii-skills/skills/sdk-go => " + filepath.Join(root, "sdk-go") + "\n",
		"go.sum": string(sums),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "program")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the program in %s: %v\n%s\n%s", readme, err, out, program)
	}
	return bin
}
