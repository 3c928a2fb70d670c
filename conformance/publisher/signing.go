package publisher

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// Signed versions (docs/trust.md, docs/publishers.md "Signing"): every SDK
// signs what it registers with a key file ssh-keygen made (configure
// signing_key) or sends a signature made elsewhere (skill / prompt
// signature), and a registry started with signing.require_signed accepts
// it and names the signer. Keys and outside signatures are made by the real
// ssh-keygen, and the suite checks the SDK's signatures with ssh-keygen
// -Y verify too.

// signingKey is a key ssh-keygen made for a spec.
type signingKey struct {
	name, priv, line, fingerprint string
}

func (k signingKey) principal() string { return k.name + "@example.com" }

func sshKeygen(dir, name, typ, bits string, extra ...string) signingKey {
	GinkgoHelper()
	priv := filepath.Join(dir, name)
	args := append([]string{"-q", "-t", typ, "-C", name, "-f", priv}, extra...)
	if bits != "" {
		args = append(args, "-b", bits)
	}
	if !strings.Contains(strings.Join(extra, " "), "-N") {
		args = append(args, "-N", "")
	}
	out, err := exec.Command("ssh-keygen", args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ssh-keygen %v: %s", args, out)
	pub, err := os.ReadFile(priv + ".pub")
	Expect(err).NotTo(HaveOccurred())
	f := strings.Fields(string(pub))
	out, err = exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", priv+".pub").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ssh-keygen -l: %s", out)
	return signingKey{name: name, priv: priv, line: name + "@example.com " + f[0] + " " + f[1] + "\n",
		fingerprint: strings.Fields(string(out))[1]}
}

// keygenSign is ssh-keygen -Y sign -n iii-skills over message.
func keygenSign(dir string, k signingKey, message string) string {
	GinkgoHelper()
	f, err := os.CreateTemp(dir, "message-")
	Expect(err).NotTo(HaveOccurred())
	_, _ = f.WriteString(message)
	_ = f.Close()
	out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", rules.SignatureNamespace, "-f", k.priv, f.Name()).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ssh-keygen -Y sign: %s", out)
	sig, err := os.ReadFile(f.Name() + ".sig")
	Expect(err).NotTo(HaveOccurred())
	return string(sig)
}

// keygenAccepts runs ssh-keygen -Y verify of signature over message by k.
func keygenAccepts(dir string, k signingKey, signature, message string) bool {
	GinkgoHelper()
	as, sf := filepath.Join(dir, "verify_allowed_signers"), filepath.Join(dir, "verify.sig")
	Expect(os.WriteFile(as, []byte(k.line), 0o600)).To(Succeed())
	Expect(os.WriteFile(sf, []byte(signature), 0o600)).To(Succeed())
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", as, "-I", k.principal(), "-n", rules.SignatureNamespace, "-s", sf)
	cmd.Stdin = bytes.NewReader([]byte(message))
	return cmd.Run() == nil
}

// signedVersion is the newest version of a skill or prompt with its
// signature facts.
type signedVersion struct {
	SHA256     string          `json:"sha256"`
	SignedBy   json.RawMessage `json:"signed_by"`
	Key        string          `json:"key"`
	Signature  string          `json:"signature"`
	Definition string          `json:"definition"`
}

func newestVersion(ctx context.Context, c *harness.Client, fn, key, id string) signedVersion {
	GinkgoHelper()
	var l struct {
		Versions []signedVersion `json:"versions"`
	}
	Expect(c.CallInto(ctx, fn, map[string]string{key: id}, &l)).To(Succeed())
	Expect(l.Versions).NotTo(BeEmpty())
	return l.Versions[0]
}

// sendEmailDefinition is the canonical JSON of the send-email fixture
// (DRIVER.md) registered as name: what its signature covers.
func sendEmailDefinition(name string) string {
	d := func(s string) *string { return &s }
	return string(rules.CanonicalPrompt("Compose and send an email", "prompt::"+name, []rules.PromptArg{
		{Name: "to", Description: d("Recipient address"), Required: true},
		{Name: "subject", Description: d("Subject line"), Required: true},
		{Name: "urgent", Description: d("Mark as urgent")},
	}))
}

type startResult struct {
	Registered bool `json:"registered"`
	Rejected   []struct {
		Kind, Name, Code, Message, Advice string
		Retried                           bool
	} `json:"rejected"`
}

