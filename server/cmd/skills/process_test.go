package main

// Helpers of the tests that run the skills binary as a real process: the
// test binary itself acts as skills when SKILLS_TEST_RUN_MAIN=1 (TestMain),
// so no separate go build is needed.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// runMainEnv makes the test binary act as the skills binary.
const runMainEnv = "SKILLS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// skillsCommand is `skills ARGS…` as a child process, with an environment
// that carries no token, engine URL or log setting of the caller's.
func skillsCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != mcpTokenEnv && k != engineTokenEnv && k != "III_URL" && k != "SKILLS_LOG" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runMainEnv+"=1")
	return cmd
}

// startSkills starts `skills --config <none> ARGS…`. Unless the test has
// waited for it itself, the cleanup stops it with SIGTERM (SIGKILL after
// 20 s) and logs its output when the test failed.
func startSkills(t testing.TB, args ...string) (*exec.Cmd, *testutil.Buffer) {
	t.Helper()
	cmd := skillsCommand(append([]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, args...)...)
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			t.Logf("skills %v:\n%s", args, out.String())
		}
	})
	return cmd, out
}
