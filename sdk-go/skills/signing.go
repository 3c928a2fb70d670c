package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
)

// Signed versions (docs/trust.md, docs/publishers.md "Signing"): a
// publisher given a key signs the exact bytes it registers, in OpenSSH's
// SSHSIG format for namespace iii-skills, and sends the armored signature
// with the register. A skill's bytes are its body; a prompt's, its
// canonical JSON (rules.CanonicalPrompt). The Node and Python publishers
// word their key errors the same way (conformance/vectors/signing.json).

// maxKeyFileSize caps what LoadSigningKey reads: the largest key ssh-keygen
// makes (RSA 16384 bits) is about 12 KiB.
const maxKeyFileSize = 1 << 20

// LoadSigningKey reads the key file at path, as ssh-keygen writes it
// (OpenSSH format, or PEM with -m PEM): ssh-ed25519,
// ecdsa-sha2-nistp256/384/521 or ssh-rsa. An unencrypted private key signs
// here; an encrypted private key or a public key file (.pub) signs through
// the ssh-agent at SSH_AUTH_SOCK, which must hold the key (as the Node and
// Python publishers do). A file that holds no key, a key of another type,
// or an agent that is not set, cannot be reached or does not hold the key
// is an error that says so and what to do. To give a passphrase instead,
// build the signer with sshsig.LoadSigner and pass it to WithSigner.
func LoadSigningKey(path string) (ssh.Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", jsonQuote(path), err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", jsonQuote(path), err)
	}
	if len(data) > maxKeyFileSize {
		return nil, errors.New(keyMessage(keyNotAKey, path, ""))
	}
	agentSocket := os.Getenv("SSH_AUTH_SOCK")
	s, err := sshsig.ParseSigner(data, nil, agentSocket)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, sshsig.ErrUnsupportedKey):
		return nil, errors.New(keyMessage(keyUnsupported, path, keyTypeOf(err)))
	case errors.Is(err, sshsig.ErrPassphraseRequired) && !bytes.Contains(data, []byte("OPENSSH PRIVATE KEY")):
		// A PEM key records no public key outside its encrypted part: the
		// agent cannot be asked for it.
		return nil, errors.New(keyMessage(keyEncryptedPEM, path, ""))
	case agentSocket == "" && errors.Is(err, sshsig.ErrPassphraseRequired):
		return nil, errors.New(keyMessage(keyEncrypted, path, ""))
	case agentSocket == "" && errors.Is(err, sshsig.ErrNoAgent):
		return nil, errors.New(keyMessage(keyPublic, path, ""))
	case agentSocket != "" && errors.Is(err, sshsig.ErrPassphraseRequired):
		// An encrypted key the agent does not hold (ErrNotInAgent is a .pub's).
		return nil, fmt.Errorf("signing key %s: %w (add it with ssh-add)", jsonQuote(path), err)
	case agentSocket != "" && strings.Contains(err.Error(), "ssh-agent"):
		// sshsig names the agent in every error of reaching or asking it.
		return nil, fmt.Errorf("signing key %s: %w", jsonQuote(path), err)
	}
	return nil, errors.New(keyMessage(keyNotAKey, path, ""))
}

// The kinds of bad key file, and their messages (the same in the three
// publishers: conformance/vectors/signing.json).
const (
	keyEncrypted    = "encrypted"
	keyPublic       = "public"
	keyEncryptedPEM = "encrypted_pem"
	keyNotAKey      = "not_a_key"
	keyUnsupported  = "unsupported"
)

func keyMessage(kind, path, keyType string) string {
	p := jsonQuote(path)
	switch kind {
	case keyEncrypted:
		return "signing key " + p + " is encrypted (it has a passphrase) and SSH_AUTH_SOCK is not set: load the key into an " +
			"ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; or sign with " +
			"ssh-keygen -Y sign -n " + rules.SignatureNamespace + " (or skills sign) and pass the signature"
	case keyPublic:
		return "signing key " + p + " is a public key and SSH_AUTH_SOCK is not set: load its private half into an " +
			"ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; or give the " +
			"private key file (the one without .pub)"
	case keyEncryptedPEM:
		return "signing key " + p + " is an encrypted PEM key, whose public key cannot be read without its passphrase: " +
			"give its public key file (.pub) to sign through the ssh-agent that holds the key, or rewrite it in the " +
			"OpenSSH format (ssh-keygen -p -f FILE), which records the public key"
	case keyUnsupported:
		return "signing key " + p + " is of type " + keyType + ": expected ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 or ssh-rsa"
	}
	return "signing key " + p + " is not an OpenSSH private key: expected the file ssh-keygen writes (-----BEGIN OPENSSH PRIVATE KEY-----)"
}

// keyTypeOf reads the key type out of sshsig's ErrUnsupportedKey message
// (`unsupported key type: "ssh-dss", expected …`).
func keyTypeOf(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, `key type: "`); i >= 0 {
		rest := msg[i+len(`key type: "`):]
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			return rest[:j]
		}
	}
	return "unsupported"
}

// WithSigner makes the publisher sign every skill body and prompt
// definition it registers with signer (from LoadSigningKey, or
// sshsig.LoadSigner for a key with a passphrase), namespace
// iii-skills. Each is signed once, when Skill or Prompt adds it, and the
// signature is sent again at every re-registration. A signature given with
// WithSignature wins.
func WithSigner(signer ssh.Signer) Option { return func(c *config) { c.signer = signer } }

// WithSignature sends armored, an SSH signature made elsewhere (ssh-keygen
// -Y sign -n iii-skills, skills sign), with the register of this skill
// (over its exact body) or prompt (over its canonical JSON,
// rules.CanonicalPrompt). The registry checks it: one over other bytes is
// refused with BAD_SIGNATURE.
func WithSignature(armored string) FuncOption { return func(c *funcConfig) { c.signature = armored } }

// signatureFor is the signature a register of content carries: the one
// given (WithSignature), else one made now with the publisher's key, else
// "". It is made once, when the item is added, and sent again at every
// re-registration.
func (p *Publisher) signatureFor(given, content string) (string, error) {
	if given != "" || p.cfg.signer == nil {
		return given, nil
	}
	armored, err := sshsig.Sign(p.cfg.signer, []byte(content), rules.SignatureNamespace)
	if err != nil {
		return "", fmt.Errorf("skills: signing with key %s: %w", ssh.FingerprintSHA256(p.cfg.signer.PublicKey()), err)
	}
	return string(armored), nil
}

// promptContent is a prompt's canonical JSON, the bytes its signature
// covers (as the registry computes it from the register payload).
func promptContent(description, functionID string, args []PromptArgument) string {
	ca := make([]rules.PromptArg, len(args))
	for i, a := range args {
		ca[i] = rules.PromptArg{Name: a.Name, Required: a.Required}
		if a.Description != "" { // sent only when set (omitempty)
			d := a.Description
			ca[i].Description = &d
		}
	}
	return string(rules.CanonicalPrompt(description, functionID, ca))
}
