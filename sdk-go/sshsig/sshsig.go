package sshsig

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The SSHSIG format, as OpenSSH's PROTOCOL.sshsig defines it.
const (
	magic        = "SSHSIG"
	version      = 1
	armorBegin   = "-----BEGIN SSH SIGNATURE-----"
	armorEnd     = "-----END SSH SIGNATURE-----"
	armorColumns = 70 // ssh-keygen wraps the base64 at 70 columns

	// HashSHA512 is the message hash Sign uses (ssh-keygen's default);
	// Verify also accepts HashSHA256.
	HashSHA512 = "sha512"
	HashSHA256 = "sha256"

	// MaxArmoredSize caps the armored signature Parse and Verify read: 16 KiB.
	// The largest key ssh-keygen makes (RSA 16384 bits) gives about 5.8 KiB.
	MaxArmoredSize = 16 << 10

	minRSABits = 1024  // OpenSSH refuses smaller RSA keys
	maxRSABits = 16384 // and ssh-keygen makes none larger
)

// Signature is a parsed SSHSIG signature.
type Signature struct {
	Key           ssh.PublicKey // the signer's public key
	Fingerprint   string        // the key's fingerprint as ssh-keygen -l prints it: "SHA256:…"
	Namespace     string        // the namespace the signature was made for
	HashAlgorithm string        // HashSHA512 or HashSHA256

	sig *ssh.Signature
}

// Sign signs message for namespace (for example "iii-skills") with signer and
// returns the armored signature, byte for byte what `ssh-keygen -Y sign -n
// namespace` writes for the same key (ed25519 and RSA signatures are
// deterministic; ECDSA ones are not). RSA keys sign with rsa-sha2-512 and need
// an ssh.AlgorithmSigner, as every signer from x/crypto/ssh and LoadSigner is.
func Sign(signer ssh.Signer, message []byte, namespace string) ([]byte, error) {
	if err := checkNamespace(namespace); err != nil {
		return nil, err
	}
	pub := signer.PublicKey()
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	signed := signedData(namespace, HashSHA512, digest(HashSHA512, message))
	var sig *ssh.Signature
	var err error
	if pub.Type() == ssh.KeyAlgoRSA {
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, fmt.Errorf("sshsig: the RSA signer (%T) cannot choose rsa-sha2-512: it must implement ssh.AlgorithmSigner", signer)
		}
		sig, err = as.SignWithAlgorithm(rand.Reader, signed, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, signed)
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: signing with %s key %s: %w", pub.Type(), ssh.FingerprintSHA256(pub), err)
	}
	// Check what came back (an agent may answer with another algorithm, a
	// faulty RSA computation may leak the key) before handing it out.
	if err := checkSignatureFormat(pub, sig.Format); err != nil {
		return nil, fmt.Errorf("sshsig: the signer answered with an unusable signature: %w", err)
	}
	if err := pub.Verify(signed, sig); err != nil {
		return nil, fmt.Errorf("sshsig: the signer answered with a signature that does not verify: %v", err)
	}
	var blob []byte
	blob = append(blob, magic...)
	blob = binary.BigEndian.AppendUint32(blob, version)
	blob = appendString(blob, pub.Marshal())
	blob = appendString(blob, []byte(namespace))
	blob = appendString(blob, nil) // reserved
	blob = appendString(blob, []byte(HashSHA512))
	blob = appendString(blob, ssh.Marshal(sig))
	return armor(blob), nil
}

// Verify checks that armored is a signature over message for namespace and
// returns it, with the signer's key and fingerprint. It says nothing about
// whether the key is trusted: ask [AllowedSigners] that.
func Verify(message, armored []byte, namespace string) (*Signature, error) {
	s, err := Parse(armored)
	if err != nil {
		return nil, err
	}
	if err := s.Verify(message, namespace); err != nil {
		return nil, err
	}
	return s, nil
}

