package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// cliKey is a key ssh-keygen made for these tests.
type cliKey struct{ name, priv, line, fingerprint string }

func cliKeygen(t *testing.T, dir, name, typ string, extra ...string) cliKey {
	t.Helper()
	priv := filepath.Join(dir, name)
	args := append([]string{"-q", "-t", typ, "-C", name, "-f", priv}, extra...)
	if !strings.Contains(strings.Join(extra, " "), "-N") {
		args = append(args, "-N", "")
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
	}
	pub, err := os.ReadFile(priv + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", priv+".pub").Output()
	if err != nil {
		t.Fatal(err)
	}
	return cliKey{name: name, priv: priv, line: name + "@example.com " + f[0] + " " + f[1] + "\n", fingerprint: strings.Fields(string(out))[1]}
}

func needSSHKeygen(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("not run: ssh-keygen not found (Debian package openssh-client)")
	}
}

// cliProcess runs `skills ARGS…` as a process with stdin and returns its
// output and exit code.
func cliProcess(t *testing.T, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := skillsCommand(args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// skills sign signs as ssh-keygen does (byte for byte with an ed25519 key),
// skills trigger and skills add register signed content with a registry
// that requires signatures, and skills verify checks versions against the
// reader's own allowed_signers: verified, unsigned, untrusted, each with
// its exit code.
func TestSignAndVerify(t *testing.T) {
	needSSHKeygen(t)
	dir := t.TempDir()
	alice := cliKeygen(t, dir, "alice", "ed25519")
	carol := cliKeygen(t, dir, "carol", "rsa", "-b", "2048")
	mallory := cliKeygen(t, dir, "mallory", "ecdsa", "-b", "256")
	// The registry trusts all three and requires signatures under acme/;
	// the reader trusts alice and carol only.
	serverSigners, readerSigners := filepath.Join(dir, "server_signers"), filepath.Join(dir, "reader_signers")
	writeText(t, serverSigners, alice.line+carol.line+mallory.line)
	writeText(t, readerSigners, alice.line+carol.line)
	cfg := filepath.Join(dir, "config.yaml")
	writeText(t, cfg, "signing:\n  allowed_signers: "+serverSigners+"\n  require_signed: [\"acme/\"]\n")
	url := "ws://" + testutil.FreeAddr(t)
	startSkills(t, "--standalone", "--url", url, "--data", t.TempDir(), "--mcp-addr", "", "--config", cfg)
	cli := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return cliProcess(t, stdin, nil, append(args, "--url", url)...)
	}
	local := func(stdin string, args ...string) (string, string, int) { // no --url
		t.Helper()
		return cliProcess(t, stdin, []string{"SSH_AUTH_SOCK="}, args...)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, _, rc := cli("", "trigger", "--function-id", rules.FnSkillsList, "--timeout", "2s"); rc == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the registry did not come up")
		}
	}
	register := func(fn string, payload map[string]any) {
		t.Helper()
		body, _ := json.Marshal(payload)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, errb, rc := cli("", "trigger", "--function-id", fn, "--payload", string(body))
			if rc == 0 {
				return
			}
			if !strings.Contains(errb, "belongs to another worker") || time.Now().After(deadline) {
				t.Fatalf("%s: %s", fn, errb)
			}
		}
	}

	// skills sign over a file and over stdin: ssh-keygen's own signature,
	// byte for byte (ed25519 signatures are deterministic).
	body := "# Doc\n\nSigned by alice, ü.\n"
	bodyFile := filepath.Join(dir, "SKILL.md")
	writeText(t, bodyFile, body)
	sig, errb, rc := local("", "sign", "--key", alice.priv, bodyFile)
	if rc != 0 {
		t.Fatalf("skills sign: rc %d %s", rc, errb)
	}
	if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", rules.SignatureNamespace, "-f", alice.priv, bodyFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v %s", err, out)
	}
	if want, _ := os.ReadFile(bodyFile + ".sig"); sig != string(want) {
		t.Fatalf("skills sign wrote\n%s\nssh-keygen -Y sign\n%s", sig, want)
	}
	if fromStdin, _, rc := local(body, "sign", "--key", alice.priv, "-"); rc != 0 || fromStdin != sig {
		t.Fatalf("skills sign from stdin: rc %d %q", rc, fromStdin)
	}
	register(rules.FnSkillsRegister, map[string]any{"id": "acme/doc", "skill": body, "signature": sig})

	// Verified, by any selector; printed with principal and fingerprint.
	for _, target := range []string{"acme/doc", "acme/doc@1", "acme/doc@latest", "acme/doc@sha256:" + sha(body)} {
		out, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, target)
		if rc != 0 || !strings.Contains(out, "verified: skill acme/doc version 1 (sha256 "+sha(body)[:12]+"…) is signed by alice@example.com, key "+alice.fingerprint+"\n") {
			t.Fatalf("verify %s: rc %d\n%s%s", target, rc, out, errb)
		}
	}
	out, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, "--json", "acme/doc")
	var res verifyResult
	if rc != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Verified || res.Principal != "alice@example.com" || res.Key != alice.fingerprint {
		t.Fatalf("verify --json: rc %d\n%s%s", rc, out, errb)
	}
	// --principal narrows who may have signed.
	if _, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, "--principal", "carol@example.com", "acme/doc"); rc != 1 ||
		!strings.Contains(errb, "untrusted (key "+alice.fingerprint+")") || !strings.Contains(errb, `as "carol@example.com"`) {
		t.Fatalf("verify --principal carol: rc %d %s", rc, errb)
	}

	// Unsigned (outside acme/, accepted by the registry): exit 1, named.
	register(rules.FnSkillsRegister, map[string]any{"id": "free/doc", "skill": "# Free\n"})
	if _, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, "free/doc"); rc != 1 ||
		!strings.Contains(errb, "not verified: skill free/doc version 1") || !strings.Contains(errb, ": unsigned: ") {
		t.Fatalf("verify unsigned: rc %d %s", rc, errb)
	}
	// Signed by a key the registry trusts and the reader does not: exit 1,
	// untrusted, naming the key; the registry's verdict is shown beside.
	malBody := "# Mallory's\n"
	writeText(t, filepath.Join(dir, "mal.md"), malBody)
	malSig, _, _ := local("", "sign", "--key", mallory.priv, filepath.Join(dir, "mal.md"))
	register(rules.FnSkillsRegister, map[string]any{"id": "acme/mal", "skill": malBody, "signature": malSig})
	if out, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, "acme/mal"); rc != 1 ||
		!strings.Contains(errb, "untrusted (key "+mallory.fingerprint+")") || !strings.Contains(errb, readerSigners+" does not trust key") ||
		!strings.Contains(out, "the registry says: signed by mallory@example.com") {
		t.Fatalf("verify untrusted: rc %d\n%s%s", rc, out, errb)
	}

	// A prompt: skills sign --prompt signs the definition's canonical JSON
	// (ssh-keygen -Y verify agrees), the registry takes it, verify checks it.
	def := `{"name":"acme-review","description":"Review a diff","function_id":"acme::review","arguments":[{"name":"diff","description":"the diff","required":true},{"name":"style"}]}`
	psig, errb, rc := local(def, "sign", "--prompt", "--key", carol.priv)
	if rc != 0 {
		t.Fatalf("sign --prompt: rc %d %s", rc, errb)
	}
	canonical := `{"arguments":[{"description":"the diff","name":"diff","required":true},{"name":"style","required":false}],"description":"Review a diff","function_id":"acme::review"}`
	if !keygenVerifies(t, dir, carol.line, "carol@example.com", psig, canonical) {
		t.Fatal("ssh-keygen -Y verify refuses skills sign --prompt's signature over the canonical JSON")
	}
	var p map[string]any
	_ = json.Unmarshal([]byte(def), &p)
	p["signature"] = psig
	register(rules.FnPromptsRegister, p)
	if out, errb, rc := cli("", "verify", "--prompt", "--allowed-signers", readerSigners, "acme-review"); rc != 0 ||
		!strings.Contains(out, "verified: prompt acme-review version 1") || !strings.Contains(out, "carol@example.com, key "+carol.fingerprint) {
		t.Fatalf("verify --prompt: rc %d\n%s%s", rc, out, errb)
	}

	// skills add --sign-key signs what it registers; without it a registry
	// that requires signatures refuses the SOURCE.
	folder := filepath.Join(dir, "src", "guide")
	writeText(t, filepath.Join(folder, "SKILL.md"), addSkillMD("guide", "# Guide\n"))
	if out, errb, rc := cli("", "add", "--namespace", "acme", folder); rc != 1 || !strings.Contains(errb, "UNSIGNED") {
		t.Fatalf("add unsigned: rc %d\n%s%s", rc, out, errb)
	}
	if out, errb, rc := cli("", "add", "--namespace", "acme", "--sign-key", alice.priv, folder); rc != 0 || !strings.Contains(out, "registered acme/guide version 1") {
		t.Fatalf("add --sign-key: rc %d\n%s%s", rc, out, errb)
	}
	if out, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, "acme/guide"); rc != 0 || !strings.Contains(out, "alice@example.com") {
		t.Fatalf("verify after add: rc %d\n%s%s", rc, out, errb)
	}
	// The same body signed by the same key again is unchanged; by another
	// key it is a new version.
	if out, errb, rc := cli("", "add", "--namespace", "acme", "--sign-key", alice.priv, folder); rc != 0 || !strings.Contains(out, "unchanged acme/guide version 1") {
		t.Fatalf("add again: rc %d\n%s%s", rc, out, errb)
	}
	if out, errb, rc := cli("", "add", "--namespace", "acme", "--sign-key", carol.priv, folder); rc != 0 || !strings.Contains(out, "registered acme/guide version 2") {
		t.Fatalf("add with another key: rc %d\n%s%s", rc, out, errb)
	}

	// Not found and usage.
	if _, errb, rc := cli("", "verify", "--allowed-signers", readerSigners, "acme/doc@9"); rc != 1 || !strings.Contains(errb, "has no version 9") {
		t.Fatalf("verify @9: rc %d %s", rc, errb)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"verify", "acme/doc"}, "--allowed-signers FILE is required"},
		{[]string{"verify", "--allowed-signers", filepath.Join(dir, "absent"), "acme/doc"}, "no such file"},
		{[]string{"verify", "--allowed-signers", readerSigners, "Bad_Id"}, `skill "Bad_Id"`},
		{[]string{"verify", "--allowed-signers", readerSigners, "acme/doc@sha256:abc"}, "64 lowercase hex"},
		{[]string{"verify", "--allowed-signers", readerSigners}, "expected 1 argument"},
		{[]string{"sign", bodyFile}, "--key FILE is required"},
		{[]string{"sign", "--key", alice.priv, bodyFile, bodyFile}, "at most one FILE"},
	} {
		if _, errb, rc := local("", c.args...); rc != 2 || !strings.Contains(errb, c.says) {
			t.Errorf("skills %v: rc %d %s (want 2, %q)", c.args, rc, errb, c.says)
		}
	}
	writeText(t, filepath.Join(dir, "bad_signers"), "alice@example.com namespace=\"x\" "+strings.Fields(alice.line)[1]+" "+strings.Fields(alice.line)[2]+"\n")
	if _, errb, rc := local("", "verify", "--allowed-signers", filepath.Join(dir, "bad_signers"), "acme/doc"); rc != 2 || !strings.Contains(errb, "allowed_signers line 1") {
		t.Errorf("verify with a bad allowed_signers: rc %d %s", rc, errb)
	}
	enc := cliKeygen(t, dir, "enc", "ed25519", "-N", "secret")
	if _, errb, rc := local("", "sign", "--key", enc.priv, bodyFile); rc != 1 || !strings.Contains(errb, "encrypted") || !strings.Contains(errb, "ssh-add "+enc.priv) {
		t.Errorf("sign with an encrypted key: rc %d %s", rc, errb)
	}
	for _, c := range []struct{ input, says string }{
		{`[1]`, "not a JSON object"},
		{`{"description":"d"}`, "description and function_id are required"},
		{`{"description":"d","function_id":"f","functionId":"f"}`, `unknown field "functionId"`},
	} {
		if _, errb, rc := local(c.input, "sign", "--prompt", "--key", alice.priv); rc != 1 || !strings.Contains(errb, c.says) {
			t.Errorf("sign --prompt %s: rc %d %s", c.input, rc, errb)
		}
	}
	if _, errb, rc := local("\xff\xfe", "sign", "--key", alice.priv); rc != 1 || !strings.Contains(errb, "not UTF-8") {
		t.Errorf("sign non-UTF-8: rc %d %s", rc, errb)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func writeText(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func keygenVerifies(t *testing.T, dir, allowed, principal, sig, content string) bool {
	t.Helper()
	writeText(t, filepath.Join(dir, "v_signers"), allowed)
	writeText(t, filepath.Join(dir, "v.sig"), sig)
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", filepath.Join(dir, "v_signers"), "-I", principal, "-n", rules.SignatureNamespace, "-s", filepath.Join(dir, "v.sig"))
	cmd.Stdin = strings.NewReader(content)
	return cmd.Run() == nil
}

// The reader's check refuses content that is not what was signed, or that
// does not match the version's digest: "bad", never verified.
func TestCheckVersionBad(t *testing.T) {
	needSSHKeygen(t)
	dir := t.TempDir()
	alice := cliKeygen(t, dir, "alice", "ed25519")
	signers, err := sshsig.ParseAllowedSigners(strings.NewReader(alice.line))
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(dir, "m"), "# Other\n")
	if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", rules.SignatureNamespace, "-f", alice.priv, filepath.Join(dir, "m")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	other, _ := os.ReadFile(filepath.Join(dir, "m.sig"))
	content := "# Served\n"
	v := history.Version{Version: 2, SHA256: sha(content), Signature: string(other)}
	r := checkVersion(signers, "", "signers", core.KindSkill, "a/b", v, content, time.Now())
	if r.Verified || r.Problem != "bad" || !strings.Contains(r.Detail, "does not verify") || r.Key != alice.fingerprint {
		t.Fatalf("a signature over other bytes: %+v", r)
	}
	v.SHA256 = sha("# Listed\n")
	r = checkVersion(signers, "", "signers", core.KindSkill, "a/b", v, content, time.Now())
	if r.Verified || r.Problem != "bad" || !strings.Contains(r.Detail, "not the "+v.SHA256) {
		t.Fatalf("content that is not the listed version: %+v", r)
	}
	var errb bytes.Buffer
	printVerify(&bytes.Buffer{}, &errb, r)
	if !strings.HasPrefix(errb.String(), "not verified: skill a/b version 2 (sha256 ") || !strings.Contains(errb.String(), ": bad: ") {
		t.Fatalf("printed: %s", errb.String())
	}
}
