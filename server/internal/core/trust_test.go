package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/testutil"
	"golang.org/x/crypto/ssh"
)

// newLocalWith is newLocal with cfg.
func newLocalWith(t *testing.T, cfg Config) *Local {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	client := iii.New("ws://127.0.0.1:1", iii.WithLogger(quiet))
	l := New(client, cfg, Options{State: kv.Local(st), Logger: quiet})
	t.Cleanup(l.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l.Start(ctx)
	return l
}

// writeSigners writes an allowed_signers file and returns its path.
func writeSigners(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func register(l *Local, id, body, sig string) error {
	_, err := l.RegisterSkill(context.Background(), Caller{}, registry.RegisterSkillInput{ID: id, Skill: body, Signature: sig})
	return err
}

func wantCode(t *testing.T, err error, code string, says ...string) {
	t.Helper()
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != code {
		t.Fatalf("err = %v; want code %s", err, code)
	}
	for _, s := range says {
		if !strings.Contains(ie.Message, s) {
			t.Fatalf("%s refusal %q does not say %q", code, ie.Message, s)
		}
	}
}

// Signatures made by the real ssh-keygen are verified at register time;
// the verdict (principal and fingerprint) is stored with the version, and
// checking the stored signature back with ssh-keygen -Y verify agrees
// with the registry for every key type: trusted, untrusted, unsigned.
func TestSignedRegisterVerdictsAgreeWithSSHKeygen(t *testing.T) {
	keys := map[string]testutil.SSHKey{}
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		keys[typ] = testutil.NewSSHKey(t, typ)
	}
	stranger := testutil.NewSSHKey(t, "ed25519")
	allowed := []string{"# trusted publishers",
		keys["ed25519"].AllowedLine("alice@example.com", rules.SignatureNamespace),
		keys["ecdsa"].AllowedLine("bob@example.com", ""),
		keys["rsa"].AllowedLine("ci@acme.example", "iii-*")}
	path := writeSigners(t, allowed...)
	cfg := DefaultConfig()
	cfg.Signing = SigningConfig{AllowedSigners: path}
	l := newLocalWith(t, cfg)
	body := "# Signed\n\nÜnïcode and \"quotes\".\n"
	cases := []struct {
		id, sig, who string
		key          string
	}{
		{"s/ed25519", keys["ed25519"].Sign(t, rules.SignatureNamespace, []byte(body)), "alice@example.com", keys["ed25519"].Fingerprint},
		{"s/ecdsa", keys["ecdsa"].Sign(t, rules.SignatureNamespace, []byte(body)), "bob@example.com", keys["ecdsa"].Fingerprint},
		{"s/rsa", keys["rsa"].Sign(t, rules.SignatureNamespace, []byte(body)), "ci@acme.example", keys["rsa"].Fingerprint},
		{"s/stranger", stranger.Sign(t, rules.SignatureNamespace, []byte(body)), "", stranger.Fingerprint},
		{"s/unsigned", "", "", ""},
	}
	for _, c := range cases {
		if err := register(l, c.id, body, c.sig); err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		list, err := l.Versions(context.Background(), KindSkill, c.id)
		if err != nil {
			t.Fatal(err)
		}
		v := list.Versions[0]
		raw, _ := json.Marshal(v)
		if (v.SignedBy == nil) != (c.who == "") || v.SignedBy != nil && *v.SignedBy != c.who || v.Key != c.key || v.Signature != c.sig {
			t.Fatalf("%s: version %s; want signed_by %q key %q", c.id, raw, c.who, c.key)
		}
		if c.who == "" && !strings.Contains(string(raw), `"signed_by":null`) {
			t.Fatalf("%s: an unsigned version lists as %s; want signed_by null", c.id, raw)
		}
		if c.sig == "" {
			continue
		}
		// The reader's side: the stored signature over the stored content,
		// checked by OpenSSH against the same allowed_signers.
		content, _, err := l.readSelected(context.Background(), c.id, "sha256:"+v.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		principal := c.who
		if principal == "" {
			principal = "alice@example.com"
		}
		ok, out := testutil.KeygenVerify(t, strings.Join(allowed, "\n")+"\n", principal, rules.SignatureNamespace, v.Signature, []byte(content))
		if ok != (c.who != "") {
			t.Fatalf("%s: the registry says signed_by %q, ssh-keygen -Y verify says %v: %s", c.id, c.who, ok, out)
		}
	}
	// A facts reader (skills/list _meta, catalog entries) says the same.
	s, ok, _ := l.CatalogSkill(context.Background(), "s/ed25519")
	if !ok || string(s.SignedBy) != `"alice@example.com"` || s.Key != keys["ed25519"].Fingerprint || s.Version != 1 || s.SHA256 != sum(body) {
		t.Fatalf("catalog entry: %+v", s)
	}
	if s, _, _ := l.CatalogSkill(context.Background(), "s/unsigned"); string(s.SignedBy) != "null" || s.Key != "" {
		t.Fatalf("unsigned catalog entry: signed_by %s key %q", s.SignedBy, s.Key)
	}
}

func sum(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// unsupportedKeySignature is an armored SSHSIG whose key is a security
// key (sk-ssh-ed25519@openssh.com), which the registry does not take.
func unsupportedKeySignature() string {
	str := func(b []byte, s []byte) []byte { return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...) }
	key := str(nil, []byte("sk-ssh-ed25519@openssh.com"))
	key = str(key, bytes.Repeat([]byte{1}, 32))
	key = str(key, []byte("ssh:"))
	blob := append([]byte("SSHSIG"), 0, 0, 0, 1)
	blob = str(blob, key)
	blob = str(blob, []byte(rules.SignatureNamespace))
	blob = str(blob, nil)
	blob = str(blob, []byte("sha512"))
	blob = str(blob, str(str(nil, []byte("sk-ssh-ed25519@openssh.com")), bytes.Repeat([]byte{2}, 64)))
	return "-----BEGIN SSH SIGNATURE-----\n" + base64.StdEncoding.EncodeToString(blob) + "\n-----END SSH SIGNATURE-----\n"
}

// Bad signatures and bad policy matches are each refused with their code
// and a message saying what was wrong; nothing is stored; the registry
// keeps serving.
func TestBadSignaturesAreRefusedAndNothingIsStored(t *testing.T) {
	alice := testutil.NewSSHKey(t, "ed25519")
	mallory := testutil.NewSSHKey(t, "ed25519")
	cfg := DefaultConfig()
	cfg.Signing = SigningConfig{AllowedSigners: writeSigners(t, alice.AllowedLine("alice@example.com", rules.SignatureNamespace)),
		RequireSigned: []string{"acme/"}}
	l := newLocalWith(t, cfg)
	body := "# Acme\n\nthe body\n"
	good := alice.Sign(t, rules.SignatureNamespace, []byte(body))
	for _, c := range []struct {
		name, id, body, sig, code string
		says                      []string
	}{
		{"unsigned in a required namespace", "acme/doc", body, "", rules.CodeUnsigned, []string{`namespace "acme/" requires a signature`, "acme/doc"}},
		{"untrusted key", "acme/doc", body, mallory.Sign(t, rules.SignatureNamespace, []byte(body)), rules.CodeUnsigned, []string{mallory.Fingerprint, `namespace "acme/"`}},
		{"wrong namespace", "acme/doc", body, alice.Sign(t, "git", []byte(body)), rules.CodeBadSignature, []string{`made for namespace "git"`, `"iii-skills"`}},
		{"other bytes", "acme/doc", body + "tampered", good, rules.CodeBadSignature, []string{"not a signature of these exact bytes"}},
		{"malformed armor", "acme/doc", body, "-----BEGIN SSH SIGNATURE-----\nnot base64!\n-----END SSH SIGNATURE-----\n", rules.CodeBadSignature, []string{"does not verify"}},
		{"not armored", "acme/doc", body, "hello", rules.CodeBadSignature, []string{"does not verify"}},
		{"truncated", "acme/doc", body, good[:len(good)/2], rules.CodeBadSignature, []string{"does not verify"}},
		{"huge", "acme/doc", body, strings.Repeat("A", 1<<20), rules.CodeBadSignature, []string{"at most 16384 bytes"}},
		{"unsupported key type", "acme/doc", body, unsupportedKeySignature(), rules.CodeBadSignature, []string{"sk-ssh-ed25519@openssh.com"}},
		{"bad signature outside required namespaces", "free/doc", body, alice.Sign(t, "git", []byte(body)), rules.CodeBadSignature, nil},
	} {
		err := register(l, c.id, c.body, c.sig)
		wantCode(t, err, c.code, c.says...)
		if _, err := l.Versions(context.Background(), KindSkill, c.id); err == nil {
			t.Fatalf("%s: a version was stored", c.name)
		}
		if list, _ := l.ListSkills(context.Background()); len(list.Skills) != 0 {
			t.Fatalf("%s: a skill was stored: %+v", c.name, list.Skills)
		}
	}
	if err := register(l, "acme/doc", body, good); err != nil {
		t.Fatalf("a good signature after the bad ones: %v", err)
	}
	if err := register(l, "free/doc", body, ""); err != nil {
		t.Fatalf("unsigned outside the required namespaces: %v", err)
	}
}

// signing.signers narrows who may sign in a namespace; signed_labels only
// point at signed versions.
func TestSignersPerNamespaceAndSignedLabels(t *testing.T) {
	alice := testutil.NewSSHKey(t, "ed25519")
	bob := testutil.NewSSHKey(t, "ed25519")
	cfg := DefaultConfig()
	cfg.Signing = SigningConfig{
		AllowedSigners: writeSigners(t, alice.AllowedLine("alice@example.com", ""), bob.AllowedLine("bob@example.com", "")),
		RequireSigned:  []string{"*"},
		Signers:        map[string][]string{"acme/": {"alice@example.com"}},
		SignedLabels:   []string{"production"},
	}
	cfg.Versions.ProtectedLabels = nil
	l := newLocalWith(t, cfg)
	body := "# a\n"
	wantCode(t, register(l, "acme/x", body, bob.Sign(t, rules.SignatureNamespace, []byte(body))), rules.CodeUnsigned,
		`namespace "acme/"`, "signed by alice@example.com only", bob.Fingerprint)
	if err := register(l, "acme/x", body, alice.Sign(t, rules.SignatureNamespace, []byte(body))); err != nil {
		t.Fatal(err)
	}
	if err := register(l, "other/x", body, bob.Sign(t, rules.SignatureNamespace, []byte(body))); err != nil {
		t.Fatalf("bob outside acme/: %v", err)
	}
	wantCode(t, register(l, "other/y", body, ""), rules.CodeUnsigned, `namespace "*"`)

	// A signed label: only signed versions. (Signing is required
	// everywhere here, so make an untrusted version on a second registry.)
	cfg2 := DefaultConfig()
	cfg2.Signing = SigningConfig{AllowedSigners: writeSigners(t, alice.AllowedLine("alice@example.com", "")), SignedLabels: []string{"production"}}
	l2 := newLocalWith(t, cfg2)
	if err := register(l2, "x", "# one\n", ""); err != nil {
		t.Fatal(err)
	}
	if err := register(l2, "x", "# two\n", alice.Sign(t, rules.SignatureNamespace, []byte("# two\n"))); err != nil {
		t.Fatal(err)
	}
	_, err := l2.Label(context.Background(), Caller{}, KindSkill, LabelInput{ID: "x", Label: "production", Version: "1"})
	wantCode(t, err, rules.CodeUnsigned, `label "production" takes signed versions only`, "version 1 of skill x is unsigned")
	if _, err := l2.Label(context.Background(), Caller{}, KindSkill, LabelInput{ID: "x", Label: "production", Version: "2"}); err != nil {
		t.Fatal(err)
	}
}

// allowed_signers with a bad line is refused at start-up naming the line;
// when it changes while the server runs, a good file is used at once and
// a bad one is logged and the keys before are kept.
func TestAllowedSignersReload(t *testing.T) {
	alice := testutil.NewSSHKey(t, "ed25519")
	bob := testutil.NewSSHKey(t, "ed25519")
	path := writeSigners(t, alice.AllowedLine("alice@example.com", ""))
	bad := DefaultConfig()
	bad.Signing.AllowedSigners = writeSigners(t, alice.AllowedLine("alice@example.com", ""), "# comment", "bob@example.com namespace=\"x\" "+bob.Public)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "allowed_signers line 3") {
		t.Fatalf("a bad line at start-up: %v", err)
	}
	for _, c := range []SigningConfig{
		{RequireSigned: []string{"acme/"}},
		{AllowedSigners: path, RequireSigned: []string{"Bad Namespace"}},
		{AllowedSigners: path, Signers: map[string][]string{"acme/": {"*@x"}}},
		{AllowedSigners: filepath.Join(t.TempDir(), "missing")},
	} {
		cfg := DefaultConfig()
		cfg.Signing = c
		if err := cfg.Validate(); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	cfg := DefaultConfig()
	cfg.Signing = SigningConfig{AllowedSigners: path}
	l := newLocalWith(t, cfg)
	body := "# b\n"
	signed := bob.Sign(t, rules.SignatureNamespace, []byte(body))
	if err := register(l, "b", body, signed); err != nil {
		t.Fatal(err)
	}
	if f, _ := l.hist.skills.Facts("b", 1); f.SignedBy != "" {
		t.Fatalf("bob trusted before he is listed: %+v", f)
	}
	// Replaced the way editors do: a new file renamed over the old one.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(alice.AllowedLine("alice@example.com", "")+"\n"+bob.AllowedLine("bob@example.com", "")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	body2 := "# b2\n"
	signed2 := bob.Sign(t, rules.SignatureNamespace, []byte(body2))
	testutil.Eventually(t, 10*time.Second, "the watcher to reload allowed_signers", func() bool {
		a := l.sign.signers.Load()
		_, err := a.Principal(mustParseKey(t, bob.Public), rules.SignatureNamespace, time.Now())
		return err == nil
	})
	if err := register(l, "b", body2, signed2); err != nil {
		t.Fatal(err)
	}
	if f, _ := l.hist.skills.Facts("b", 2); f.SignedBy != "bob@example.com" {
		t.Fatalf("bob after the reload: %+v", f)
	}
	// A bad file: refused with its line, the keys before stay.
	if err := os.WriteFile(path, []byte("alice@example.com ssh-ed25519 AAAA-not-base64\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.ReloadSigners(); err == nil || !strings.Contains(err.Error(), "allowed_signers line 1") {
		t.Fatalf("reload of a bad file: %v", err)
	}
	body3 := "# b3\n"
	if err := register(l, "b", body3, bob.Sign(t, rules.SignatureNamespace, []byte(body3))); err != nil {
		t.Fatal(err)
	}
	if f, _ := l.hist.skills.Facts("b", 3); f.SignedBy != "bob@example.com" {
		t.Fatalf("after a bad reload the keys before are gone: %+v", f)
	}
}

// Caps on published skills: count, size per skill, total bytes, each
// refused with LIMIT_EXCEEDED naming the setting; a re-register of a
// published id does not count twice.
func TestPublishedCaps(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Published = PublishedConfig{MaxSkills: 2, MaxSkillBytes: 100, MaxTotalBytes: 150}
	l := newLocalWith(t, cfg)
	wantCode(t, register(l, "big", strings.Repeat("x", 101), ""), rules.CodeLimitExceeded, "published.max_skill_bytes", "100 bytes")
	if err := register(l, "a", strings.Repeat("a", 80), ""); err != nil {
		t.Fatal(err)
	}
	wantCode(t, register(l, "b", strings.Repeat("b", 80), ""), rules.CodeLimitExceeded, "published.max_total_bytes", "160 bytes")
	if err := register(l, "b", strings.Repeat("b", 60), ""); err != nil {
		t.Fatal(err)
	}
	wantCode(t, register(l, "c", "c", ""), rules.CodeLimitExceeded, "published.max_skills", "2 skills")
	if err := register(l, "a", strings.Repeat("a", 90), ""); err != nil {
		t.Fatalf("a re-register within the caps: %v", err)
	}
	if _, err := l.UnregisterSkill(context.Background(), Caller{}, "b"); err != nil {
		t.Fatal(err)
	}
	if err := register(l, "c", "c", ""); err != nil {
		t.Fatalf("after an unregister: %v", err)
	}
	bad := DefaultConfig()
	bad.Published.MaxSkillBytes = rules.MaxSkillBytes + 1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "published.max_skill_bytes") {
		t.Fatalf("max_skill_bytes above the body limit: %v", err)
	}
}

// Pins: iii://id@sha256:<hex> reads exactly that version; a digest of the
// wrong form is INVALID_ARGUMENTS, one no version has NOT_FOUND naming it;
// a folder skill is pinned by its manifest while it holds that content.
func TestPinsByDigest(t *testing.T) {
	l := newLocal(t)
	mustRegister(t, l, "p/doc", "# one\n")
	mustRegister(t, l, "p/doc", "# two\n")
	if got, err := fetch(l, "iii://p/doc@sha256:"+sum("# one\n")); err != nil || !strings.HasSuffix(got, "# one") {
		t.Fatalf("pin of version 1: %q %v", got, err)
	}
	_, err := fetch(l, "iii://p/doc@sha256:"+strings.Repeat("A", 64))
	wantCode(t, err, registry.CodeInvalidArguments, "expected 64 lowercase hex digits")
	_, err = fetch(l, "iii://p/doc@sha256:12ab")
	wantCode(t, err, registry.CodeInvalidArguments, "got 4 characters")
	missing := strings.Repeat("0", 64)
	_, err = fetch(l, "iii://p/doc@sha256:"+missing)
	wantCode(t, err, registry.CodeNotFound, missing)

	dir := t.TempDir()
	md := "---\nname: fold\ndescription: a folder skill\n---\n# Fold\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	f := catalog.NewFile("SKILL.md", []byte(md), time.Time{}, func() ([]byte, error) { return os.ReadFile(filepath.Join(dir, "SKILL.md")) })
	e := &catalog.Entry{ID: "fold", Kind: catalog.KindInstruction, Files: []catalog.File{f}, Main: "SKILL.md", Body: catalog.Inline("# Fold\n"),
		Origin: catalog.Origin{Kind: catalog.OriginFolder, Source: dir, Path: "SKILL.md"}}
	src, err := l.Catalog().AddSource("folder", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(e); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`[{"path":"SKILL.md","sha256":"%s","size":%d}]`, sum(md), len(md))
	pin := "iii://fold@sha256:" + sum(manifest)
	if got, err := fetch(l, pin); err != nil || !strings.HasSuffix(got, "# Fold") {
		t.Fatalf("folder pin: %q %v", got, err)
	}
	// The file changes on disk before the folder is rescanned: the pin no
	// longer serves.
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md+"changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = fetch(l, pin)
	wantCode(t, err, registry.CodeNotFound, "changed on disk")
	s, _, _ := l.CatalogSkill(context.Background(), "fold")
	if s.SHA256 != sum(manifest) || s.SignedBy != nil {
		t.Fatalf("folder catalog entry: sha256 %s signed_by %s; want %s and none", s.SHA256, s.SignedBy, sum(manifest))
	}
	testutil.Eventually(t, 5*time.Second, "the folder skill in search with its manifest digest", func() bool {
		res, _ := l.Search(context.Background(), SearchInput{Query: "fold", Limit: 5})
		return len(res.Results) > 0 && res.Results[0].SHA256 == sum(manifest)
	})
}

// A yanked version leaves unselected reads, latest and labels; pinned
// reads carry the reason; every version yanked serves nothing, with the
// reason; on-change fires yank, unyank and deprecate; listings carry them.
func TestYankAndDeprecateThroughTheRegistry(t *testing.T) {
	l := newLocal(t)
	var mu sync.Mutex
	var ops []string
	cancel := l.Subscribe(func(c Change) {
		if c.Kind == ChangeSkill && c.ID == "y/doc" {
			mu.Lock()
			ops = append(ops, c.Op)
			mu.Unlock()
		}
	})
	defer cancel()
	mustRegister(t, l, "y/doc", "# one\n")
	mustRegister(t, l, "y/doc", "# two\n")
	ctx := context.Background()
	res, err := l.Yank(ctx, Caller{}, KindSkill, YankInput{ID: "y/doc", Version: "2", Reason: "leaks a token"})
	if err != nil || !res.Changed || res.Served == nil || *res.Served != 1 || *res.Yanked != "leaks a token" {
		t.Fatalf("yank: %+v %v", res, err)
	}
	if got, _ := fetch(l, "iii://y/doc"); !strings.HasSuffix(got, "# one") {
		t.Fatalf("unselected read after the yank: %q", got)
	}
	rr, err := l.Read(ctx, "iii://y/doc@2")
	if err != nil || rr.Contents[0].Text != "# two\n" || rr.Contents[0].Yanked != "leaks a token" {
		t.Fatalf("pinned read of the yanked version: %+v %v", rr, err)
	}
	if raw, _ := json.Marshal(must(l.Read(ctx, "iii://y/doc"))); strings.Contains(string(raw), "yanked") {
		t.Fatalf("an unselected read carries a yank: %s", raw)
	}
	s, _, _ := l.CatalogSkill(ctx, "y/doc")
	if s.Version != 1 || s.SHA256 != sum("# one\n") {
		t.Fatalf("listing after the yank: %+v", s)
	}
	if list, _ := l.ListSkills(ctx); len(list.Skills) != 1 {
		t.Fatalf("skills::list: %+v", list)
	}
	if _, err := l.Yank(ctx, Caller{}, KindSkill, YankInput{ID: "y/doc", Version: "1", Reason: "all bad"}); err != nil {
		t.Fatal(err)
	}
	_, err = fetch(l, "iii://y/doc")
	wantCode(t, err, registry.CodeNotFound, "Skill not found: y/doc", "every kept version of skill y/doc is yanked (leaks a token)")
	if list, _ := l.ListSkills(ctx); len(list.Skills) != 0 {
		t.Fatalf("a withdrawn skill is listed: %+v", list)
	}
	if _, err := l.Yank(ctx, Caller{}, KindSkill, YankInput{ID: "y/doc", Version: "9", Reason: "x"}); err == nil {
		t.Fatal("yank of an unknown version")
	} else {
		wantCode(t, err, registry.CodeNotFound, "no version 9")
	}
	if _, err := l.Unyank(ctx, Caller{}, KindSkill, YankInput{ID: "y/doc", Version: "2"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := fetch(l, "iii://y/doc"); !strings.HasSuffix(got, "# two") {
		t.Fatalf("after unyank: %q", got)
	}
	if _, err := l.Deprecate(ctx, Caller{}, KindSkill, DeprecateInput{ID: "y/doc", Message: "use z/doc"}); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := l.CatalogSkill(ctx, "y/doc"); s.Deprecated != "use z/doc" {
		t.Fatalf("deprecated listing: %+v", s)
	}
	testutil.Eventually(t, 5*time.Second, "search to carry the deprecation", func() bool {
		r, _ := l.Search(ctx, SearchInput{Query: "two", Limit: 3})
		return len(r.Results) > 0 && r.Results[0].Deprecated == "use z/doc"
	})
	if _, err := l.Deprecate(ctx, Caller{}, KindSkill, DeprecateInput{ID: "none/x", Message: "m"}); err == nil {
		t.Fatal("deprecating an unknown id")
	}
	mu.Lock()
	got := strings.Join(ops, ",")
	mu.Unlock()
	if got != "register,register,yank,yank,unyank,deprecate" {
		t.Fatalf("on-change ops %s", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A prompt's signature covers its canonical JSON.
func TestSignedPromptCoversItsCanonicalJSON(t *testing.T) {
	alice := testutil.NewSSHKey(t, "ed25519")
	cfg := DefaultConfig()
	cfg.Signing = SigningConfig{AllowedSigners: writeSigners(t, alice.AllowedLine("alice@example.com", "")), RequireSigned: []string{"acme"}}
	l := newLocalWith(t, cfg)
	desc := "Review <code> & \"docs\"\n\tü"
	d := "the diff"
	args := []registry.PromptArgument{{Name: "diff", Description: &d, Required: true}, {Name: "style"}}
	canonical := `{"arguments":[{"description":"the diff","name":"diff","required":true},{"name":"style","required":false}],"description":"Review <code> & \"docs\"\n\tü","function_id":"acme::review"}`
	if got := promptDefinition(desc, "acme::review", args); got != canonical {
		t.Fatalf("canonical JSON\n%s\nwant\n%s", got, canonical)
	}
	in := registry.RegisterPromptInput{Name: "acme-review", Description: desc, FunctionID: "acme::review", Arguments: args}
	_, err := l.RegisterPrompt(context.Background(), Caller{}, in)
	wantCode(t, err, rules.CodeUnsigned, `namespace "acme"`)
	in.Signature = alice.Sign(t, rules.SignatureNamespace, []byte(`{"description":"another order"}`))
	_, err = l.RegisterPrompt(context.Background(), Caller{}, in)
	wantCode(t, err, rules.CodeBadSignature)
	in.Signature = alice.Sign(t, rules.SignatureNamespace, []byte(canonical))
	if _, err := l.RegisterPrompt(context.Background(), Caller{}, in); err != nil {
		t.Fatal(err)
	}
	list, err := l.Versions(context.Background(), KindPrompt, "acme-review")
	if err != nil || list.Versions[0].SignedBy == nil || *list.Versions[0].SignedBy != "alice@example.com" || list.Versions[0].SHA256 != sum(canonical) {
		t.Fatalf("prompt versions: %+v %v", list, err)
	}
}

func mustParseKey(t *testing.T, line string) ssh.PublicKey {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A yanked prompt version leaves prompts::list (and prompts::mcp-get);
// every version yanked, the prompt is not listed.
func TestYankedPromptVersions(t *testing.T) {
	l := newLocal(t)
	ctx := context.Background()
	for _, d := range []string{"first", "second"} {
		if _, err := l.RegisterPrompt(ctx, Caller{}, registry.RegisterPromptInput{Name: "p-one", Description: d, FunctionID: "p::render"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Yank(ctx, Caller{}, KindPrompt, YankInput{ID: "p-one", Version: "latest", Reason: "typo"}); err != nil {
		t.Fatal(err)
	}
	list, _ := l.MCPPrompts(ctx)
	if len(list.Prompts) != 1 || list.Prompts[0].Description != "first" {
		t.Fatalf("prompts after yanking version 2: %+v", list)
	}
	if _, err := l.Yank(ctx, Caller{}, KindPrompt, YankInput{ID: "p-one", Version: "1", Reason: "all"}); err != nil {
		t.Fatal(err)
	}
	if list, _ := l.ListPrompts(ctx); len(list.Prompts) != 0 {
		t.Fatalf("a prompt with every version yanked is listed: %+v", list)
	}
	_, err := l.GetPrompt(ctx, registry.PromptGetInput{Name: "p-one"})
	wantCode(t, err, registry.CodeNotFound, "every kept version of prompt p-one is yanked (typo)")
	if _, err := l.Deprecate(ctx, Caller{}, KindPrompt, DeprecateInput{ID: "p-one", Message: "gone"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := l.Versions(ctx, KindPrompt, "p-one"); v.Deprecated != "gone" {
		t.Fatalf("prompt versions: %+v", v)
	}
}
