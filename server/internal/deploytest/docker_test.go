package deploytest

// Checks of deploy/Dockerfile, its entrypoint and .dockerignore. No Docker
// daemon runs on the test machines, so the image is never built here: the
// Dockerfile is read for the rules it must keep, its entrypoint script runs
// with the real skills binary, and the build context is computed with the
// matcher Docker itself uses for .dockerignore (github.com/moby/patternmatcher).

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// instruction is one Dockerfile instruction: its keyword (upper case) and
// the rest of its line, continuation lines joined.
type instruction struct {
	cmd, args string
}

// dockerfile reads deploy/Dockerfile into its instructions, stage by
// stage (a FROM starts a stage).
func dockerfile(t *testing.T) (stages [][]instruction) {
	t.Helper()
	var logical string
	for _, line := range strings.Split(readFile(t, "deploy/Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if logical == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			logical += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		logical += trimmed
		cmd, args, _ := strings.Cut(logical, " ")
		logical = ""
		ins := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if ins.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("deploy/Dockerfile: %s before the first FROM", ins.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], ins)
	}
	return stages
}

const entrypoint = "/usr/local/bin/docker-entrypoint.sh"

// The image runs its entrypoint script (which requires the tokens) as a
// non-root user, copies that script from the repository, exposes the two
// listeners and probes /readyz.
func TestDockerfileRules(t *testing.T) {
	stages := dockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("deploy/Dockerfile has %d stages; want a build stage and a runtime stage", len(stages))
	}
	runtime := stages[len(stages)-1]
	var user, entry, health string
	var copies, exposed []string
	for _, ins := range runtime {
		switch ins.cmd {
		case "USER":
			user = ins.args
		case "ENTRYPOINT":
			entry = ins.args
		case "HEALTHCHECK":
			health = ins.args
		case "COPY":
			copies = append(copies, ins.args)
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(ins.args)...)
		case "CMD":
			t.Errorf("the runtime stage has CMD %s: arguments belong to docker run, after the entrypoint's own flags", ins.args)
		}
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("the image runs as %q; want a non-root user", user)
	}
	var entryArgs []string
	if err := json.Unmarshal([]byte(entry), &entryArgs); err != nil || !slices.Equal(entryArgs, []string{entrypoint}) {
		t.Errorf("ENTRYPOINT %s; want the exec form [%q] (the script that requires the tokens; a shell form would not pass docker run's arguments)", entry, entrypoint)
	}
	if !slices.Contains(copies, "deploy/docker-entrypoint.sh "+entrypoint) {
		t.Errorf("the runtime stage does not COPY deploy/docker-entrypoint.sh to %s (COPY lines: %q)", entrypoint, copies)
	}
	if st, err := os.Stat(filepath.Join(repoRoot, "deploy", "docker-entrypoint.sh")); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("deploy/docker-entrypoint.sh must be executable (COPY keeps its mode): %v", err)
	}
	if !slices.Contains(exposed, "49134") || !slices.Contains(exposed, "49135") {
		t.Errorf("EXPOSE %v; want 49134 (engine) and 49135 (HTTP)", exposed)
	}
	if !strings.Contains(health, "/readyz") {
		t.Errorf("HEALTHCHECK %q does not probe /readyz", health)
	}
}

