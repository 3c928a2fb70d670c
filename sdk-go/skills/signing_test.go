package skills

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
)

// The signing vectors are shared with the Node and Python publishers
// (conformance/vectors/signing.json): the canonical JSON of prompts and
// the wording of every key error.
type signingVectors struct {
	CanonicalPrompt []struct {
		Description string `json:"description"`
		FunctionID  string `json:"function_id"`
		Arguments   []struct {
			Name        string  `json:"name"`
			Description *string `json:"description"`
			Required    bool    `json:"required"`
		} `json:"arguments"`
		Canonical string `json:"canonical"`
	} `json:"canonical_prompt"`
	KeyErrors []struct {
		Kind    string `json:"kind"`
		KeyType string `json:"key_type"`
		Message string `json:"message"`
	} `json:"key_errors"`
}

func readSigningVectors(t *testing.T) signingVectors {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "conformance", "vectors", "signing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v signingVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.CanonicalPrompt) < 3 || len(v.KeyErrors) < 5 {
		t.Fatalf("only %d canonical and %d key error vectors", len(v.CanonicalPrompt), len(v.KeyErrors))
	}
	return v
}

func TestSigningVectors(t *testing.T) {
	v := readSigningVectors(t)
	for i, c := range v.CanonicalPrompt {
		ca := make([]rules.PromptArg, len(c.Arguments))
		args := make([]PromptArgument, len(c.Arguments))
		emptyDescription := false
		for j, a := range c.Arguments {
			ca[j] = rules.PromptArg{Name: a.Name, Description: a.Description, Required: a.Required}
			args[j] = PromptArgument{Name: a.Name, Required: a.Required}
			if a.Description != nil {
				args[j].Description = *a.Description
				emptyDescription = emptyDescription || *a.Description == ""
			}
		}
		if got := string(rules.CanonicalPrompt(c.Description, c.FunctionID, ca)); got != c.Canonical {
			t.Errorf("case %d: rules.CanonicalPrompt\n%s\nwant\n%s", i, got, c.Canonical)
		}
		// The Go publisher sends no description for "" (omitempty), so
		// what it signs is the definition without it, as the registry
		// computes from that payload.
		if !emptyDescription {
			if got := promptContent(c.Description, c.FunctionID, args); got != c.Canonical {
				t.Errorf("case %d: the publisher signs\n%s\nwant\n%s", i, got, c.Canonical)
			}
		}
	}
	for _, c := range v.KeyErrors {
		path := "/keys/it's \"mine\""
		want := strings.ReplaceAll(c.Message, "{path}", jsonQuote(path))
		if got := keyMessage(c.Kind, path, c.KeyType); got != want {
			t.Errorf("key error %s:\n%s\nwant\n%s", c.Kind, got, want)
		}
	}
}

// keygenKey is a key ssh-keygen made: the private key file and its
// allowed_signers line.
type keygenKey struct{ name, priv, line string }

func needKeygen(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("not run: ssh-keygen not found (Debian package openssh-client)")
	}
}

