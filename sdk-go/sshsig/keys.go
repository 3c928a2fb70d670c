package sshsig

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

const (
	// maxKeyFileSize caps what LoadSigner reads (a 16384-bit RSA key file is
	// about 12 KiB).
	maxKeyFileSize   = 1 << 20
	agentDialTimeout = 10 * time.Second
	// agentSignTimeout bounds one signing request; an agent whose keys were
	// added with `ssh-add -c` waits for the user to confirm.
	agentSignTimeout = 2 * time.Minute
)

// LoadSigner returns a signer for the key file at path, the way
// `ssh-keygen -Y sign -f path` and git's user.signingKey find one:
//
//   - an OpenSSH (or PEM) private key file signs directly; when it is
//     encrypted, passphrase decrypts it, or, without a passphrase, the
//     ssh-agent at agentSocket signs if it holds the key;
//   - a public key file (such as id_ed25519.pub) signs through the ssh-agent
//     at agentSocket, which must hold its private half.
//
// agentSocket is usually os.Getenv("SSH_AUTH_SOCK"); "" means no agent. The
// agent is dialled again for every signature, so the signer holds no
// connection and needs no closing.
func LoadSigner(path string, passphrase []byte, agentSocket string) (ssh.Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sshsig: key file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("sshsig: key file %s: %w", path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("sshsig: key file %s is larger than %d bytes: expected an OpenSSH private or public key", path, maxKeyFileSize)
	}
	s, err := ParseSigner(data, passphrase, agentSocket)
	if err != nil {
		return nil, fmt.Errorf("%w (key file %s)", err, path)
	}
	return s, nil
}

// ParseSigner is LoadSigner for the contents of a key file.
func ParseSigner(data, passphrase []byte, agentSocket string) (ssh.Signer, error) {
	if bytes.Contains(data, []byte("PRIVATE KEY-----")) {
		return parsePrivateKey(data, passphrase, agentSocket)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil, fmt.Errorf("sshsig: expected an OpenSSH private key or a public key line (\"ssh-ed25519 AAAA… comment\"): %v", err)
	}
	if err := checkKey(pub); err != nil {
		return nil, err
	}
	if agentSocket == "" {
		return nil, errorf(ErrNoAgent, "the file holds only the public key %s; its private half must be in an ssh-agent (set SSH_AUTH_SOCK)", ssh.FingerprintSHA256(pub))
	}
	return agentSigner(agentSocket, pub)
}

func parsePrivateKey(data, passphrase []byte, agentSocket string) (ssh.Signer, error) {
	var s ssh.Signer
	var err error
	if len(passphrase) > 0 {
		s, err = ssh.ParsePrivateKeyWithPassphrase(data, passphrase)
	} else {
		s, err = ssh.ParsePrivateKey(data)
	}
	var missing *ssh.PassphraseMissingError
	switch {
	case err == nil:
		return s, checkKey(s.PublicKey())
	case errors.Is(err, x509.IncorrectPasswordError):
		return nil, errorf(ErrWrongPassphrase, "the passphrase does not decrypt the private key")
	case errors.As(err, &missing):
		if missing.PublicKey == nil {
			return nil, errorf(ErrPassphraseRequired, "the private key is encrypted")
		}
		if err := checkKey(missing.PublicKey); err != nil {
			return nil, err
		}
		if agentSocket == "" {
			return nil, errorf(ErrPassphraseRequired, "the private key %s is encrypted and no ssh-agent is set", ssh.FingerprintSHA256(missing.PublicKey))
		}
		s, err := agentSigner(agentSocket, missing.PublicKey)
		if errors.Is(err, ErrNotInAgent) {
			return nil, errorf(ErrPassphraseRequired, "the private key %s is encrypted and the ssh-agent does not hold it", ssh.FingerprintSHA256(missing.PublicKey))
		}
		return s, err
	}
	if typ := privateKeyType(data); typ != "" {
		if err := checkKeyType(typ); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("sshsig: the private key does not parse: %v", err)
}

// privateKeyType reads the public key type recorded in an openssh-key-v1
// file, to name a key type x/crypto/ssh cannot load; "" when there is none.
func privateKeyType(data []byte) string {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "OPENSSH PRIVATE KEY" {
		return ""
	}
	const openSSHMagic = "openssh-key-v1\x00"
	rest, ok := bytes.CutPrefix(block.Bytes, []byte(openSSHMagic))
	if !ok {
		return ""
	}
	r := &reader{b: rest}
	r.string() // cipher
	r.string() // kdf
	r.string() // kdf options
	if n, ok := r.uint32(); !ok || n < 1 {
		return ""
	}
	pub, ok := r.string()
	if !ok {
		return ""
	}
	typ, _ := (&reader{b: pub}).string()
	return string(typ)
}

// agentSigner checks that the agent at socket holds pub and returns a signer
// that asks it for each signature.
func agentSigner(socket string, pub ssh.PublicKey) (ssh.Signer, error) {
	s := &viaAgent{socket: socket, pub: pub}
	var keys []*agent.Key
	err := s.do(func(c agent.ExtendedAgent) (err error) {
		keys, err = c.List()
		return err
	})
	if err != nil {
		return nil, err
	}
	want := pub.Marshal()
	for _, k := range keys {
		if bytes.Equal(k.Marshal(), want) {
			return s, nil
		}
	}
	return nil, errorf(ErrNotInAgent, "the ssh-agent at %s holds %d keys, none of them %s (add it with ssh-add)", socket, len(keys), ssh.FingerprintSHA256(pub))
}

// viaAgent signs with a key held by an ssh-agent. It implements
// ssh.AlgorithmSigner so that RSA keys sign with rsa-sha2-512.
type viaAgent struct {
	socket string
	pub    ssh.PublicKey
}

func (s *viaAgent) PublicKey() ssh.PublicKey { return s.pub }

func (s *viaAgent) Sign(rand io.Reader, data []byte) (*ssh.Signature, error) {
	return s.SignWithAlgorithm(rand, data, "")
}

func (s *viaAgent) SignWithAlgorithm(_ io.Reader, data []byte, algorithm string) (*ssh.Signature, error) {
	var flags agent.SignatureFlags
	switch algorithm {
	case ssh.KeyAlgoRSASHA512:
		flags = agent.SignatureFlagRsaSha512
	case ssh.KeyAlgoRSASHA256:
		flags = agent.SignatureFlagRsaSha256
	case "", s.pub.Type():
	default:
		return nil, fmt.Errorf("sshsig: signature algorithm %q does not suit a %s key", algorithm, s.pub.Type())
	}
	var sig *ssh.Signature
	err := s.do(func(c agent.ExtendedAgent) (err error) {
		sig, err = c.SignWithFlags(s.pub, data, flags)
		return err
	})
	return sig, err
}

// do runs f on a fresh connection to the agent.
func (s *viaAgent) do(f func(agent.ExtendedAgent) error) error {
	conn, err := net.DialTimeout("unix", s.socket, agentDialTimeout)
	if err != nil {
		return fmt.Errorf("sshsig: ssh-agent: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(agentSignTimeout)); err != nil {
		return fmt.Errorf("sshsig: ssh-agent: %w", err)
	}
	if err := f(agent.NewClient(conn)); err != nil {
		return fmt.Errorf("sshsig: ssh-agent at %s: %w", s.socket, err)
	}
	return nil
}
