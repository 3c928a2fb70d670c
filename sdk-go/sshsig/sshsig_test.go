package sshsig

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

const ns = "iii-skills"

// message is a skill body with bytes that trip careless code: CRLF, NUL, UTF-8.
var message = []byte("# resend\r\n\nEmail provider — integration.\x00\n")

// Signatures made by ssh-keygen, with its default sha512 and with sha256,
// verify here and report the key and the fingerprint ssh-keygen -l prints.
func TestVerifyOpenSSHSignatures(t *testing.T) {
	for _, kt := range keyTypes {
		k := keys(t)[kt.name]
		t.Run(kt.name, func(t *testing.T) {
			out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", k.pub).Output()
			if err != nil {
				t.Fatal(err)
			}
			wantFP := strings.Fields(string(out))[1]
			for _, hash := range []string{HashSHA512, HashSHA256} {
				armored := keygenSign(t, k.priv, ns, message, nil, "-O", "hashalg="+hash)
				s, err := Verify(message, armored, ns)
				if err != nil {
					t.Fatalf("%s: %v", hash, err)
				}
				if s.Fingerprint != wantFP || s.HashAlgorithm != hash || s.Namespace != ns ||
					!bytes.Equal(s.Key.Marshal(), k.key.Marshal()) {
					t.Fatalf("%s: got %s %s %s, want %s %s %s", hash, s.Fingerprint, s.HashAlgorithm, s.Namespace, wantFP, hash, ns)
				}
				if _, err := Verify(append(message, '!'), armored, ns); !errors.Is(err, ErrBadSignature) {
					t.Fatalf("%s: changed message: %v, want ErrBadSignature", hash, err)
				}
			}
		})
	}
}

// Signatures made here verify with ssh-keygen -Y verify, and for the
// deterministic algorithms (ed25519, RSA PKCS#1 v1.5) they are byte for byte
// what ssh-keygen writes.
func TestSignVerifiedByOpenSSH(t *testing.T) {
	for _, kt := range keyTypes {
		k := keys(t)[kt.name]
		t.Run(kt.name, func(t *testing.T) {
			armored, err := Sign(loadSigner(t, k), message, ns)
			if err != nil {
				t.Fatal(err)
			}
			checkArmorShape(t, armored)
			allowed := "alice@example.com " + authorizedLine(k.key) + "\n"
			ok, out := keygenVerify(t, allowed, "alice@example.com", ns, armored, message, "")
			if !ok || !strings.Contains(out, `Good "iii-skills" signature for alice@example.com`) {
				t.Fatalf("ssh-keygen -Y verify refused our signature: %s", out)
			}
			if ok, out := keygenVerify(t, allowed, "alice@example.com", ns, armored, append(message, '!'), ""); ok {
				t.Fatalf("ssh-keygen -Y verify accepted a changed message: %s", out)
			}
			if ok, out := keygenVerify(t, allowed, "alice@example.com", "git", armored, message, ""); ok {
				t.Fatalf("ssh-keygen -Y verify accepted another namespace: %s", out)
			}
			if kt.typ == "ecdsa" {
				return // randomised signatures
			}
			if want := keygenSign(t, k.priv, ns, message, nil); !bytes.Equal(armored, want) {
				t.Fatalf("our signature differs from ssh-keygen's:\n%s\nwant\n%s", armored, want)
			}
		})
	}
}

// checkArmorShape checks the armor as ssh-keygen writes it: header, base64
// lines of 70 columns (the last shorter), footer, final newline.
func checkArmorShape(t *testing.T, armored []byte) {
	t.Helper()
	lines := strings.Split(string(armored), "\n")
	if len(lines) < 4 || lines[0] != armorBegin || lines[len(lines)-2] != armorEnd || lines[len(lines)-1] != "" {
		t.Fatalf("bad armor:\n%s", armored)
	}
	body := lines[1 : len(lines)-2]
	for i, l := range body {
		if len(l) > 70 || (i < len(body)-1 && len(l) != 70) || l == "" {
			t.Fatalf("base64 line %d has %d columns:\n%s", i+1, len(l), armored)
		}
	}
}

// A blob whose base64 is an exact multiple of 70 columns gets no blank line.
func TestArmorWidth(t *testing.T) {
	for _, n := range []int{1, 51, 52, 53, 105, 106} { // 52 bytes → 72 chars; 105 → 140
		a := armor(bytes.Repeat([]byte{0xfb}, n))
		checkArmorShape(t, a)
		blob, err := dearmor(a)
		if err != nil || len(blob) != n {
			t.Fatalf("%d bytes: %v %d", n, err, len(blob))
		}
	}
}

// Private key files: encrypted ones with their passphrase, PEM-format RSA.
func TestLoadSigner(t *testing.T) {
	needOpenSSH(t)
	dir := t.TempDir()
	enc, err := makeKey(dir, "enc", "ed25519", "", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(enc.priv, nil, ""); !errors.Is(err, ErrPassphraseRequired) || !strings.Contains(err.Error(), enc.priv) {
		t.Fatalf("no passphrase: %v, want ErrPassphraseRequired naming the file", err)
	}
	if _, err := LoadSigner(enc.priv, []byte("wrong"), ""); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("wrong passphrase: %v, want ErrWrongPassphrase", err)
	}
	s, err := LoadSigner(enc.priv, []byte("correct horse"), "")
	if err != nil {
		t.Fatal(err)
	}
	armored, err := Sign(s, message, ns)
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := keygenVerify(t, "a "+authorizedLine(enc.key)+"\n", "a", ns, armored, message, ""); !ok {
		t.Fatalf("ssh-keygen refused the signature made with the decrypted key: %s", out)
	}

	pem := dir + "/pem"
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f", pem).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s, err = LoadSigner(pem, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	armored, err = Sign(s, message, ns)
	if err != nil {
		t.Fatal(err)
	}
	if want := keygenSign(t, pem, ns, message, nil); !bytes.Equal(armored, want) {
		t.Fatalf("PEM RSA key: our signature differs from ssh-keygen's")
	}

	for _, tc := range []struct {
		name, content string
		want          error
	}{
		{"not a key", "hello\n", nil},
		{"public only, no agent", authorizedLine(enc.key) + "\n", ErrNoAgent},
		{"dsa private key", "", ErrUnsupportedKey},
		{"dsa public key", "", ErrUnsupportedKey},
	} {
		path := dir + "/bad"
		if strings.HasPrefix(tc.name, "dsa") {
			dsa, err := makeKey(t.TempDir(), "dsa", "dsa", "", "")
			if err != nil {
				t.Skipf("not run: ssh-keygen makes no DSA keys: %v", err)
			}
			path = dsa.priv
			if strings.HasSuffix(tc.name, "public key") {
				path = dsa.pub
			}
		} else {
			writeFile(t, path, tc.content)
		}
		_, err := LoadSigner(path, nil, "")
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if _, err := LoadSigner(dir+"/absent", nil, ""); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestSignRefuses(t *testing.T) {
	k := keys(t)["ed25519"]
	s := loadSigner(t, k)
	for _, n := range []string{"", "a\x00b"} {
		if _, err := Sign(s, message, n); err == nil {
			t.Fatalf("namespace %q: no error", n)
		}
	}
	// A signer that answers with a signature for other data is caught.
	if _, err := Sign(lyingSigner{s}, message, ns); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("lying signer: %v", err)
	}
}

type lyingSigner struct{ ssh.Signer }

func (l lyingSigner) Sign(r io.Reader, data []byte) (*ssh.Signature, error) {
	return l.Signer.Sign(r, append([]byte("x"), data...))
}
