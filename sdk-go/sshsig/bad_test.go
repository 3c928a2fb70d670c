package sshsig

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// parts is an SSHSIG blob taken apart, to build bad ones from a good one.
type parts struct {
	magic    string
	version  uint32
	key      []byte
	ns       string
	reserved []byte
	hash     string
	sig      []byte
	trailer  []byte
}

func splitBlob(t *testing.T, armored []byte) parts {
	t.Helper()
	blob, err := dearmor(armored)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{b: blob[6:]}
	p := parts{magic: string(blob[:6])}
	p.version, _ = r.uint32()
	p.key, _ = r.string()
	n, _ := r.string()
	p.ns = string(n)
	p.reserved, _ = r.string()
	h, _ := r.string()
	p.hash = string(h)
	p.sig, _ = r.string()
	return p
}

func (p parts) blob() []byte {
	b := append([]byte(nil), p.magic...)
	b = binary.BigEndian.AppendUint32(b, p.version)
	b = appendString(b, p.key)
	b = appendString(b, []byte(p.ns))
	b = appendString(b, p.reserved)
	b = appendString(b, []byte(p.hash))
	b = appendString(b, p.sig)
	return append(b, p.trailer...)
}

func (p parts) armor() []byte { return armor(p.blob()) }

// sigField builds the signature field: string format, string blob, extra.
func sigField(format string, raw []byte, extra ...byte) []byte {
	return append(appendString(appendString(nil, []byte(format)), raw), extra...)
}

