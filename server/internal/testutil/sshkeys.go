package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SSHKey is a key pair ssh-keygen made, for tests of signed content with
// the real OpenSSH (Debian's openssh-client).
type SSHKey struct {
	Private string // the private key file
	Public  string // "ssh-ed25519 AAAA…" (type and base64)
	// Fingerprint is the key's "SHA256:…", as ssh-keygen -l prints it.
	Fingerprint string
}

// NeedSSHKeygen skips the test with "not run" when ssh-keygen is absent.
func NeedSSHKeygen(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		tb.Skip("not run: ssh-keygen not found (Debian package openssh-client)")
	}
}

// NewSSHKey makes a key of type typ ("ed25519", "ecdsa", "rsa") in a
// temporary folder of tb.
func NewSSHKey(tb testing.TB, typ string) SSHKey {
	tb.Helper()
	NeedSSHKeygen(tb)
	priv := filepath.Join(tb.TempDir(), "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", "", "-C", typ + "@test", "-f", priv}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		tb.Fatalf("ssh-keygen %v: %v: %s", args, err, out)
	}
	pub, err := os.ReadFile(priv + ".pub")
	if err != nil {
		tb.Fatal(err)
	}
	fields := strings.Fields(string(pub))
	out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", priv+".pub").CombinedOutput()
	if err != nil {
		tb.Fatalf("ssh-keygen -l: %v: %s", err, out)
	}
	return SSHKey{Private: priv, Public: fields[0] + " " + fields[1], Fingerprint: strings.Fields(string(out))[1]}
}

// Sign signs message with ssh-keygen -Y sign -n namespace and returns the
// armored signature.
func (k SSHKey) Sign(tb testing.TB, namespace string, message []byte) string {
	tb.Helper()
	msg := filepath.Join(tb.TempDir(), "message")
	if err := os.WriteFile(msg, message, 0o600); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", namespace, "-f", k.Private, msg).CombinedOutput(); err != nil {
		tb.Fatalf("ssh-keygen -Y sign: %v: %s", err, out)
	}
	sig, err := os.ReadFile(msg + ".sig")
	if err != nil {
		tb.Fatal(err)
	}
	return string(sig)
}

// AllowedLine is an allowed_signers line trusting k as principal for
// namespace ("" for any).
func (k SSHKey) AllowedLine(principal, namespace string) string {
	if namespace == "" {
		return principal + " " + k.Public
	}
	return fmt.Sprintf("%s namespaces=%q %s", principal, namespace, k.Public)
}

// KeygenVerify runs ssh-keygen -Y verify over message with the armored
// signature, as principal in namespace, against the allowed_signers text:
// whether OpenSSH accepts it, and what it printed.
func KeygenVerify(tb testing.TB, allowed, principal, namespace, signature string, message []byte) (bool, string) {
	tb.Helper()
	dir := tb.TempDir()
	as, sf := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "sig")
	if err := os.WriteFile(as, []byte(allowed), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(sf, []byte(signature), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", as, "-I", principal, "-n", namespace, "-s", sf)
	cmd.Stdin = bytes.NewReader(message)
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		tb.Fatalf("ssh-keygen -Y verify: %v", err)
	}
	return err == nil, string(out)
}