// Parse reads an armored signature (at most [MaxArmoredSize] bytes) without
// verifying it: magic, version, key type, hash algorithm and the shape of the
// signature are checked; the namespace and the signature itself are not.
func Parse(armored []byte) (*Signature, error) {
	blob, err := dearmor(armored)
	if err != nil {
		return nil, err
	}
	if len(blob) < len(magic) || string(blob[:len(magic)]) != magic {
		n := min(len(blob), len(magic))
		return nil, errorf(ErrMagic, "the blob starts with %q, expected %q", blob[:n], magic)
	}
	r := &reader{b: blob[len(magic):]}
	v, ok := r.uint32()
	if !ok {
		return nil, errorf(ErrMalformed, "truncated before the version")
	}
	if v != version {
		return nil, errorf(ErrVersion, "version %d, expected %d", v, version)
	}
	keyBlob, ok := r.string()
	if !ok {
		return nil, errorf(ErrMalformed, "truncated in the public key")
	}
	pub, err := parseKey(keyBlob)
	if err != nil {
		return nil, err
	}
	namespace, ok := r.string()
	if !ok {
		return nil, errorf(ErrMalformed, "truncated in the namespace")
	}
	if bytes.IndexByte(namespace, 0) >= 0 {
		return nil, errorf(ErrMalformed, "the namespace contains a NUL byte")
	}
	if _, ok := r.string(); !ok { // reserved: ignored, as OpenSSH does
		return nil, errorf(ErrMalformed, "truncated in the reserved field")
	}
	hashAlg, ok := r.string()
	if !ok {
		return nil, errorf(ErrMalformed, "truncated in the hash algorithm")
	}
	if h := string(hashAlg); h != HashSHA512 && h != HashSHA256 {
		return nil, errorf(ErrUnsupportedHash, "%q, expected %q or %q", clip(hashAlg), HashSHA512, HashSHA256)
	}
	sigBlob, ok := r.string()
	if !ok {
		return nil, errorf(ErrMalformed, "truncated in the signature")
	}
	if len(r.b) != 0 {
		return nil, errorf(ErrMalformed, "trailing data after the signature (%d byte(s))", len(r.b))
	}
	sr := &reader{b: sigBlob}
	format, ok1 := sr.string()
	raw, ok2 := sr.string()
	if !ok1 || !ok2 {
		return nil, errorf(ErrMalformed, "the signature field is truncated")
	}
	if len(sr.b) != 0 {
		return nil, errorf(ErrMalformed, "trailing data in the signature field (%d byte(s))", len(sr.b))
	}
	if err := checkSignatureFormat(pub, string(format)); err != nil {
		return nil, err
	}
	return &Signature{
		Key:           pub,
		Fingerprint:   ssh.FingerprintSHA256(pub),
		Namespace:     string(namespace),
		HashAlgorithm: string(hashAlg),
		sig:           &ssh.Signature{Format: string(format), Blob: raw},
	}, nil
}

// Verify checks the parsed signature over message for namespace.
func (s *Signature) Verify(message []byte, namespace string) error {
	if err := checkNamespace(namespace); err != nil {
		return err
	}
	if s.Namespace != namespace {
		return &NamespaceError{Expected: namespace, Got: s.Namespace}
	}
	signed := signedData(namespace, s.HashAlgorithm, digest(s.HashAlgorithm, message))
	if err := s.Key.Verify(signed, s.sig); err != nil {
		return errorf(ErrBadSignature, "%s signature by %s over %d bytes: the message or the signature differs from what was signed",
			s.sig.Format, s.Fingerprint, len(message))
	}
	return nil
}

// signedData is the structure the SSH signature covers.
func signedData(namespace, hashAlg string, hash []byte) []byte {
	b := append([]byte(nil), magic...)
	b = appendString(b, []byte(namespace))
	b = appendString(b, nil) // reserved
	b = appendString(b, []byte(hashAlg))
	return appendString(b, hash)
}

func digest(hashAlg string, message []byte) []byte {
	if hashAlg == HashSHA256 {
		h := sha256.Sum256(message)
		return h[:]
	}
	h := sha512.Sum512(message)
	return h[:]
}

func checkNamespace(namespace string) error {
	if namespace == "" || strings.IndexByte(namespace, 0) >= 0 {
		return fmt.Errorf("sshsig: namespace %q: expected a non-empty string without NUL bytes, such as \"iii-skills\"", namespace)
	}
	return nil
}

// supportedKeyType reports whether Sign and Verify handle keys of type typ;
// their signature algorithm is the key type itself, or rsa-sha2-512/256 for ssh-rsa.
func supportedKeyType(typ string) bool {
	switch typ {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSA:
		return true
	}
	return false
}

const supportedKeyList = "ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 or ssh-rsa"

// parseKey parses a public key blob of a supported type.
func parseKey(blob []byte) (ssh.PublicKey, error) {
	kr := &reader{b: blob}
	typ, ok := kr.string()
	if !ok {
		return nil, errorf(ErrMalformed, "the public key is truncated before its type")
	}
	if err := checkKeyType(string(typ)); err != nil {
		return nil, err
	}
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, errorf(ErrMalformed, "the %s public key does not parse: %v", typ, err)
	}
	return pub, checkKey(pub)
}