// keygen runs ssh-keygen -t typ [-b bits] with args (-N, -m PEM …).
func keygen(t *testing.T, dir, name, typ, bits string, args ...string) keygenKey {
	t.Helper()
	priv := filepath.Join(dir, name)
	a := append([]string{"-q", "-t", typ, "-C", name + "@test", "-f", priv}, args...)
	if bits != "" {
		a = append(a, "-b", bits)
	}
	if !slicesContain(args, "-N") {
		a = append(a, "-N", "")
	}
	if out, err := exec.Command("ssh-keygen", a...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %v: %v\n%s", a, err, out)
	}
	pub, err := os.ReadFile(priv + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	return keygenKey{name: name, priv: priv, line: name + "@example.com namespaces=\"" + rules.SignatureNamespace + "\" " + f[0] + " " + f[1] + "\n"}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// keygenVerify checks armored over content with ssh-keygen -Y verify for
// principal against allowedSigners.
func keygenVerify(t *testing.T, dir, allowedSigners, principal, armored, content string) error {
	t.Helper()
	as, sig := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "content.sig")
	if err := os.WriteFile(as, []byte(allowedSigners), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sig, []byte(armored), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", as, "-I", principal, "-n", rules.SignatureNamespace, "-s", sig)
	cmd.Stdin = strings.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New(string(out))
	}
	return nil
}

// payloadOf is the register payload the publisher holds for key.
func payloadOf(t *testing.T, p *Publisher, key string) map[string]any {
	t.Helper()
	p.reg.mu.Lock()
	defer p.reg.mu.Unlock()
	it, ok := p.reg.items[key]
	if !ok {
		t.Fatalf("no item %s", key)
	}
	raw, _ := json.Marshal(it.payload)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// Every key type ssh-keygen makes (and PEM files, -m PEM) signs skills and
// prompts; ssh-keygen -Y verify accepts each signature over the exact
// bytes the registry checks: a skill's body, a prompt's canonical JSON.
func TestSignaturesVerifyWithSSHKeygen(t *testing.T) {
	needKeygen(t)
	dir := t.TempDir()
	keys := []keygenKey{
		keygen(t, dir, "ed25519", "ed25519", ""),
		keygen(t, dir, "ecdsa256", "ecdsa", "256"),
		keygen(t, dir, "ecdsa384", "ecdsa", "384"),
		keygen(t, dir, "ecdsa521", "ecdsa", "521"),
		keygen(t, dir, "rsa", "rsa", "2048"),
		keygen(t, dir, "rsapem", "rsa", "2048", "-m", "PEM"),
		keygen(t, dir, "ecdsapem", "ecdsa", "256", "-m", "PEM"),
	}
	body := "# Signed\n\nü, \"quotes\" and no trailing newline"
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			signer, err := LoadSigningKey(k.priv)
			if err != nil {
				t.Fatal(err)
			}
			p := NewPublisher(iii.New("ws://127.0.0.1:1"), WithSigner(signer), WithLogger(slog.New(newLogRecorder())))
			defer p.Close(t.Context(), false)
			if err := p.Skill("acme/doc", body); err != nil {
				t.Fatal(err)
			}
			type Args struct {
				Diff  string `json:"diff" jsonschema:"description=the diff"`
				Style string `json:"style,omitempty"`
			}
			fid, err := Prompt(p, "acme-review", "Review <a> & \"b\"\n", func(context.Context, Args) (PromptResult, error) { return Text("x"), nil })
			if err != nil {
				t.Fatal(err)
			}
			skill := payloadOf(t, p, "skill:acme/doc")
			prompt := payloadOf(t, p, "prompt:acme-review")
			sig, _ := skill["signature"].(string)
			if !strings.HasPrefix(sig, "-----BEGIN SSH SIGNATURE-----\n") {
				t.Fatalf("skill payload without an armored signature: %v", skill)
			}
			if err := keygenVerify(t, dir, k.line, k.name+"@example.com", sig, body); err != nil {
				t.Fatalf("ssh-keygen -Y verify refuses the skill's signature: %v", err)
			}
			if err := keygenVerify(t, dir, k.line, k.name+"@example.com", sig, body+"\n"); err == nil {
				t.Fatal("ssh-keygen -Y verify accepts the signature over other bytes")
			}
			canonical := `{"arguments":[{"description":"the diff","name":"diff","required":true},{"name":"style","required":false}],` +
				`"description":"Review <a> & \"b\"\n","function_id":"` + fid + `"}`
			psig, _ := prompt["signature"].(string)
			if err := keygenVerify(t, dir, k.line, k.name+"@example.com", psig, canonical); err != nil {
				t.Fatalf("ssh-keygen -Y verify refuses the prompt's signature over %s: %v", canonical, err)
			}
		})
	}
}

// A ready signature (WithSignature) is sent as given, over the key's.
func TestAGivenSignatureWins(t *testing.T) {
	p := NewPublisher(iii.New("ws://127.0.0.1:1"), WithLogger(slog.New(newLogRecorder())))
	defer p.Close(t.Context(), false)
	if err := p.Skill("a/b", "# b\n", WithSignature("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")); err != nil {
		t.Fatal(err)
	}
	if got := payloadOf(t, p, "skill:a/b")["signature"]; got != "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n" {
		t.Fatalf("signature sent: %v", got)
	}
	if err := p.Skill("a/c", "# c\n"); err != nil {
		t.Fatal(err)
	}
	if _, ok := payloadOf(t, p, "skill:a/c")["signature"]; ok {
		t.Fatal("a publisher without a key sent a signature")
	}
}

