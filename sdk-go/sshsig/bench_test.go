package sshsig

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Benchmarks: Verify per call (parse + check) for the key types a server sees
// most, over a 4 KiB skill body; Sign for comparison; Authorize against a
// large allowed_signers file.
//
//	go test -run '^$' -bench . -benchmem ./sdk-go/sshsig

func BenchmarkVerify(b *testing.B) {
	signers := goSigners(b, 3072)
	body := []byte(strings.Repeat("# skill\n\nSome markdown. ", 160))[:4096]
	for _, name := range []string{"ed25519", "ecdsa-p256", "rsa"} {
		label := name
		if name == "rsa" {
			label = "rsa-3072"
		}
		armored, err := Sign(signers[name], body, ns)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(label, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Verify(body, armored, ns); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSign(b *testing.B) {
	signers := goSigners(b, 3072)
	body := []byte(strings.Repeat("x", 4096))
	for _, name := range []string{"ed25519", "rsa"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Sign(signers[name], body, ns); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAuthorize: the last of 1000 ed25519 lines matches.
func BenchmarkAuthorize(b *testing.B) {
	var text strings.Builder
	var last ssh.PublicKey
	for i := range 1000 {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		last, err = ssh.NewPublicKey(pub)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&text, "user%d@example.com namespaces=\"iii-skills\" %s\n", i, authorizedLine(last))
	}
	as, err := ParseAllowedSigners(strings.NewReader(text.String()))
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	b.Run("Authorize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := as.Authorize("user999@example.com", last, ns, at); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Principal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := as.Principal(last, ns, at); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(text.Len()))
		for b.Loop() {
			if _, err := ParseAllowedSigners(strings.NewReader(text.String())); err != nil {
				b.Fatal(err)
			}
		}
	})
}