// The entrypoint refuses to start without both tokens, naming the missing
// ones; with both, the real binary starts behind it and both listeners ask
// for their token.
func TestDockerEntrypointRequiresTokens(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink(testutil.SkillsBinary(t), filepath.Join(bin, "skills")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(repoRoot, "deploy", "docker-entrypoint.sh")
	env := func(kv ...string) []string {
		return append([]string{"PATH=" + bin + ":/usr/bin:/bin", "SKILLS_LOG=info"}, kv...)
	}
	for _, c := range []struct {
		env     []string
		missing string
	}{
		{env(), "set III_ENGINE_TOKEN SKILLS_MCP_TOKEN"},
		{env("III_ENGINE_TOKEN=e-token-0123456789"), "set SKILLS_MCP_TOKEN ("},
		{env("SKILLS_MCP_TOKEN=m-token-0123456789", "III_ENGINE_TOKEN="), "set III_ENGINE_TOKEN ("},
	} {
		cmd := exec.Command(script)
		cmd.Env = c.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(out.String(), "skills image: "+c.missing) {
			t.Errorf("entrypoint with %v: %v, output %q; want exit 2 saying %q", c.env[2:], err, out.String(), c.missing)
		}
	}

	// Both tokens: the server starts (the addresses moved to free loopback
	// ports by arguments, which come after the entrypoint's own flags).
	dir := t.TempDir()
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	cmd := exec.Command(script, "--config", filepath.Join(dir, "none.yaml"), "--data", filepath.Join(dir, "data"),
		"--url", "ws://"+engineAddr, "--mcp-addr", httpAddr)
	cmd.Env = env("III_ENGINE_TOKEN=e-token-0123456789", "SKILLS_MCP_TOKEN=m-token-0123456789")
	logs := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testutil.Eventually(t, 60*time.Second, "the registry behind the entrypoint is ready\n"+logs.String(), func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if resp, err := http.Post("http://"+httpAddr+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"list_skills"}`)); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/rpc without the token behind the entrypoint: %v %v, want 401", resp, err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+engineAddr+"/", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("engine socket without the token behind the entrypoint: %v %v, want 401", resp, err)
	}
}

// contextBudget bounds the build context: the Go sources are about 10 MB.
const contextBudget = 32 << 20

// dockerignore reads root/.dockerignore as Docker does.
func dockerignore(t *testing.T, root string) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf(".dockerignore: %v (without it `docker build .` sends the whole checkout, 1.3 GB after make test)", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return pm
}

// buildContext walks root as Docker does with root/.dockerignore and
// returns the files it sends (slash paths relative to root) and their size.
func buildContext(t *testing.T, root string) (files map[string]bool, size int64) {
	t.Helper()
	pm := dockerignore(t, root)
	// An excluded folder is entered only when an exception ("!path")
	// may let something under it back in.
	mayReinclude := func(dir string) bool {
		for _, p := range pm.Patterns() {
			if p.Exclusion() && (strings.HasPrefix(p.String(), dir+"/") || strings.HasPrefix(p.String(), "*")) {
				return true
			}
		}
		return false
	}
	files = map[string]bool{}
	parents := map[string]patternmatcher.MatchInfo{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		excluded, info, err := pm.MatchesUsingParentResults(rel, parents[filepath.ToSlash(filepath.Dir(rel))])
		if err != nil {
			return err
		}
		if d.IsDir() {
			if excluded && !mayReinclude(rel) {
				return filepath.SkipDir
			}
			parents[rel] = info
			return nil
		}
		if !excluded {
			files[rel] = true
			if st, err := d.Info(); err == nil {
				size += st.Size()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, size
}

// .dockerignore lets through every COPY source of the Dockerfile and
// keeps out what builds and tests leave in a checkout; the context of
// this checkout stays within contextBudget.
func TestDockerBuildContext(t *testing.T) {
	files, size := buildContext(t, repoRoot)
	t.Logf("docker build context of %s: %d files, %.1f MiB", repoRoot, len(files), float64(size)/(1<<20))
	if size > contextBudget {
		t.Errorf("the build context is %.1f MiB, over its %d MiB budget: exclude what the image is not built from in .dockerignore", float64(size)/(1<<20), contextBudget>>20)
	}
	// Every COPY source from the context is sent (a folder: its files).
	for _, stage := range dockerfile(t) {
		for _, ins := range stage {
			if ins.cmd != "COPY" || strings.HasPrefix(ins.args, "--from=") {
				continue
			}
			args := strings.Fields(ins.args)
			for _, src := range args[:len(args)-1] {
				src = strings.TrimSuffix(src, "/")
				sent := files[src]
				for f := range files {
					sent = sent || strings.HasPrefix(f, src+"/")
				}
				if !sent {
					t.Errorf("COPY %s: .dockerignore leaves nothing of %s in the build context", ins.args, src)
				}
			}
		}
	}
	for _, need := range []string{"go.work", "server/go.mod", "server/cmd/skills/main.go", "sdk-go/go.mod", "deploy/docker-entrypoint.sh"} {
		if !files[need] {
			t.Errorf("%s is not in the build context", need)
		}
	}
	// What builds and tests leave behind never is, wherever it appears.
	pm := dockerignore(t, repoRoot)
	for _, generated := range []string{"bin/skills", ".data/engine/state.db", "dist/iii-skills-0.1.0.tgz", ".venv/bin/python", ".venv-mcp-clients/lib/x.py",
		"sdk-node/node_modules/ws/index.js", "server/internal/mcp/testdata/node-clients/node_modules/x/index.js", "server/internal/interop/node/node_modules/x.js",
		"server/skills", "server/internal/web/web.test", "server/internal/skillsprotocol/pylib/__pycache__/x.pyc", ".git/HEAD", "sdk-python/iii_skills/__init__.py"} {
		excluded, err := pm.MatchesOrParentMatches(generated)
		if err != nil || !excluded {
			t.Errorf("%s would be sent in the build context (.dockerignore must exclude it): %v", generated, err)
		}
	}
}
