package sshsig

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Helpers that drive the real OpenSSH tools (Debian's openssh-client). Tests
// that need them skip with "not run: …" when ssh-keygen is absent.

// testKey is a key pair made by ssh-keygen.
type testKey struct {
	name string // "ed25519", "ecdsa-256", …
	priv string // path of the private key file
	pub  string // path of the .pub file
	key  ssh.PublicKey
}

// keyTypes are the ssh-keygen -t/-b pairs of every supported key type.
var keyTypes = []struct{ name, typ, bits string }{
	{"ed25519", "ed25519", ""},
	{"ecdsa-256", "ecdsa", "256"},
	{"ecdsa-384", "ecdsa", "384"},
	{"ecdsa-521", "ecdsa", "521"},
	{"rsa-3072", "rsa", "3072"},
}

// keyCache holds the keys ssh-keygen made for this test binary: RSA keys are
// slow to make, so every test shares them. Test-only state.
var keyCache struct {
	once sync.Once
	dir  string
	keys map[string]*testKey
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if keyCache.dir != "" {
		os.RemoveAll(keyCache.dir)
	}
	os.Exit(code)
}

func needOpenSSH(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"ssh-keygen"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("not run: %s not found (Debian package openssh-client)", tool)
		}
	}
}

// keys returns one ssh-keygen key of every supported type, by name.
func keys(t testing.TB) map[string]*testKey {
	t.Helper()
	needOpenSSH(t)
	keyCache.once.Do(func() {
		keyCache.dir, keyCache.err = os.MkdirTemp("", "sshsig-keys-")
		if keyCache.err != nil {
			return
		}
		keyCache.keys = map[string]*testKey{}
		for _, kt := range keyTypes {
			k, err := makeKey(keyCache.dir, kt.name, kt.typ, kt.bits, "")
			if err != nil {
				keyCache.err = err
				return
			}
			keyCache.keys[kt.name] = k
		}
	})
	if keyCache.err != nil {
		t.Fatal(keyCache.err)
	}
	return keyCache.keys
}

// makeKey runs ssh-keygen -t typ [-b bits] -N passphrase.
func makeKey(dir, name, typ, bits, passphrase string) (*testKey, error) {
	priv := filepath.Join(dir, name)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", name + "@test", "-f", priv}
	if bits != "" {
		args = append(args, "-b", bits)
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ssh-keygen %v: %v: %s", args, err, out)
	}
	data, err := os.ReadFile(priv + ".pub")
	if err != nil {
		return nil, err
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s.pub: %v", priv, err)
	}
	return &testKey{name: name, priv: priv, pub: priv + ".pub", key: key}, nil
}

// authorizedLine is the "type base64" form of a key for allowed_signers.
func authorizedLine(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// keygenSign runs `ssh-keygen -Y sign` over message and returns the armored
// signature; extra goes before the file name (such as -O hashalg=sha256).
func keygenSign(t testing.TB, keyFile, namespace string, message []byte, env []string, extra ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	msg := filepath.Join(dir, "message")
	if err := os.WriteFile(msg, message, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-Y", "sign", "-n", namespace, "-f", keyFile}, extra...)
	cmd := exec.Command("ssh-keygen", append(args, msg)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %v: %v: %s", args, err, out)
	}
	sig, err := os.ReadFile(msg + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// keygen runs ssh-keygen with args, message on stdin, and returns whether it
// exited 0 and what it printed. env adds variables (such as TZ=…).
func keygen(t testing.TB, message []byte, env []string, args ...string) (bool, string) {
	t.Helper()
	cmd := exec.Command("ssh-keygen", args...)
	cmd.Stdin = bytes.NewReader(message)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("ssh-keygen %v: %v", args, err)
	}
	return err == nil, string(out)
}

// keygenVerify runs `ssh-keygen -Y verify` for principal and namespace against
// the allowed_signers text; verifyTime is "" (now) or an ssh-keygen time.
func keygenVerify(t testing.TB, allowed string, principal, namespace string, sig, message []byte, verifyTime string, env ...string) (bool, string) {
	t.Helper()
	dir := t.TempDir()
	as, sf := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "sig")
	writeFile(t, as, allowed)
	writeFile(t, sf, string(sig))
	args := []string{"-Y", "verify", "-f", as, "-I", principal, "-n", namespace, "-s", sf}
	if verifyTime != "" {
		args = append(args, "-O", "verify-time="+verifyTime)
	}
	return keygen(t, message, env, args...)
}

// keygenFindPrincipals runs `ssh-keygen -Y find-principals` and returns the
// principals it prints, or nil when it finds none.
func keygenFindPrincipals(t testing.TB, allowed string, sig []byte, verifyTime string, env ...string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	as, sf := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "sig")
	writeFile(t, as, allowed)
	writeFile(t, sf, string(sig))
	args := []string{"-Y", "find-principals", "-f", as, "-s", sf}
	if verifyTime != "" {
		args = append(args, "-O", "verify-time="+verifyTime)
	}
	cmd := exec.Command("ssh-keygen", args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("ssh-keygen %v: %v", args, err)
	}
	if err != nil {
		return nil, stderr.String()
	}
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n"), stderr.String()
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func loadSigner(t testing.TB, k *testKey) ssh.Signer {
	t.Helper()
	s, err := LoadSigner(k.priv, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