// Every bad input gets an error of its kind, and ssh-keygen -Y verify refuses
// the same input (or, where noted, this package is the stricter one).
func TestVerifyBadInputs(t *testing.T) {
	ks := keys(t)
	ed, rsaKey := ks["ed25519"], ks["rsa-3072"]
	good := keygenSign(t, ed.priv, ns, message, nil)
	p := splitBlob(t, good)
	with := func(f func(*parts)) []byte { q := p; f(&q); return q.armor() }

	// A real DSA signature and a real certificate signature from ssh-keygen.
	dir := t.TempDir()
	var dsaSig, certSig []byte
	if dsa, err := makeKey(dir, "dsa", "dsa", "", ""); err == nil {
		dsaSig = keygenSign(t, dsa.priv, ns, message, nil)
	}
	ca, err := makeKey(dir, "ca", "ed25519", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := keygen(t, nil, nil, "-q", "-s", ca.priv, "-I", "alice", "-n", "alice", ed.pub); !ok {
		t.Fatalf("certificate: %s", out)
	}
	certSig = keygenSign(t, strings.TrimSuffix(ed.pub, ".pub")+"-cert.pub", ns, message, nil)

	// An RSA signature made with SHA-1 (ssh-rsa), which OpenSSH refuses.
	rsaSigner := loadSigner(t, rsaKey)
	sha1Sig, err := rsaSigner.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader,
		signedData(ns, HashSHA512, digest(HashSHA512, message)), ssh.KeyAlgoRSA)
	if err != nil {
		t.Fatal(err)
	}
	rsaGood := splitBlob(t, keygenSign(t, rsaKey.priv, ns, message, nil))
	rsaSHA1 := rsaGood
	rsaSHA1.sig = ssh.Marshal(sha1Sig)

	skKey := appendString(appendString(appendString(nil, []byte(ssh.KeyAlgoSKED25519)), make([]byte, 32)), []byte("ssh:"))
	flipped := append([]byte(nil), p.sig...)
	flipped[len(flipped)-1] ^= 1
	padded := append(append([]byte(nil), good...), bytes.Repeat([]byte("\n"), MaxArmoredSize-len(good))...)
	other, err := makeKey(dir, "other", "ed25519", "", "")
	if err != nil {
		t.Fatal(err)
	}
	otherKey := other.key.Marshal()

	type tc struct {
		name     string
		in       []byte
		want     error
		stricter bool // ssh-keygen accepts it
	}
	cases := []tc{
		{"empty", nil, ErrMalformed, false},
		{"no header", good[len(armorBegin)+1:], ErrMalformed, false},
		{"no footer", good[:len(good)-len(armorEnd)-2], ErrMalformed, false},
		{"header glued to base64", bytes.Replace(good, []byte(armorBegin+"\n"), []byte(armorBegin), 1), ErrMalformed, false},
		{"bad base64", bytes.Replace(good, []byte("U1NI"), []byte("U1N*"), 1), ErrMalformed, false},
		{"no base64", []byte(armorBegin + "\n" + armorEnd + "\n"), ErrMalformed, false},
		{"text after the END line", append(append([]byte(nil), good...), "more\n"...), ErrMalformed, true},
		{"wrong magic", with(func(q *parts) { q.magic = "SSHSIH" }), ErrMagic, false},
		{"a PEM key instead", []byte(armorBegin + "\nLS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0K\n" + armorEnd), ErrMagic, false},
		{"version 2", with(func(q *parts) { q.version = 2 }), ErrVersion, false},
		{"version 0", with(func(q *parts) { q.version = 0 }), ErrVersion, true},
		{"wrong namespace", keygenSign(t, ed.priv, "git", message, nil), ErrNamespace, false},
		{"certificate key", certSig, ErrUnsupportedKey, false},
		{"security key type", with(func(q *parts) { q.key = skKey }), ErrUnsupportedKey, false},
		{"unknown key type", with(func(q *parts) { q.key = appendString(nil, []byte("ssh-foo")) }), ErrUnsupportedKey, false},
		{"key blob with junk", with(func(q *parts) { q.key = append(q.key, 0) }), ErrMalformed, false},
		{"hash md5", with(func(q *parts) { q.hash = "md5" }), ErrUnsupportedHash, false},
		{"rsa with sha1", rsaSHA1.armor(), ErrUnsupportedHash, false},
		{"format mismatch", with(func(q *parts) { q.sig = sigField(ssh.KeyAlgoECDSA256, q.sig[19:]) }), ErrMalformed, false},
		{"trailing data in the signature field", with(func(q *parts) { q.sig = append(q.sig, 0) }), ErrMalformed, false},
		{"trailing data after the blob", with(func(q *parts) { q.trailer = []byte{0} }), ErrMalformed, false},
		{"NUL in the namespace", with(func(q *parts) { q.ns = ns + "\x00x" }), ErrMalformed, false},
		{"signature flipped", with(func(q *parts) { q.sig = flipped }), ErrBadSignature, false},
		{"another key", with(func(q *parts) { q.key = otherKey }), ErrBadSignature, false},
		{"hash changed", with(func(q *parts) { q.hash = HashSHA256 }), ErrBadSignature, false},
		{"huge", append(padded, '\n'), ErrTooLarge, true},
	}
	if dsaSig != nil {
		cases = append(cases, tc{"dsa key", dsaSig, ErrUnsupportedKey, false})
	} else {
		t.Log("not run: the DSA case (ssh-keygen makes no DSA keys)")
	}
	allowed := "* " + authorizedLine(ed.key) + "\n* " + authorizedLine(rsaKey.key) + "\n"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Verify(message, c.in, ns)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			t.Log(err)
			if ok, out := keygenVerify(t, allowed, "x", ns, c.in, message, ""); ok != c.stricter {
				t.Fatalf("ssh-keygen -Y verify ok=%v, want %v: %s", ok, c.stricter, out)
			}
		})
	}

	// The namespace error names both namespaces.
	_, err = Verify(message, keygenSign(t, ed.priv, "git", message, nil), ns)
	var nsErr *NamespaceError
	if !errors.As(err, &nsErr) || nsErr.Expected != ns || nsErr.Got != "git" ||
		!strings.Contains(err.Error(), `"git"`) || !strings.Contains(err.Error(), `"iii-skills"`) {
		t.Fatalf("namespace error: %v", err)
	}
	// Exactly at the cap (the signature padded with line breaks) is still read.
	if len(padded) != MaxArmoredSize {
		t.Fatalf("padded to %d", len(padded))
	}
	if _, err := Verify(message, padded, ns); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	// CRLF line ends are accepted.
	if _, err := Verify(message, bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")), ns); err != nil {
		t.Fatalf("CRLF: %v", err)
	}
	if _, err := Verify(message, good, ""); err == nil {
		t.Fatal("empty expected namespace: no error")
	}
}

// Every truncation of a good blob is an error, never a panic, and ssh-keygen
// refuses a sample of them too.
func TestVerifyTruncated(t *testing.T) {
	ks := keys(t)
	for _, name := range []string{"ed25519", "ecdsa-521", "rsa-3072"} {
		k := ks[name]
		blob, err := dearmor(keygenSign(t, k.priv, ns, message, nil))
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(blob) {
			_, err := Verify(message, armor(blob[:n]), ns)
			if err == nil {
				t.Fatalf("%s: %d of %d bytes verified", name, n, len(blob))
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMagic) && !errors.Is(err, ErrBadSignature) {
				t.Fatalf("%s: %d of %d bytes: %v", name, n, len(blob), err)
			}
			if n%37 == 0 && n > 0 {
				if ok, out := keygenVerify(t, "* "+authorizedLine(k.key)+"\n", "x", ns, armor(blob[:n]), message, ""); ok {
					t.Fatalf("%s: ssh-keygen verified %d of %d bytes: %s", name, n, len(blob), out)
				}
			}
		}
	}
}
