// Package sshsig signs and verifies content with SSH keys in OpenSSH's SSHSIG
// format, the signatures of `ssh-keygen -Y sign` and git's SSH commit
// signing, and decides who is trusted with an allowed_signers file, the file
// of `ssh-keygen -Y verify` and git's gpg.ssh.allowedSignersFile.
//
// The three calls:
//
//   - [Sign] signs a message for a namespace ("iii-skills" for the skills
//     registry) with an ssh.Signer, from [LoadSigner] (a private key file,
//     encrypted or not, or a public key file whose key an ssh-agent holds).
//     The armored result is byte for byte what ssh-keygen writes for the same
//     ed25519 or RSA key.
//   - [Verify] checks an armored signature over a message for a namespace and
//     returns the signer's key and SHA256 fingerprint. Each failure is an
//     error of its kind ([ErrMalformed], [ErrNamespace], [ErrBadSignature], …).
//   - [AllowedSigners] ([ParseAllowedSigners], [ReadAllowedSigners]) answers
//     whether a principal may sign in a namespace with a key at a time
//     ([AllowedSigners.Authorize], as ssh-keygen -Y verify), which principals
//     a key belongs to ([AllowedSigners.FindPrincipals], as
//     ssh-keygen -Y find-principals), and who signed a verified signature
//     ([AllowedSigners.Principal]).
//
// Keys: ssh-ed25519, ecdsa-sha2-nistp256/384/521 and ssh-rsa (1024 to 16384
// bits, signing with rsa-sha2-512 as ssh-keygen does). Certificates,
// security keys (sk-…) and DSA are refused with [ErrUnsupportedKey]; so are
// cert-authority lines in allowed_signers. Message hashes: sha512 (what Sign
// uses and ssh-keygen's default) and sha256.
//
// Verifying the content of a registry version:
//
//	sig, err := sshsig.Verify([]byte(skill), []byte(armored), "iii-skills")
//	if err != nil {
//		return err // BAD_SIGNATURE: err says what was wrong
//	}
//	who, err := signers.Principal(sig.Key, "iii-skills", time.Now())
//	if err != nil {
//		return err // UNSIGNED: a *NotAllowedError naming the fingerprint and namespace
//	}
//
// The package keeps no global state; an AllowedSigners is immutable and safe
// for concurrent use.
package sshsig
