package deploytest

// The systemd recipe of docs/deploy.md, run as written. systemd does not
// boot on the test machines (containers without it as PID 1), so the test
// does what the recipe and systemd would do, under a throwaway root folder:
// it runs the recipe's install commands as root, then starts the installed
// unit the way systemd starts it — EnvironmentFile= and LoadCredential= read
// as root, StateDirectory= made for the service's user, and ExecStartPre= /
// ExecStart= run as an unprivileged uid with no groups, as DynamicUser=yes
// gives. `systemd-analyze verify` (TestSystemdUnitVerifies) checks the
// unit's syntax with systemd itself.

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

// serviceUID is the unprivileged uid the service runs as here, in the
// range systemd allocates dynamic users from (61184–65519).
const serviceUID = 61234

// recipe is the shell block of docs/deploy.md's systemd section.
func recipe(t *testing.T) []string {
	t.Helper()
	doc := readFile(t, "docs/deploy.md")
	_, after, ok := strings.Cut(doc, "## One machine, as a service, behind TLS")
	if !ok {
		t.Fatal(`docs/deploy.md has no section "One machine, as a service, behind TLS"`)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/deploy.md: the systemd section has no ```sh block")
	}
	return strings.Split(strings.TrimSpace(block), "\n")
}

// unitFile is the [Service] section of a unit: each key's values in order
// (continuation lines joined).
func unitFile(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section, logical := "", ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if logical == "" && (line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			logical += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		logical += line
		if strings.HasPrefix(logical, "[") {
			section = logical
		} else if key, value, ok := strings.Cut(logical, "="); ok && section == "[Service]" {
			out[key] = append(out[key], value)
		}
		logical = ""
	}
	return out
}

// execWords splits a unit's Exec line as systemd does for what this unit
// uses: the prefixes "-" (failure ignored) and "@:+!" are refused here,
// specifiers %d (credentials directory) and %%, 'single' and "double"
// quoted words, and $$ for a literal $. Environment variable references
// ($VAR, ${VAR}) are refused: systemd would substitute them before the
// shell sees them (a token would land on the command line).
func execWords(t *testing.T, line, credsDir string) (words []string, ignoreFailure bool) {
	t.Helper()
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "-") {
		ignoreFailure, line = true, line[1:]
	}
	if strings.ContainsAny(line[:1], "@:+!") {
		t.Fatalf("Exec line %q: prefix %q is not emulated here", line, line[:1])
	}
	if m := regexp.MustCompile(`%[^d%]`).FindString(line); m != "" {
		t.Fatalf("Exec line %q: specifier %s is not emulated here", line, m)
	}
	line = strings.ReplaceAll(strings.ReplaceAll(line, "%d", credsDir), "%%", "%")
	if m := regexp.MustCompile(`(^|[^$])\$[{A-Za-z_]`).FindString(strings.ReplaceAll(line, "$$", "")); m != "" {
		t.Fatalf("Exec line %q: systemd would substitute an environment variable there (%q); write $$ for the shell's $", line, m)
	}
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				t.Fatalf("Exec line %q: unterminated quote", line)
			}
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	for i := range words {
		words[i] = strings.ReplaceAll(words[i], "$$", "$")
	}
	return words, ignoreFailure
}

// envFile reads an EnvironmentFile= (KEY=VALUE lines).
func envFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("EnvironmentFile %s: %v (systemd refuses to start the unit)", path, err)
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			env = append(env, line)
		}
	}
	return env
}

// The recipe of docs/deploy.md, run as written (as root, under a
// throwaway root folder), installs a service that starts as an
// unprivileged user and gets ready: it reads its config, which stays
// root's 0640 file, through LoadCredential=. The unit also refuses to
// start with an empty token.
func TestSystemdRecipeAsWritten(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not run: the recipe installs root-owned files and starts the service as another user; run as root")
	}
	bash := tool(t, "bash")
	tool(t, "openssl")
	// A root the service's user can walk (t.TempDir's folders are 0700).
	root, err := os.MkdirTemp("", "deploy-systemd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	for _, d := range []string{"", "usr/local/bin", "etc/systemd/system", "var/lib", "run/credentials"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// rooted moves a path the recipe or unit names under root; in a
	// command line, every word that is such a path.
	prefixes := []string{"/usr/local/bin/", "/etc/", "/var/lib/", "/run/"}
	rooted := func(path string) string {
		for _, prefix := range prefixes {
			if strings.HasPrefix(path, prefix) {
				return root + path
			}
		}
		return path
	}
	rootedLine := func(line string) string {
		for _, prefix := range prefixes {
			line = strings.ReplaceAll(line, " "+prefix, " "+root+prefix)
		}
		return line
	}

	// The install, as written: sudo is root here; what systemctl and curl
	// do is done below.
	for _, line := range recipe(t) {
		cmd, _, _ := strings.Cut(line, "#")
		cmd = strings.TrimSpace(cmd)
		switch {
		case cmd == "make build":
			continue // the binary under test stands for bin/skills
		case strings.Contains(cmd, "systemctl"), strings.HasPrefix(cmd, "curl "):
			continue
		}
		cmd = rootedLine(strings.ReplaceAll(cmd, "sudo ", ""))
		cmd = strings.ReplaceAll(cmd, " bin/skills ", " "+testutil.SkillsBinary(t)+" ")
		c := exec.Command(bash, "-euo", "pipefail", "-c", cmd)
		c.Dir = repoRoot
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("recipe line %q (run as %q): %v\n%s", line, cmd, err, out)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "etc/skills/env")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("/etc/skills/env after the recipe: %v %v, want mode 0600 (it holds the token)", st, err)
	}
	config := filepath.Join(root, "etc/skills/config.yaml")
	if st, err := os.Stat(config); err != nil || st.Mode().Perm()&0o004 != 0 {
		t.Errorf("/etc/skills/config.yaml after the recipe: %v %v, want it unreadable by other users (it may hold secrets)", st, err)
	}

	// Started as systemd would.
	unit := unitFile(t, filepath.Join(root, "etc/systemd/system/skills.service"))
	if got := unit["DynamicUser"]; len(got) != 1 || got[0] != "yes" {
		t.Fatalf("the unit's DynamicUser=%v: this test starts it as a dynamic user", got)
	}
	creds := filepath.Join(root, "run/credentials/skills.service")
	if err := os.Mkdir(creds, 0o500); err != nil {
		t.Fatal(err)
	}
	for _, lc := range unit["LoadCredential"] {
		id, src, _ := strings.Cut(lc, ":")
		b, err := os.ReadFile(rooted(src)) // read by systemd, as root
		if err != nil {
			t.Fatalf("LoadCredential=%s: %v", lc, err)
		}
		dst := filepath.Join(creds, id)
		if err := os.WriteFile(dst, b, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dst, serviceUID, serviceUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(creds, serviceUID, serviceUID); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "CREDENTIALS_DIRECTORY=" + creds}
	for _, e := range unit["Environment"] {
		env = append(env, strings.Fields(e)...)
	}
	for _, f := range unit["EnvironmentFile"] {
		if strings.HasPrefix(f, "-") {
			t.Errorf("EnvironmentFile=%s is optional: the token file must be required", f)
		}
		env = append(env, envFile(t, rooted(strings.TrimPrefix(f, "-")))...)
	}
	for _, sd := range unit["StateDirectory"] {
		dir := filepath.Join(root, "var/lib", sd)
		mode := uint64(0o755)
		if m := unit["StateDirectoryMode"]; len(m) > 0 {
			mode, _ = strconv.ParseUint(m[0], 8, 32)
		}
		if err := os.MkdirAll(dir, os.FileMode(mode)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, serviceUID, serviceUID); err != nil {
			t.Fatal(err)
		}
		env = append(env, "STATE_DIRECTORY="+dir)
	}
	private := filepath.Join(root, "tmp") // PrivateTmp=
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	env = append(env, "TMPDIR="+private)
	workDir := root
	if wd := unit["WorkingDirectory"]; len(wd) > 0 {
		workDir = rooted(wd[0])
	}
	umask := "0022"
	if u := unit["UMask"]; len(u) > 0 {
		umask = u[0]
	}
	engineAddr, httpAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	asService := func(words []string, env []string) *exec.Cmd {
		for i, w := range words {
			w = strings.ReplaceAll(w, "127.0.0.1:49134", engineAddr)
			words[i] = rooted(strings.ReplaceAll(w, "127.0.0.1:49135", httpAddr))
		}
		c := exec.Command("/bin/sh", append([]string{"-c", "umask " + umask + " && exec \"$0\" \"$@\""}, words...)...)
		c.Env, c.Dir = env, workDir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: serviceUID, Gid: serviceUID, Groups: []uint32{}}}
		return c
	}

	if len(unit["ExecStartPre"]) == 0 {
		t.Error("the unit has no ExecStartPre= that refuses an empty token")
	}
	for _, pre := range unit["ExecStartPre"] {
		words, ignore := execWords(t, pre, creds)
		out, err := asService(words, env).CombinedOutput()
		if err != nil && !ignore {
			t.Fatalf("ExecStartPre=%s: %v\n%s", pre, err, out)
		}
		// Without a token the same check stops the start, and says why.
		var noToken []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, "SKILLS_MCP_TOKEN=") {
				noToken = append(noToken, kv)
			}
		}
		words, _ = execWords(t, pre, creds)
		out, err = asService(words, append(noToken, "SKILLS_MCP_TOKEN=")).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "SKILLS_MCP_TOKEN is empty or unset in /etc/skills/env") {
			t.Errorf("ExecStartPre with an empty token: %v %q; want a failure naming SKILLS_MCP_TOKEN", err, out)
		}
	}
	starts := unit["ExecStart"]
	if len(starts) != 1 {
		t.Fatalf("ExecStart=%q: want one", starts)
	}
	words, _ := execWords(t, starts[0], creds)
	svc := asService(words, env)
	logs := &testutil.Buffer{}
	svc.Stdout, svc.Stderr = logs, logs
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- svc.Wait() }()
	t.Cleanup(func() {
		_ = svc.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = svc.Process.Kill()
			<-exited
		}
	})
	deadline := time.After(90 * time.Second)
	for {
		if resp, err := http.Get("http://" + httpAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the service exited (%v) instead of getting ready (systemd would restart it: Restart=on-failure); its log:\n%s", err, logs.String())
		case <-deadline:
			t.Fatalf("the service was not ready at %s after 90 s; its log:\n%s", httpAddr, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("loaded config from %s/config.yaml", creds)) {
		t.Errorf("the service did not read its config from the credentials directory; its log:\n%s", logs.String())
	}
}
