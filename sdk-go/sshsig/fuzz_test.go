package sshsig

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Fuzz targets for the two parsers. Their seeds run with `go test`;
// `make fuzz` explores each for FUZZTIME.

// goSigners makes keys in-process (no ssh-keygen needed): ed25519, ECDSA
// P-256 and RSA of the given size.
func goSigners(tb testing.TB, rsaBits int) map[string]ssh.Signer {
	tb.Helper()
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, rsaBits)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]ssh.Signer{}
	for name, k := range map[string]any{"ed25519": edKey, "ecdsa-p256": ecKey, "rsa": rsaKey} {
		s, err := ssh.NewSignerFromKey(k)
		if err != nil {
			tb.Fatal(err)
		}
		out[name] = s
	}
	return out
}

var errorKinds = []error{ErrTooLarge, ErrMalformed, ErrMagic, ErrVersion, ErrUnsupportedKey, ErrUnsupportedHash, ErrNamespace, ErrBadSignature}

func FuzzVerify(f *testing.F) {
	for _, s := range goSigners(f, 1024) {
		armored, err := Sign(s, message, ns)
		if err != nil {
			f.Fatal(err)
		}
		blob, _ := dearmor(armored)
		f.Add(armored, false)
		f.Add(blob, true)
	}
	f.Add([]byte(armorBegin+"\n"+armorEnd), false)
	f.Add([]byte("SSHSIG\x00\x00\x00\x01\xff\xff\xff\xff"), true)
	f.Fuzz(func(t *testing.T, data []byte, asBlob bool) {
		armored := data
		if asBlob {
			armored = armor(data)
		}
		s, err := Parse(armored)
		if err == nil {
			if s.Key == nil || !strings.HasPrefix(s.Fingerprint, "SHA256:") {
				t.Fatalf("parsed without a key: %+v", s)
			}
			err = s.Verify(message, ns)
			if err == nil {
				return // a signature from the seeds
			}
		}
		if !kindOf(err) {
			t.Fatalf("error of no kind: %v", err)
		}
	})
}

func kindOf(err error) bool {
	for _, k := range errorKinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func FuzzAllowedSigners(f *testing.F) {
	signers := goSigners(f, 1024)
	keyLine := authorizedLine(signers["ed25519"].PublicKey())
	f.Add("alice@example.com "+keyLine+"\n", "alice@example.com", "iii-skills", int64(1700000000))
	f.Add(`*@x,!b@x,"c d" namespaces="iii-*,!git",valid-after="20240101Z",valid-before="202601010000UTC" `+keyLine+" comment\n", "a@x", "iii-skills", int64(1750000000))
	f.Add("# c\n\n\t"+`a VALID-AFTER="20240101" `+authorizedLine(signers["rsa"].PublicKey())+"\r\n", "a", "git", int64(0))
	f.Add(`a cert-authority,namespaces="\"" `+keyLine, "a", "\"", int64(-1))
	f.Add(`"a`+"\n", "", "", int64(1))
	f.Fuzz(func(t *testing.T, text, principal, namespace string, at int64) {
		as, err := parseAllowedSigners(strings.NewReader(text), time.UTC)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 || le.Msg == "" {
				t.Fatalf("not a line error: %v", err)
			}
			return
		}
		when := time.Unix(at, 0)
		for _, e := range as.entries {
			if e.key == nil || e.line < 1 || e.principals == "" {
				t.Fatalf("bad entry %+v", e)
			}
			authErr := as.Authorize(principal, e.key, namespace, when)
			if authErr != nil && !errors.Is(authErr, ErrNotAllowed) {
				t.Fatalf("Authorize: %v", authErr)
			}
			if _, err := as.FindPrincipals(e.key, when); err != nil && !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("FindPrincipals: %v", err)
			}
			p, err := as.Principal(e.key, namespace, when)
			if err == nil {
				if err := as.Authorize(p, e.key, namespace, when); err != nil {
					t.Fatalf("Principal %q not authorized: %v", p, err)
				}
			} else if !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("Principal: %v", err)
			}
		}
	})
}

// FuzzMatchPattern checks the linear matcher against OpenSSH's recursive one.
func FuzzMatchPattern(f *testing.F) {
	for _, c := range [][2]string{{"alice@example.com", "*@example.com"}, {"abc", "a?c"}, {"", "**"}, {"xzy", "x*?**y"}, {"aaa", "*a*a*a"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, s, p string) {
		if len(s) > 16 || len(p) > 16 { // the reference is exponential in the worst case
			return
		}
		if got, want := matchPattern(s, p), referenceMatch(s, p); got != want {
			t.Fatalf("matchPattern(%q, %q) = %v, OpenSSH's gives %v", s, p, got, want)
		}
	})
}
