package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Trust in content (not upstream v0.2.2; docs/trust.md): pins by digest
// (iii://id@sha256:<hex>), signed versions (SSH signatures, allowed_signers,
// signing.require_signed) and yanks and deprecation. A registry that does
// not list skills::yank is taken for upstream, which has none of them, and
// these specs are skipped. The signature specs start an instance of their
// own with a signing configuration, with keys and signatures made by the
// real ssh-keygen.

func digestOf(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// trustVersion is a skills::versions row with the trust fields.
type trustVersion struct {
	Version   int             `json:"version"`
	SHA256    string          `json:"sha256"`
	SignedBy  json.RawMessage `json:"signed_by"`
	Key       string          `json:"key"`
	Signature string          `json:"signature"`
	Yanked    string          `json:"yanked"`
}

type trustListing struct {
	Deprecated string         `json:"deprecated"`
	Versions   []trustVersion `json:"versions"`
}

// sshKey is a key ssh-keygen made for a spec.
type sshKey struct{ priv, public, fingerprint string }

func keygen(dir, name string) sshKey {
	GinkgoHelper()
	priv := filepath.Join(dir, name)
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", priv).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ssh-keygen: %s", out)
	pub, err := os.ReadFile(priv + ".pub")
	Expect(err).NotTo(HaveOccurred())
	f := strings.Fields(string(pub))
	out, err = exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", priv+".pub").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ssh-keygen -l: %s", out)
	return sshKey{priv: priv, public: f[0] + " " + f[1], fingerprint: strings.Fields(string(out))[1]}
}

// sign is ssh-keygen -Y sign -n namespace over message.
func (k sshKey) sign(dir, namespace, message string) string {
	GinkgoHelper()
	msg, err := os.CreateTemp(dir, "message-")
	Expect(err).NotTo(HaveOccurred())
	_, _ = msg.WriteString(message)
	_ = msg.Close()
	out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", namespace, "-f", k.priv, msg.Name()).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ssh-keygen -Y sign: %s", out)
	sig, err := os.ReadFile(msg.Name() + ".sig")
	Expect(err).NotTo(HaveOccurred())
	return string(sig)
}

// keygenVerifies runs ssh-keygen -Y verify as principal.
func keygenVerifies(dir, allowed, principal, signature, message string) bool {
	GinkgoHelper()
	as, sf := filepath.Join(dir, "verify_allowed_signers"), filepath.Join(dir, "verify.sig")
	Expect(os.WriteFile(as, []byte(allowed), 0o600)).To(Succeed())
	Expect(os.WriteFile(sf, []byte(signature), 0o600)).To(Succeed())
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", as, "-I", principal, "-n", "iii-skills", "-s", sf)
	cmd.Stdin = bytes.NewReader([]byte(message))
	return cmd.Run() == nil
}

func trustVersions(ctx context.Context, c interface {
	CallInto(context.Context, string, any, any) error
}, id string) trustListing {
	GinkgoHelper()
	var l trustListing
	Expect(c.CallInto(ctx, "skills::versions", map[string]string{"id": id}, &l)).To(Succeed())
	return l
}

