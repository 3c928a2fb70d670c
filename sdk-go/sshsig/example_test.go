package sshsig_test

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/iii-skills/skills/sdk-go/sshsig"
)

func Example() {
	// A fixed key so that the output is stable; use sshsig.LoadSigner for a key file.
	signer, _ := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	skill := []byte("# resend\n\nEmail provider integration.\n")

	armored, err := sshsig.Sign(signer, skill, "iii-skills")
	if err != nil {
		panic(err)
	}

	// The operator's allowed_signers file.
	signers, err := sshsig.ParseAllowedSigners(strings.NewReader(
		`alice@example.com namespaces="iii-skills" ` + string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))
	if err != nil {
		panic(err)
	}

	sig, err := sshsig.Verify(skill, armored, "iii-skills")
	if err != nil {
		panic(err)
	}
	who, err := signers.Principal(sig.Key, "iii-skills", time.Now())
	if err != nil {
		panic(err)
	}
	fmt.Printf("signed by %s, key %s\n", who, sig.Fingerprint)

	_, err = sshsig.Verify([]byte("# resend\n\nSomething else.\n"), armored, "iii-skills")
	fmt.Println(err != nil)
	_, err = sshsig.Verify(skill, armored, "git")
	fmt.Println(err)
	// Output:
	// signed by alice@example.com, key SHA256:tAXFyTXI8xtDaujAEcwJslAYc9/6FKcUkd2Lw0xDhPo
	// true
	// sshsig: namespace mismatch: the signature is for namespace "iii-skills", expected "git"
}