func checkKeyType(typ string) error {
	if supportedKeyType(typ) {
		return nil
	}
	what := ""
	switch {
	case strings.Contains(typ, "-cert-"):
		what = " (certificates are not supported)"
	case strings.HasPrefix(typ, "sk-"):
		what = " (security-key keys are not supported)"
	}
	return errorf(ErrUnsupportedKey, "%q%s, expected %s", clip([]byte(typ)), what, supportedKeyList)
}

// checkKey checks the type and, for RSA, the size of a key.
func checkKey(pub ssh.PublicKey) error {
	if err := checkKeyType(pub.Type()); err != nil {
		return err
	}
	if pub.Type() != ssh.KeyAlgoRSA {
		return nil
	}
	cp, ok := pub.(ssh.CryptoPublicKey)
	if !ok {
		return errorf(ErrUnsupportedKey, "an RSA key of type %T", pub)
	}
	rk, ok := cp.CryptoPublicKey().(*rsa.PublicKey)
	if !ok {
		return errorf(ErrUnsupportedKey, "an RSA key of type %T", cp.CryptoPublicKey())
	}
	if n := rk.N.BitLen(); n < minRSABits || n > maxRSABits {
		return errorf(ErrUnsupportedKey, "RSA key of %d bits, expected %d to %d", n, minRSABits, maxRSABits)
	}
	return nil
}

// checkSignatureFormat checks that the signature algorithm suits the key:
// the key type itself, or for RSA rsa-sha2-512 or rsa-sha2-256 (never SHA-1).
func checkSignatureFormat(pub ssh.PublicKey, format string) error {
	if pub.Type() == ssh.KeyAlgoRSA {
		switch format {
		case ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256:
			return nil
		case ssh.KeyAlgoRSA:
			return errorf(ErrUnsupportedHash, "RSA signature algorithm ssh-rsa (SHA-1), expected rsa-sha2-512 or rsa-sha2-256")
		}
		return errorf(ErrMalformed, "signature algorithm %q for key type ssh-rsa, expected rsa-sha2-512 or rsa-sha2-256", clip([]byte(format)))
	}
	if format != pub.Type() {
		return errorf(ErrMalformed, "signature algorithm %q for key type %s, expected %s", clip([]byte(format)), pub.Type(), pub.Type())
	}
	return nil
}

func armor(blob []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString(blob)
	var b bytes.Buffer
	b.WriteString(armorBegin + "\n")
	for len(b64) > armorColumns {
		b.WriteString(b64[:armorColumns] + "\n")
		b64 = b64[armorColumns:]
	}
	b.WriteString(b64 + "\n")
	b.WriteString(armorEnd + "\n")
	return b.Bytes()
}

// dearmor returns the blob inside the armor. Whitespace around the armor and
// inside the base64 (LF or CRLF lines of any width) is accepted.
func dearmor(armored []byte) ([]byte, error) {
	if len(armored) > MaxArmoredSize {
		return nil, errorf(ErrTooLarge, "%d bytes, the limit is %d", len(armored), MaxArmoredSize)
	}
	s := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(s, armorBegin)
	if !ok {
		return nil, errorf(ErrMalformed, "expected the armor to start with %q, found %q", armorBegin, clip([]byte(s)))
	}
	body, ok = strings.CutSuffix(body, armorEnd)
	if !ok {
		return nil, errorf(ErrMalformed, "expected the armor to end with %q", armorEnd)
	}
	if body != "" && body[0] != '\n' && body[0] != '\r' {
		return nil, errorf(ErrMalformed, "expected a line break after %q", armorBegin)
	}
	b64 := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, body)
	if b64 == "" {
		return nil, errorf(ErrMalformed, "the armor holds no base64 between %q and %q", armorBegin, armorEnd)
	}
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return nil, errorf(ErrMalformed, "the base64 body is invalid at byte %d (expected padded standard base64)", int64(ce))
		}
		return nil, errorf(ErrMalformed, "the base64 body: %v", err)
	}
	return blob, nil
}

// reader reads SSH wire types; ok is false when the input is too short.
type reader struct{ b []byte }

func (r *reader) uint32() (uint32, bool) {
	if len(r.b) < 4 {
		return 0, false
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v, true
}

func (r *reader) string() ([]byte, bool) {
	n, ok := r.uint32()
	if !ok || uint64(n) > uint64(len(r.b)) {
		return nil, false
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s, true
}

func appendString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// clip shortens attacker-controlled text quoted in an error message.
func clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
