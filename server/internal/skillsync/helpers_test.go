package skillsync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// registry is a real `skills --standalone` started for a test.
type registry struct {
	ws, http string // ws://… (the engine), http://…/mcp
	data     string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has exited
	args     []string      // the command line, to start it again
	readyURL string
	out      *testutil.Buffer
	client   *iii.Client // registers skills (one connection: it owns what it registers)
}

// registryOpts are the flags a test starts the registry with.
type registryOpts struct {
	folders []string // --skills-folder, in order
	token   string   // --mcp-token
	config  string   // config.yaml content
}

// startRegistry starts `skills --standalone` with its engine and its HTTP
// listener on free loopback ports and waits until it is ready.
func startRegistry(tb testing.TB, o registryOpts) *registry {
	tb.Helper()
	bin := testutil.SkillsBinary(tb)
	dir := tb.TempDir()
	r := &registry{ws: "ws://" + testutil.FreeAddr(tb), data: filepath.Join(dir, "data"), out: &testutil.Buffer{}}
	httpAddr := testutil.FreeAddr(tb)
	r.http = "http://" + httpAddr + "/mcp"
	cfg := filepath.Join(dir, "config.yaml")
	if o.config != "" {
		if err := os.WriteFile(cfg, []byte(o.config), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	args := []string{"--standalone", "--url", r.ws, "--http-addr", httpAddr, "--data", r.data, "--config", cfg, "--log-level", "warn"}
	for _, f := range o.folders {
		args = append(args, "--skills-folder", f)
	}
	if o.token != "" {
		args = append(args, "--mcp-token", o.token)
	}
	r.args = append([]string{bin}, args...)
	r.readyURL = "http://" + httpAddr + "/readyz"
	tb.Cleanup(func() {
		r.stop()
		if tb.Failed() {
			tb.Logf("skills --standalone:\n%s", r.out.String())
		}
	})
	r.start(tb)
	r.client = iii.RegisterWorker(r.ws, iii.WithName("sync-test-publisher"), iii.WithLogger(quiet))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := r.client.Connect(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.client.Close() })
	return r
}

// start starts the registry process and waits until it is ready.
func (r *registry) start(tb testing.TB) {
	tb.Helper()
	r.cmd = exec.Command(r.args[0], r.args[1:]...)
	r.cmd.Env = cleanEnv()
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func(cmd *exec.Cmd) { _ = cmd.Wait(); close(exited) }(r.cmd)
	r.exited = exited
	ready := r.readyURL
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(ready)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.HasPrefix(string(b), "ready") {
				break
			}
		}
		select {
		case <-exited:
			tb.Fatalf("skills --standalone exited:\n%s", r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("skills --standalone did not become ready: %v\n%s", err, r.out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// cleanEnv is the environment without the caller's tokens and engine URL.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "SKILLS_MCP_TOKEN" && k != "III_ENGINE_TOKEN" && k != "III_URL" && k != "SKILLS_LOG" {
			env = append(env, kv)
		}
	}
	return env
}

// stop ends the registry (SIGTERM, SIGKILL after 20 s).
func (r *registry) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// call triggers fn on the registry.
func (r *registry) call(tb testing.TB, fn string, payload any) json.RawMessage {
	tb.Helper()
	b, _ := json.Marshal(payload)
	out, err := r.client.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: b, Timeout: 30 * time.Second})
	if err != nil {
		tb.Fatalf("%s %s: %v", fn, b, err)
	}
	return out
}

// register publishes a skill body.
func (r *registry) register(tb testing.TB, id, body string) {
	tb.Helper()
	r.call(tb, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body})
}

// source opens the registry over HTTP or iii.
func (r *registry) source(tb testing.TB, overHTTP bool) (Source, string) {
	tb.Helper()
	u := r.ws
	if overHTTP {
		u = r.http
	}
	src, err := Open(context.Background(), u, "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = src.Close() })
	return src, u
}

// both runs f over HTTP and over iii.
func both(t *testing.T, f func(t *testing.T, overHTTP bool)) {
	for _, overHTTP := range []bool{true, false} {
		name := "iii"
		if overHTTP {
			name = "http"
		}
		t.Run(name, func(t *testing.T) { f(t, overHTTP) })
	}
}

// corpora is the shared corpora folder ($CORPORA, else beside the
// repository), or "" when it is absent.
func corpora() string {
	candidates := []string{"../../../../shared/corpora", "../../../../../shared/corpora"}
	if c := os.Getenv("CORPORA"); c != "" {
		candidates = []string{c}
	}
	for _, d := range candidates {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			abs, _ := filepath.Abs(d)
			return abs
		}
	}
	return ""
}

