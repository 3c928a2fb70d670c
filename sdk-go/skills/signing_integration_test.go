package skills_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/skills"
)

// signingRegistry makes the config of a registry that requires signatures
// for every id and trusts one ed25519 key ssh-keygen made, as
// alice@example.com. It returns a func that starts such a registry on port
// with a fresh data directory, the key file and the key's fingerprint.
func signingRegistry(t *testing.T, port int) (func() *server, string, string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("not run: ssh-keygen not found (Debian package openssh-client)")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "alice")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	signers := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, []byte("alice@example.com "+f[0]+" "+f[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fp, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub").Output()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("signing:\n  allowed_signers: "+signers+"\n  require_signed: [\"*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() *server { return startServerConfig(t, port, t.TempDir(), cfg) }
	return start, key, strings.Fields(string(fp))[1]
}

// A publisher with a key registers signed skills and prompts with a
// registry that requires signatures; after the engine restarts with empty
// state it registers them again, signed. One without a key is refused
// UNSIGNED, reported and not retried.
func TestPublisherSignsForARegistryThatRequiresSignatures(t *testing.T) {
	port := freePort(t)
	start, keyFile, fingerprint := signingRegistry(t, port)
	srv := start()
	signer, err := skills.LoadSigningKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	rounds := make(chan struct{}, 8)
	p := skills.NewPublisher(newClient(t, srv.url), skills.WithSigner(signer), skills.WithLogger(quietLogger),
		skills.WithBackoff(skills.Backoff{InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond, GiveUpAfter: time.Minute}),
		skills.WithOnRegistered(func() { rounds <- struct{}{} }))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.Skill("acme/signed", "# Signed\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := skills.Prompt(p, "acme-signed", "A signed prompt", func(context.Context, struct {
		Topic string `json:"topic" jsonschema:"description=What about"`
	}) (skills.PromptResult, error) {
		return skills.Text("x"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-rounds
	check := func(what string) {
		t.Helper()
		h, err := p.SkillVersions(ctx, "acme/signed")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		v := h.Versions[0]
		if v.SignedBy == nil || *v.SignedBy != "alice@example.com" || v.Key != fingerprint || !strings.HasPrefix(v.Signature, "-----BEGIN SSH SIGNATURE-----") {
			t.Fatalf("%s: skill version %+v", what, v)
		}
		ph, err := p.PromptVersions(ctx, "acme-signed")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		pv := ph.Versions[0]
		if pv.SignedBy == nil || *pv.SignedBy != "alice@example.com" || pv.Key != fingerprint ||
			pv.Definition != `{"arguments":[{"description":"What about","name":"topic","required":true}],"description":"A signed prompt","function_id":"prompt::acme-signed"}` {
			t.Fatalf("%s: prompt version %+v", what, pv)
		}
	}
	check("first registration")

	// The engine restarts with an empty data directory: everything is
	// registered again, signed (the registry would refuse it unsigned).
	srv.stop()
	srv = start()
	select {
	case <-rounds:
	case <-ctx.Done():
		t.Fatalf("not registered again after the restart:\n%s", srv.out.String())
	}
	check("after the engine restarted")

	// Without a key: UNSIGNED, permanent, with the signing advice.
	unsigned := skills.NewPublisher(dial(t, srv.url), skills.WithLogger(quietLogger))
	if err := unsigned.Skill("acme/unsigned", "# Unsigned\n"); err != nil {
		t.Fatal(err)
	}
	err = unsigned.Start(ctx)
	var rerr *skills.RegistrationError
	if !errors.As(err, &rerr) || len(rerr.Rejected) != 1 {
		t.Fatalf("unsigned publisher: %v", err)
	}
	r := rerr.Rejected[0]
	if r.Code != rules.CodeUnsigned || r.Retried() || !strings.Contains(r.Message, `namespace "*" requires a signature`) ||
		!strings.HasPrefix(r.Advice, "sign it with a key the registry's allowed_signers trusts") {
		t.Fatalf("refusal %+v", r)
	}
	_ = unsigned.Close(ctx, false)
	_ = p.Close(ctx, false)
}