var _ = group.Describe("trust in content: pins, signatures and yanks (T)", Label("trust", "extra"), func() {
	BeforeEach(func(ctx SpecContext) {
		ids, err := client.FunctionIDs(ctx)
		Expect(err).NotTo(HaveOccurred())
		if !slices.Contains(ids, "skills::yank") {
			Skip("the registry under test has no skills::yank: upstream v0.2.2 has no pins by digest, signatures or yanks")
		}
	})

	It("T1 iii://id@sha256:<hex> reads exactly that version; a digest of the wrong form is INVALID_ARGUMENTS, an unknown one NOT_FOUND naming it", func(ctx SpecContext) {
		id := scoped("t1")
		register(ctx, id, "# One\n", nil)
		register(ctx, id, "# Two\n", nil)
		Expect(read(ctx, "iii://"+id+"@sha256:"+digestOf("# One\n")).Text).To(Equal("# One\n"))
		Expect(fetch(ctx, "skill::fetch", map[string]string{"uri": "iii://" + id + "@sha256:" + digestOf("# Two\n")})).To(HaveSuffix("# Two"))
		l := trustVersions(ctx, client, id)
		Expect(l.Versions).To(HaveLen(2))
		Expect(l.Versions[0].SHA256).To(Equal(digestOf("# Two\n")))
		Expect(string(l.Versions[0].SignedBy)).To(Equal("null"))
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id + "@sha256:" + strings.Repeat("A", 64)}, "INVALID_ARGUMENTS", "expected 64 lowercase hex digits")
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id + "@sha256:abc"}, "INVALID_ARGUMENTS", "got 3 characters")
		missing := strings.Repeat("0", 64)
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id + "@sha256:" + missing}, "NOT_FOUND", missing)
	})

	It("T2 a yanked version leaves unselected reads and latest, a pinned read carries its reason, on-change fires yank and unyank", func(ctx SpecContext) {
		ev := subscribe(ctx, "skills")
		id := scoped("t2")
		register(ctx, id, "# One\n", nil)
		register(ctx, id, "# Two\n", nil)
		y := obj(ctx, "skills::yank", map[string]any{"id": id, "version": 2, "reason": "leaks a token"})
		Expect(y).To(HaveKeyWithValue("yanked", "leaks a token"))
		Expect(y).To(HaveKeyWithValue("served", 1.0))
		Expect(read(ctx, "iii://"+id).Text).To(Equal("# One\n"))
		Expect(read(ctx, "iii://"+id+"@latest").Text).To(Equal("# One\n"))
		var pinned struct {
			Contents []struct {
				Text   string `json:"text"`
				Yanked string `json:"yanked"`
			} `json:"contents"`
		}
		callInto(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id + "@2"}, &pinned)
		Expect(pinned.Contents).To(HaveLen(1))
		Expect(pinned.Contents[0].Text).To(Equal("# Two\n"))
		Expect(pinned.Contents[0].Yanked).To(Equal("leaks a token"))
		Expect(trustVersions(ctx, client, id).Versions[0].Yanked).To(Equal("leaks a token"))
		Eventually(func() []string { return eventOps(ev, "id", id) }).WithTimeout(eventLimit).Should(ContainElement("yank"))
		failsWith(ctx, "skills::yank", map[string]any{"id": id, "version": 9, "reason": "x"}, "NOT_FOUND", "no version 9")
		failsWith(ctx, "skills::yank", map[string]any{"id": id, "version": 1}, "INVALID_ARGUMENTS", "reason is required")
		obj(ctx, "skills::unyank", map[string]any{"id": id, "version": 2})
		Expect(read(ctx, "iii://"+id).Text).To(Equal("# Two\n"))
		Eventually(func() []string { return eventOps(ev, "id", id) }).WithTimeout(eventLimit).Should(ContainElement("unyank"))
	})

	It("T3 with every version yanked a skill serves nothing (NOT_FOUND with the reason) and is not listed", func(ctx SpecContext) {
		id := scoped("t3")
		register(ctx, id, "# Only\n", nil)
		obj(ctx, "skills::yank", map[string]any{"id": id, "version": 1, "reason": "withdrawn"})
		failsWith(ctx, "skills::resources-read", map[string]string{"uri": "iii://" + id}, "NOT_FOUND", "withdrawn")
		Expect(skillIDs(ctx)).NotTo(ContainElement(id))
		Expect(read(ctx, "iii://"+id+"@1").Text).To(Equal("# Only\n"))
		obj(ctx, "skills::unyank", map[string]any{"id": id, "version": 1})
		Expect(skillIDs(ctx)).To(ContainElement(id))
	})

	It("T4 a deprecated skill stays served with its message in skills::versions and the catalog; message null undeprecates", func(ctx SpecContext) {
		ev := subscribe(ctx, "skills")
		id := scoped("t4")
		register(ctx, id, "# Old\n", nil)
		d := obj(ctx, "skills::deprecate", map[string]any{"id": id, "message": "use the new one"})
		Expect(d).To(HaveKeyWithValue("deprecated", "use the new one"))
		Expect(read(ctx, "iii://"+id).Text).To(Equal("# Old\n"))
		Expect(trustVersions(ctx, client, id).Deprecated).To(Equal("use the new one"))
		var cat struct {
			Skill struct {
				Deprecated string          `json:"deprecated"`
				SHA256     string          `json:"sha256"`
				SignedBy   json.RawMessage `json:"signed_by"`
				Version    int             `json:"version"`
			} `json:"skill"`
		}
		callInto(ctx, "skills::catalog-get", map[string]string{"path": id}, &cat)
		Expect(cat.Skill.Deprecated).To(Equal("use the new one"))
		Expect(cat.Skill.SHA256).To(Equal(digestOf("# Old\n")))
		Expect(cat.Skill.Version).To(Equal(1))
		Expect(string(cat.Skill.SignedBy)).To(Equal("null"))
		Eventually(func() []string { return eventOps(ev, "id", id) }).WithTimeout(eventLimit).Should(ContainElement("deprecate"))
		d = obj(ctx, "skills::deprecate", map[string]any{"id": id, "message": nil})
		Expect(d).To(HaveKeyWithValue("deprecated", BeNil()))
		failsWith(ctx, "skills::deprecate", map[string]any{"id": id}, "INVALID_ARGUMENTS", "message is required")
	})

	Describe("signatures (an instance with signing configured)", func() {
		var dir string
		var alice, mallory sshKey
		var signers string
		BeforeEach(func() {
			requireLaunched()
			if _, err := exec.LookPath("ssh-keygen"); err != nil {
				Skip("not run: ssh-keygen not found (Debian package openssh-client)")
			}
			var err error
			dir, err = os.MkdirTemp(scratch, "trust-")
			Expect(err).NotTo(HaveOccurred())
			alice, mallory = keygen(dir, "alice"), keygen(dir, "mallory")
			signers = "alice@example.com namespaces=\"iii-skills\" " + alice.public + "\n"
			Expect(os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte(signers), 0o600)).To(Succeed())
		})
		start := func(ctx context.Context) interface {
			Call(context.Context, string, any) (json.RawMessage, error)
			CallInto(context.Context, string, any, any) error
		} {
			GinkgoHelper()
			cfg := fmt.Sprintf("signing:\n  allowed_signers: %s\n  require_signed: [\"acme/\"]\n", filepath.Join(dir, "allowed_signers"))
			return instance(ctx, "signing", []byte(cfg))
		}

		It("T5 a signature made by ssh-keygen is verified at register; the version names the signer and key, and ssh-keygen -Y verify agrees", func(ctx SpecContext) {
			c := start(ctx)
			body := "# Signed\n\nby alice\n"
			sig := alice.sign(dir, "iii-skills", body)
			_, err := c.Call(ctx, "skills::register", map[string]string{"id": "acme/signed", "skill": body, "signature": sig})
			Expect(err).NotTo(HaveOccurred())
			v := trustVersions(ctx, c, "acme/signed").Versions[0]
			Expect(string(v.SignedBy)).To(Equal(`"alice@example.com"`))
			Expect(v.Key).To(Equal(alice.fingerprint))
			Expect(v.Signature).To(Equal(sig))
			Expect(keygenVerifies(dir, signers, "alice@example.com", v.Signature, body)).To(BeTrue())
			// Unsigned outside the required namespace: accepted, shown as such.
			_, err = c.Call(ctx, "skills::register", map[string]string{"id": "free/doc", "skill": body})
			Expect(err).NotTo(HaveOccurred())
			Expect(string(trustVersions(ctx, c, "free/doc").Versions[0].SignedBy)).To(Equal("null"))
		})

		It("T6 UNSIGNED for a missing or untrusted signature in a required namespace, BAD_SIGNATURE for one that does not verify; nothing stored", func(ctx SpecContext) {
			c := start(ctx)
			body := "# Acme\n"
			for _, try := range []struct{ sig, code, says string }{
				{"", "UNSIGNED", `namespace "acme/"`},
				{mallory.sign(dir, "iii-skills", body), "UNSIGNED", mallory.fingerprint},
				{alice.sign(dir, "git", body), "BAD_SIGNATURE", `namespace "git"`},
				{alice.sign(dir, "iii-skills", body+"tampered"), "BAD_SIGNATURE", "not a signature of these exact bytes"},
				{"-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n", "BAD_SIGNATURE", "does not verify"},
			} {
				_, err := c.Call(ctx, "skills::register", map[string]string{"id": "acme/doc", "skill": body, "signature": try.sig})
				Expect(err).To(HaveOccurred())
				Expect(err.Error()).To(ContainSubstring(try.code + ": "))
				Expect(err.Error()).To(ContainSubstring(try.says))
			}
			_, err := c.Call(ctx, "skills::versions", map[string]string{"id": "acme/doc"})
			Expect(err).To(MatchError(ContainSubstring("NOT_FOUND")))
			// The server keeps serving.
			_, err = c.Call(ctx, "skills::register", map[string]string{"id": "acme/doc", "skill": body, "signature": alice.sign(dir, "iii-skills", body)})
			Expect(err).NotTo(HaveOccurred())
		})
	})
})