var _ = group.Describe("signed versions (an instance with signing.require_signed)", Label("signing", "binary"), func() {
	var dir string
	var keys []signingKey
	var config []byte

	BeforeEach(func() {
		requireLaunched()
		if _, err := exec.LookPath("ssh-keygen"); err != nil {
			Skip("not run: ssh-keygen not found (Debian package openssh-client)")
		}
		var err error
		dir, err = os.MkdirTemp(scratch, "signing-")
		Expect(err).NotTo(HaveOccurred())
		keys = []signingKey{
			sshKeygen(dir, "alice", "ed25519", ""),
			sshKeygen(dir, "bob", "ecdsa", "384"),
			sshKeygen(dir, "carol", "rsa", "2048"),
		}
		var signers strings.Builder
		for _, k := range keys {
			signers.WriteString(k.line)
		}
		Expect(os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte(signers.String()), 0o600)).To(Succeed())
		config = []byte("signing:\n  allowed_signers: " + filepath.Join(dir, "allowed_signers") + "\n  require_signed: [\"*\"]\n")
	})

	// signing starts a registry that requires signatures (on port, 0: any)
	// and a client of it.
	signing := func(ctx context.Context, name string, port int) (*harness.Server, *harness.Client) {
		GinkgoHelper()
		srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: target.Bin, Dir: scratch, Name: name + "-" + u, Config: config, Port: port})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)
		c, err := harness.Dial(ctx, srv.URL, "skills-conformance")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		return srv, c
	}

	It("signs skills and prompts with its key file (ed25519, ECDSA, RSA); the registry names the signer and ssh-keygen verifies them", func(ctx SpecContext) {
		srv, c := signing(ctx, "signs", 0)
		for _, k := range keys {
			d := driver(srv.URL)
			do(ctx, d, "configure", map[string]any{"signing_key": k.priv})
			id, name := scoped("signed-"+k.name), scoped("signed-"+k.name)
			body := "# Signed by " + k.name + "\n\nü and \"quotes\""
			do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": body})
			do(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": name})
			started(ctx, d)

			v := newestVersion(ctx, c, "skills::versions", "id", id)
			Expect(string(v.SignedBy)).To(Equal(`"`+k.principal()+`"`), k.name)
			Expect(v.Key).To(Equal(k.fingerprint))
			Expect(keygenAccepts(dir, k, v.Signature, body)).To(BeTrue(), "ssh-keygen -Y verify refuses the %s skill signature", k.name)
			p := newestVersion(ctx, c, "prompts::versions", "name", name)
			Expect(string(p.SignedBy)).To(Equal(`"` + k.principal() + `"`))
			Expect(p.Definition).To(Equal(sendEmailDefinition(name)))
			Expect(keygenAccepts(dir, k, p.Signature, p.Definition)).To(BeTrue(), "ssh-keygen -Y verify refuses the %s prompt signature", k.name)
			Expect(d.Close()).To(Succeed())
		}
	})

	It("sends signatures made elsewhere; one over other bytes is refused BAD_SIGNATURE, reported once and not retried", func(ctx SpecContext) {
		srv, c := signing(ctx, "given", 0)
		alice := keys[0]
		id, bad, name := scoped("given"), scoped("given-bad"), scoped("given-prompt")
		d := driver(srv.URL)
		do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# Given\n", "signature": keygenSign(dir, alice, "# Given\n")})
		do(ctx, d, "skill", map[string]any{"skill_id": bad, "markdown": "# Bad\n", "signature": keygenSign(dir, alice, "# Other\n")})
		do(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": name, "signature": keygenSign(dir, alice, sendEmailDefinition(name))})
		var res startResult
		Expect(json.Unmarshal(do(ctx, d, "start", map[string]any{"wait": true}), &res)).To(Succeed())
		Expect(res.Registered).To(BeFalse())
		Expect(res.Rejected).To(HaveLen(1))
		r := res.Rejected[0]
		Expect([]any{r.Kind, r.Name, r.Code, r.Retried}).To(Equal([]any{"skill", bad, rules.CodeBadSignature, false}))
		Expect(r.Message).To(ContainSubstring("not a signature of these exact bytes"))
		Expect(r.Advice).To(Equal("sign the exact bytes registered (a skill's body, a prompt's canonical JSON) for namespace iii-skills, " +
			"or send no signature; then restart this worker (not retried)"))
		Expect(string(newestVersion(ctx, c, "skills::versions", "id", id).SignedBy)).To(Equal(`"alice@example.com"`))
		Expect(string(newestVersion(ctx, c, "prompts::versions", "name", name).SignedBy)).To(Equal(`"alice@example.com"`))
		Consistently(func() []map[string]any { return d.EventsNamed("registered") }).WithTimeout(time.Second).Should(BeEmpty())
	})

	It("is refused UNSIGNED without a key, with the signing advice, and not retried", func(ctx SpecContext) {
		srv, _ := signing(ctx, "unsigned", 0)
		d := driver(srv.URL)
		id := scoped("unsigned")
		do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# Unsigned\n"})
		var res startResult
		Expect(json.Unmarshal(do(ctx, d, "start", map[string]any{"wait": true}), &res)).To(Succeed())
		Expect(res.Registered).To(BeFalse())
		Expect(res.Rejected).To(HaveLen(1))
		r := res.Rejected[0]
		Expect([]any{r.Kind, r.Name, r.Code, r.Retried}).To(Equal([]any{"skill", id, rules.CodeUnsigned, false}))
		Expect(r.Message).To(ContainSubstring(`namespace "*" requires a signature`))
		Expect(r.Advice).To(Equal("sign it with a key the registry's allowed_signers trusts for this namespace (the publisher's signing key), " +
			"or have the operator trust this key; then restart this worker (not retried)"))
		line := `skills registry refused skill "` + id + `" (UNSIGNED): ` + r.Message + "; " + r.Advice
		Expect(d.EventsNamed("log")).To(ContainElement(And(HaveKeyWithValue("level", "error"), HaveKeyWithValue("message", line))))
	})

	It("signs again what it registers after the engine restarts with empty state", func(ctx SpecContext) {
		port, err := harness.FreePort()
		Expect(err).NotTo(HaveOccurred())
		first, _ := signing(ctx, "before", port)
		d := driver(first.URL)
		do(ctx, d, "configure", map[string]any{"signing_key": keys[1].priv,
			"backoff": map[string]any{"initial_ms": 100, "multiplier": 2, "max_ms": 500, "give_up_ms": 120000}})
		id, name := scoped("again"), scoped("again")
		do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# Again\n"})
		do(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": name})
		started(ctx, d)
		rounds := len(d.EventsNamed("registered"))
		first.Stop()
		_, c := signing(ctx, "after", port)
		Eventually(func() int { return len(d.EventsNamed("registered")) }).WithTimeout(60 * time.Second).Should(BeNumerically(">", rounds))
		Expect(string(newestVersion(ctx, c, "skills::versions", "id", id).SignedBy)).To(Equal(`"bob@example.com"`))
		Expect(string(newestVersion(ctx, c, "prompts::versions", "name", name).SignedBy)).To(Equal(`"bob@example.com"`))
	})

	It("refuses a key file it cannot sign with at configure, saying what is wrong and what to do", func(ctx SpecContext) {
		enc := sshKeygen(dir, "enc", "ed25519", "", "-N", "correct horse")
		junk := filepath.Join(dir, "junk")
		Expect(os.WriteFile(junk, []byte("not a key\n"), 0o600)).To(Succeed())
		quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		for _, c := range []struct{ path, want string }{
			// The driver runs without SSH_AUTH_SOCK (harness.StartDriver): with an agent that holds
			// the key, the publisher signs through it.
			{enc.priv, "signing key " + quote(enc.priv) + ` is encrypted (it has a passphrase) and SSH_AUTH_SOCK is not set: ` +
				`load the key into an ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; ` +
				`or sign with ssh-keygen -Y sign -n iii-skills (or skills sign) and pass the signature`},
			{keys[0].priv + ".pub", "signing key " + quote(keys[0].priv+".pub") + " is a public key and SSH_AUTH_SOCK is not set: " +
				"load its private half into an ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; " +
				"or give the private key file (the one without .pub)"},
			{junk, "signing key " + quote(junk) + " is not an OpenSSH private key: expected the file ssh-keygen writes (-----BEGIN OPENSSH PRIVATE KEY-----)"},
		} {
			d := driver(target.URL)
			_, err := d.Do(ctx, "configure", map[string]any{"signing_key": c.path})
			var de *harness.DriverError
			Expect(err).To(BeAssignableToTypeOf(de), "configure with %s should reply ok:false", c.path)
			Expect(err.Error()).To(Equal(c.want))
		}
	})
})