// corpus is one folder of the shared corpora, or a skip.
func corpus(tb testing.TB, name string) string {
	tb.Helper()
	c := corpora()
	if c == "" {
		tb.Skip("not run: the shared corpora are absent (set CORPORA to ../shared/corpora)")
	}
	return filepath.Join(c, name)
}

// writeTree writes files (path → content) under dir.
func writeTree(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// skillMD is a SKILL.md with a name and a description.
func skillMD(name, desc, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n%s", name, desc, body)
}

// readTree reads every file under dir (path → content), skipping what
// skip says (relative, '/'-separated).
func readTree(tb testing.TB, dir string, skip func(string) bool) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if skip != nil && rel != "." && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// sameTree fails unless got has exactly want's files and contents.
func sameTree(tb testing.TB, what string, got, want map[string]string) {
	tb.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			tb.Errorf("%s: %s missing", what, p)
		} else if g != w {
			tb.Errorf("%s: %s differs (%d bytes, want %d)", what, p, len(g), len(w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			tb.Errorf("%s: unexpected %s", what, p)
		}
	}
}

// syncOnce runs Sync with the source into targets and fails the test on
// an error; the report is returned for the test to inspect.
func syncOnce(tb testing.TB, o Options) *Report {
	tb.Helper()
	rep, err := Sync(context.Background(), o)
	if err != nil {
		tb.Fatalf("sync: %v", err)
	}
	return rep
}

// mustSelection parses selectors.
func mustSelection(tb testing.TB, selectors ...string) Selection {
	tb.Helper()
	s, err := NewSelection(selectors, nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// problems is every problem of rep on one line each.
func problems(rep *Report) string {
	var b bytes.Buffer
	for _, p := range rep.Problems {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// skillsRef is the Agent Skills reference validator (skills-ref from
// PyPI, which `make test-skills-ref` installs into .venv-skills-ref): its
// CLI and the python that has it, or "" with the reason it is absent.
func skillsRef() (cli, python, why string) {
	candidates := []string{}
	if py := os.Getenv("SKILLS_REF_PYTHON"); py != "" {
		candidates = append(candidates, filepath.Dir(py))
	}
	candidates = append(candidates, "../../../.venv-skills-ref/bin")
	for _, d := range candidates {
		c, p := filepath.Join(d, "agentskills"), filepath.Join(d, "python")
		if _, err := os.Stat(c); err == nil {
			ac, _ := filepath.Abs(c)
			ap, _ := filepath.Abs(p)
			return ac, ap, ""
		}
	}
	return "", "", "skills-ref is not installed (make test-skills-ref installs it into .venv-skills-ref)"
}

// validateWithSkillsRef has skills-ref validate each skill folder, in a
// subtest "skills-ref" that fails for any folder it refuses and is
// skipped, "not run", without skills-ref.
func validateWithSkillsRef(t *testing.T, dirs ...string) {
	t.Helper()
	t.Run("skills-ref", func(t *testing.T) {
		for d, errs := range skillsRefVerdicts(t, dirs) {
			if len(errs) > 0 {
				t.Errorf("skills-ref refuses the synced folder %s: %v", d, errs)
			}
		}
	})
}

// skillsRefVerdicts validates many folders in one process with
// skills-ref's own validator (the function `agentskills validate` calls):
// each folder's errors (none: valid). It skips t, "not run", when
// skills-ref is absent.
func skillsRefVerdicts(t *testing.T, dirs []string) map[string][]string {
	t.Helper()
	_, python, why := skillsRef()
	if python == "" {
		t.Skip("not run: " + why)
	}
	var verdicts map[string][]string
	const script = `import json, sys
from pathlib import Path
from skills_ref.validator import validate
print(json.dumps({d: validate(Path(d)) for d in sys.argv[1:]}))`
	out, err := exec.Command(python, append([]string{"-c", script}, dirs...)...).Output()
	if err != nil {
		t.Fatalf("skills-ref: %v", err)
	}
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("skills-ref: %v: %s", err, out)
	}
	if len(verdicts) != len(dirs) {
		t.Fatalf("skills-ref validated %d folders of %d", len(verdicts), len(dirs))
	}
	return verdicts
}

// inode is a file's inode number ("" where the system has none).
func inode(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprint(st.Ino)
	}
	return ""
}