// Key files the publisher cannot sign with are refused by LoadSigningKey,
// each with the shared message.
func TestLoadSigningKeyRefusals(t *testing.T) {
	needKeygen(t)
	v := readSigningVectors(t)
	msg := map[string]string{}
	for _, c := range v.KeyErrors {
		msg[c.Kind] = c.Message
	}
	t.Setenv("SSH_AUTH_SOCK", "") // an agent could sign with the encrypted and the public key
	dir := t.TempDir()
	enc := keygen(t, dir, "enc", "ed25519", "", "-N", "correct horse")
	encPEM := keygen(t, dir, "encpem", "rsa", "2048", "-N", "correct horse", "-m", "PEM")
	plain := keygen(t, dir, "plain", "ed25519", "")
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, kind string }{
		{enc.priv, "encrypted"},
		{encPEM.priv, "encrypted_pem"},
		{plain.priv + ".pub", "public"},
		{junk, "not_a_key"},
	}
	if dsa := filepath.Join(dir, "dsa"); exec.Command("ssh-keygen", "-q", "-t", "dsa", "-N", "", "-f", dsa).Run() == nil {
		cases = append(cases, struct{ path, kind string }{dsa, "unsupported"})
	} else {
		t.Log("not run: ssh-keygen makes no DSA key here (the unsupported-type case)")
	}
	for _, c := range cases {
		_, err := LoadSigningKey(c.path)
		want := strings.ReplaceAll(msg[c.kind], "{path}", jsonQuote(c.path))
		if err == nil || err.Error() != want {
			t.Errorf("%s key: %v\nwant %s", c.kind, err, want)
		}
	}
	if _, err := LoadSigningKey(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), `signing key "`+filepath.Join(dir, "absent")+`"`) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// An encrypted key and a public key file sign through the ssh-agent at
// SSH_AUTH_SOCK (as in the Node and Python publishers); a key the agent
// does not hold is refused, naming ssh-add.
func TestLoadSigningKeyThroughAgent(t *testing.T) {
	needKeygen(t)
	for _, tool := range []string{"ssh-agent", "ssh-add"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("not run: ssh-agent not found (Debian package openssh-client)")
		}
	}
	dir, err := os.MkdirTemp("", "skills-agent-") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		agent.Process.Kill()
		agent.Wait()
	})
	// The socket file exists from bind, before listen: wait until ssh-add
	// reaches the agent (exit 1: no identities; 2: cannot connect).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		list := exec.Command("ssh-add", "-l")
		list.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		var exit *exec.ExitError
		if err := list.Run(); err == nil || (errors.As(err, &exit) && exit.ExitCode() == 1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent does not answer at %s after 30 s", sock)
		}
	}
	askpass := filepath.Join(dir, "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\necho 'correct horse'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	held := keygen(t, dir, "held", "rsa", "2048", "-N", "correct horse")
	other := keygen(t, dir, "other", "ecdsa", "256", "-N", "correct horse")
	add := exec.Command("ssh-add", held.priv)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock, "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	for _, file := range []string{held.priv, held.priv + ".pub"} {
		signer, err := LoadSigningKey(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		armored, err := sshsig.Sign(signer, []byte("body"), rules.SignatureNamespace)
		if err != nil {
			t.Fatalf("%s: sign: %v", file, err)
		}
		if err := keygenVerify(t, dir, held.line, held.name+"@example.com", string(armored), "body"); err != nil {
			t.Errorf("%s: ssh-keygen -Y verify refuses the agent's signature: %v", file, err)
		}
	}
	for _, file := range []string{other.priv, other.priv + ".pub"} {
		_, err := LoadSigningKey(file)
		if err == nil || !strings.HasPrefix(err.Error(), "signing key "+jsonQuote(file)+": ") || !strings.Contains(err.Error(), "ssh-add") {
			t.Errorf("%s, not in the agent: %v", file, err)
		}
	}
}
