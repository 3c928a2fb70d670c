package sshsig

import (
	"errors"
	"fmt"
)

// The kinds of failure. Every error this package returns for a bad signature,
// key or file matches one of these with errors.Is, and its message says what
// was wrong and what was expected.
var (
	// ErrTooLarge: the armored signature is longer than [MaxArmoredSize].
	ErrTooLarge = errors.New("signature too large")
	// ErrMalformed: the armor, the base64 or the binary structure is broken or truncated.
	ErrMalformed = errors.New("malformed signature")
	// ErrMagic: the blob does not start with the SSHSIG preamble.
	ErrMagic = errors.New("not an SSHSIG signature")
	// ErrVersion: an SSHSIG version other than 1.
	ErrVersion = errors.New("unsupported SSHSIG version")
	// ErrUnsupportedKey: a key type other than ssh-ed25519, ecdsa-sha2-nistp256/384/521
	// or ssh-rsa (1024 to 16384 bits); certificates and security keys included.
	ErrUnsupportedKey = errors.New("unsupported key type")
	// ErrUnsupportedHash: a message hash other than sha512 or sha256, or an RSA
	// signature made with SHA-1 (ssh-rsa).
	ErrUnsupportedHash = errors.New("unsupported hash algorithm")
	// ErrNamespace: the signature was made for another namespace ([*NamespaceError]).
	ErrNamespace = errors.New("namespace mismatch")
	// ErrBadSignature: the signature does not verify over the message.
	ErrBadSignature = errors.New("signature does not verify")
	// ErrNotAllowed: allowed_signers does not trust the key for that principal,
	// namespace and time ([*NotAllowedError]).
	ErrNotAllowed = errors.New("signer not allowed")

	// ErrPassphraseRequired: the private key file is encrypted, no passphrase
	// was given and no ssh-agent holds the key.
	ErrPassphraseRequired = errors.New("passphrase required")
	// ErrWrongPassphrase: the passphrase does not decrypt the private key file.
	ErrWrongPassphrase = errors.New("wrong passphrase")
	// ErrNoAgent: the key file holds only a public key and no ssh-agent socket was given.
	ErrNoAgent = errors.New("no ssh-agent")
	// ErrNotInAgent: the ssh-agent does not hold the private half of the key.
	ErrNotInAgent = errors.New("key not in ssh-agent")
)

// errorf wraps one of the kinds above with a detail: "sshsig: <kind>: <detail>".
func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("sshsig: %w: %s", kind, fmt.Sprintf(format, args...))
}

// NamespaceError is returned when a signature was made for another namespace
// than the one the verifier expects. It matches [ErrNamespace].
type NamespaceError struct {
	Expected string // the namespace the caller asked for
	Got      string // the namespace inside the signature
}

func (e *NamespaceError) Error() string {
	return fmt.Sprintf("sshsig: namespace mismatch: the signature is for namespace %q, expected %q", e.Got, e.Expected)
}

func (e *NamespaceError) Is(target error) bool { return target == ErrNamespace }

// NotAllowedError says why allowed_signers does not trust a key. It matches
// [ErrNotAllowed].
type NotAllowedError struct {
	Principal   string // the principal asked about ("" when looking one up)
	Fingerprint string // the key's SHA256:… fingerprint
	Namespace   string // the namespace asked about ("" when any)
	Reason      string // what the file says, naming its lines
}

func (e *NotAllowedError) Error() string {
	s := "sshsig: signer not allowed: key " + e.Fingerprint
	if e.Principal != "" {
		s += fmt.Sprintf(" as %q", e.Principal)
	}
	if e.Namespace != "" {
		s += fmt.Sprintf(" in namespace %q", e.Namespace)
	}
	return s + ": " + e.Reason
}

func (e *NotAllowedError) Is(target error) bool { return target == ErrNotAllowed }

// LineError is a bad line in an allowed_signers file.
type LineError struct {
	Line int    // 1-based
	Msg  string // what is wrong and what was expected
}

func (e *LineError) Error() string {
	return fmt.Sprintf("allowed_signers line %d: %s", e.Line, e.Msg)
}
