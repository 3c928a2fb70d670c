package sshsig

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// startAgent starts a real ssh-agent on a socket of its own and stops it when
// the test ends.
func startAgent(t *testing.T) string {
	t.Helper()
	needOpenSSH(t, "ssh-agent", "ssh-add")
	dir, err := os.MkdirTemp("", "sshsig-agent-") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// The socket file exists from bind, before listen: wait until ssh-add
	// reaches the agent (exit 1: no identities; 2: cannot connect).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if agentListens(sock) {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent does not answer at %s after 30 s: %s", sock, out.String())
		}
	}
}

// agentListens reports whether ssh-add -l reaches the agent at sock.
func agentListens(sock string) bool {
	cmd := exec.Command("ssh-add", "-l")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	err := cmd.Run()
	var exit *exec.ExitError
	return err == nil || (errors.As(err, &exit) && exit.ExitCode() == 1)
}

func sshAdd(t *testing.T, sock, keyFile string) {
	t.Helper()
	cmd := exec.Command("ssh-add", "-q", keyFile)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add %s: %v: %s", keyFile, err, out)
	}
}

// A public key file signs through a real ssh-agent, as git does with a .pub
// user.signingKey; RSA keys ask the agent for rsa-sha2-512.
func TestAgentSigning(t *testing.T) {
	ks := keys(t)
	sock := startAgent(t)
	for _, name := range []string{"ed25519", "ecdsa-384", "rsa-3072"} {
		k := ks[name]
		t.Run(name, func(t *testing.T) {
			if _, err := LoadSigner(k.pub, nil, sock); !errors.Is(err, ErrNotInAgent) {
				t.Fatalf("before ssh-add: %v, want ErrNotInAgent", err)
			}
			sshAdd(t, sock, k.priv)
			s, err := LoadSigner(k.pub, nil, sock)
			if err != nil {
				t.Fatal(err)
			}
			armored, err := Sign(s, message, ns)
			if err != nil {
				t.Fatal(err)
			}
			if ok, out := keygenVerify(t, "bob "+authorizedLine(k.key)+"\n", "bob", ns, armored, message, ""); !ok {
				t.Fatalf("ssh-keygen refused the agent's signature: %s", out)
			}
			if name == "ecdsa-384" {
				return
			}
			if want := keygenSign(t, k.priv, ns, message, nil); !bytes.Equal(armored, want) {
				t.Fatalf("agent signature differs from ssh-keygen's:\n%s\nwant\n%s", armored, want)
			}
		})
	}
	if _, err := LoadSigner(ks["ed25519"].pub, nil, ""); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("no socket: %v, want ErrNoAgent", err)
	}
	if _, err := LoadSigner(ks["ed25519"].pub, nil, sock+".absent"); err == nil {
		t.Fatal("absent socket: no error")
	}
}

// An encrypted key file with no passphrase signs through the agent when the
// agent holds the key, as ssh-keygen -Y sign does.
func TestAgentEncryptedKey(t *testing.T) {
	needOpenSSH(t)
	sock := startAgent(t)
	dir := t.TempDir()
	enc, err := makeKey(dir, "enc", "ed25519", "", "secret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(enc.priv, nil, sock); !errors.Is(err, ErrPassphraseRequired) {
		t.Fatalf("agent without the key: %v, want ErrPassphraseRequired", err)
	}
	plain := filepath.Join(dir, "plain")
	data, err := os.ReadFile(enc.priv)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, plain, string(data))
	if out, err := exec.Command("ssh-keygen", "-q", "-p", "-P", "secret", "-N", "", "-f", plain).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sshAdd(t, sock, plain)
	s, err := LoadSigner(enc.priv, nil, sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*viaAgent); !ok {
		t.Fatalf("signer %T, want the agent's", s)
	}
	armored, err := Sign(s, message, ns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(message, armored, ns); err != nil {
		t.Fatal(err)
	}
}
