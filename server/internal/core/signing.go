package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/sshsig"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/scope"
)

// SigningConfig is config.yaml's signing: block (docs/trust.md).
//
//	signing:
//	  allowed_signers: /etc/iii/allowed_signers   # ssh-keygen -Y verify's file
//	  require_signed: ["acme/", "*"]              # namespaces refusing unsigned registers
//	  signers: {"acme/": ["alice@example.com"]}   # who may sign in a namespace
//	  signed_labels: [production]                 # labels that take signed versions only
type SigningConfig struct {
	// AllowedSigners is the allowed_signers file (the format of
	// ssh-keygen -Y verify and git's gpg.ssh.allowedSignersFile) naming
	// the keys the registry trusts, for namespace iii-skills. It is read at
	// start-up (a bad line stops the server, naming the line) and again
	// whenever it changes (a bad line is logged and the previous file
	// kept). Empty: no key is trusted.
	AllowedSigners string `yaml:"allowed_signers"`
	// RequireSigned lists the namespaces (id prefixes such as "acme/", or
	// "*" for every id) where a register without a signature by a trusted
	// key is refused with UNSIGNED. Elsewhere unsigned content is accepted
	// and shown as unsigned.
	RequireSigned []string `yaml:"require_signed"`
	// Signers narrows who may sign in a namespace: the principals (as
	// allowed_signers names them) whose keys are trusted for ids under it,
	// the longest namespace winning. A namespace without an entry trusts
	// every principal of allowed_signers.
	Signers map[string][]string `yaml:"signers"`
	// SignedLabels are labels that point at signed versions only (a
	// protected "production", say).
	SignedLabels []string `yaml:"signed_labels"`
}

// CheckNamespace refuses a namespace of signing: "*" or an id prefix.
func checkSigningNamespace(key, ns string) error {
	if ns == "*" {
		return nil
	}
	if err := registry.ValidateID(strings.TrimSuffix(ns, "/")); err != nil {
		return fmt.Errorf("%s: %q is not a namespace (expected \"*\" or an id prefix such as \"acme/\"): %v", key, ns, err)
	}
	return nil
}

func (c SigningConfig) check() error {
	for _, ns := range c.RequireSigned {
		if err := checkSigningNamespace("signing.require_signed", ns); err != nil {
			return err
		}
	}
	for ns, principals := range c.Signers {
		if err := checkSigningNamespace("signing.signers", ns); err != nil {
			return err
		}
		if len(principals) == 0 {
			return fmt.Errorf("signing.signers: namespace %q lists no principal (expected principals from allowed_signers, such as \"alice@example.com\")", ns)
		}
		for _, p := range principals {
			if strings.TrimSpace(p) == "" || strings.ContainsAny(p, "*?!,") {
				return fmt.Errorf("signing.signers: namespace %q: %q is not a principal (expected a name such as \"alice@example.com\", without patterns)", ns, p)
			}
		}
	}
	for _, l := range c.SignedLabels {
		if err := history.CheckLabel(l); err != nil {
			return fmt.Errorf("signing.signed_labels: %w", err)
		}
	}
	needsFile := len(c.RequireSigned) > 0 || len(c.Signers) > 0 || len(c.SignedLabels) > 0
	if c.AllowedSigners == "" {
		if needsFile {
			return errors.New("signing: require_signed, signers and signed_labels need signing.allowed_signers (the keys the registry trusts)")
		}
		return nil
	}
	_, err := sshsig.ReadAllowedSigners(c.AllowedSigners)
	if err != nil {
		return fmt.Errorf("signing.allowed_signers: %w", err)
	}
	return nil
}

// covers reports whether namespace ns covers id of kind k: "*" every id;
// skill ids split at '/', prompt names at '-' or '_' (as scoped tokens).
func covers(ns string, k Kind, id string) bool {
	if ns == "*" {
		return true
	}
	ns = strings.TrimSuffix(ns, "/")
	if k == KindPrompt {
		return scope.NamespacedPrompt(id, []string{ns}, nil)
	}
	return scope.NamespacedSkill(id, []string{ns})
}

// signing is the registry's signature policy: the trusted keys (reloaded
// when the file changes) and the namespaces that require them.
type signing struct {
	cfg     SigningConfig
	log     *slog.Logger
	signers atomic.Pointer[sshsig.AllowedSigners]
	now     func() time.Time
}

func newSigning(cfg SigningConfig, log *slog.Logger) *signing {
	s := &signing{cfg: cfg, log: log, now: time.Now}
	if cfg.AllowedSigners != "" {
		if err := s.load(); err != nil {
			// Config.Validate read it a moment ago; now it is broken: trust
			// nobody until it is fixed (the watcher reloads it).
			log.Error("signing: allowed_signers cannot be read; no key is trusted until it is fixed", "err", err)
		}
	}
	return s
}

// narrowest is the namespace of list that covers id of kind k most
// narrowly (the longest; "*" last), "" when none does.
func narrowest(list []string, k Kind, id string) string {
	best := ""
	for _, ns := range list {
		if !covers(ns, k, id) {
			continue
		}
		if best == "" || best == "*" && ns != "*" || ns != "*" && len(ns) > len(best) {
			best = ns
		}
	}
	return best
}

// requires is the namespace of signing.require_signed that covers id
// ("" when none does).
func (s *signing) requires(k Kind, id string) string { return narrowest(s.cfg.RequireSigned, k, id) }

// principalsFor is the narrowest signing.signers entry covering id, and
// its namespace (nil: every principal of allowed_signers).
func (s *signing) principalsFor(k Kind, id string) (string, []string) {
	names := make([]string, 0, len(s.cfg.Signers))
	for ns := range s.cfg.Signers {
		names = append(names, ns)
	}
	ns := narrowest(names, k, id)
	if ns == "" {
		return "", nil
	}
	return ns, s.cfg.Signers[ns]
}

// verdict checks signature (armored sshsig; "" none) over content, the
// bytes of id of kind k, and returns what the version records: the
// signature, the trusted principal ("" untrusted) and the key's
// fingerprint. A signature that does not verify is BAD_SIGNATURE; an
// unsigned or untrusted register in a namespace that requires signing is
// UNSIGNED.
func (s *signing) verdict(fn string, k Kind, id, content, signature string) (history.Meta, error) {
	required := s.requires(k, id)
	if signature == "" {
		if required != "" {
			return history.Meta{}, iii.NewInvocationError(rules.CodeUnsigned, fmt.Sprintf(
				"%s: %s %s is unsigned, and namespace %q requires a signature by a trusted key (signing.require_signed): sign the exact bytes with `ssh-keygen -Y sign -n %s` (or `skills sign`) and send it as signature",
				fn, k, id, required, rules.SignatureNamespace))
		}
		return history.Meta{}, nil
	}
	sig, err := sshsig.Verify([]byte(content), []byte(signature), rules.SignatureNamespace)
	if err != nil {
		return history.Meta{}, iii.NewInvocationError(rules.CodeBadSignature, fmt.Sprintf("%s: the signature of %s %s does not verify: %s", fn, k, id, signatureProblem(err)))
	}
	meta := history.Meta{Signature: signature, Key: sig.Fingerprint}
	who, why := s.trusted(k, id, sig)
	meta.SignedBy = who
	if who == "" && required != "" {
		return history.Meta{}, iii.NewInvocationError(rules.CodeUnsigned, fmt.Sprintf(
			"%s: %s %s is signed by key %s, which is not trusted for namespace %q: %s",
			fn, k, id, sig.Fingerprint, required, why))
	}
	return meta, nil
}

// trusted names the principal trusted for id's namespace whose key made
// sig, or "" and why none is.
func (s *signing) trusted(k Kind, id string, sig *sshsig.Signature) (string, string) {
	a := s.signers.Load()
	if a == nil {
		return "", "the registry has no allowed_signers file (signing.allowed_signers)"
	}
	now := s.now()
	ns, principals := s.principalsFor(k, id)
	if principals == nil {
		who, err := a.Principal(sig.Key, rules.SignatureNamespace, now)
		if err != nil {
			return "", notAllowed(err)
		}
		return who, ""
	}
	var reasons []string
	for _, p := range principals {
		err := a.Authorize(p, sig.Key, rules.SignatureNamespace, now)
		if err == nil {
			return p, ""
		}
		reasons = append(reasons, p+": "+notAllowed(err))
	}
	return "", fmt.Sprintf("namespace %q is signed by %s only (signing.signers), and allowed_signers lists this key for none of them (%s)",
		ns, strings.Join(principals, ", "), strings.Join(reasons, "; "))
}

// notAllowed is an allowed_signers refusal without its package prefix.
func notAllowed(err error) string {
	var na *sshsig.NotAllowedError
	if errors.As(err, &na) {
		return "allowed_signers: " + na.Reason
	}
	return err.Error()
}

// signatureProblem says what is wrong with a signature, in the registry's
// words, for each kind of failure.
func signatureProblem(err error) string {
	var ns *sshsig.NamespaceError
	switch {
	case errors.As(err, &ns):
		return fmt.Sprintf("it was made for namespace %q; the registry verifies namespace %q (ssh-keygen -Y sign -n %s)", ns.Got, ns.Expected, rules.SignatureNamespace)
	case errors.Is(err, sshsig.ErrTooLarge):
		return fmt.Sprintf("it is larger than an SSH signature can be (at most %d bytes): %v", sshsig.MaxArmoredSize, err)
	case errors.Is(err, sshsig.ErrBadSignature):
		return "it is not a signature of these exact bytes (sign the content as sent, UTF-8, nothing added)"
	}
	return strings.TrimPrefix(err.Error(), "sshsig: ")
}

// checkLabelSigned refuses a signed label at an unsigned version.
func (s *signing) checkLabelSigned(h *history.History, k Kind, id, label string, n int) error {
	if !slices.Contains(s.cfg.SignedLabels, label) {
		return nil
	}
	f, ok := h.Facts(id, n)
	if ok && f.SignedBy != "" {
		return nil
	}
	who := "unsigned"
	if ok && f.Key != "" {
		who = "signed by key " + f.Key + ", which allowed_signers does not trust"
	}
	return iii.NewInvocationError(rules.CodeUnsigned, fmt.Sprintf(
		"label %q takes signed versions only (signing.signed_labels), and version %d of %s %s is %s", label, n, k, id, who))
}

// watch reloads allowed_signers whenever it changes until ctx ends: a file
// with a bad line is logged with the line and the previous one kept.
// Editors replace files by renaming, so the folder is watched.
func (s *signing) watch(ctx context.Context) {
	path := s.cfg.AllowedSigners
	if path == "" {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Warn("signing: cannot watch allowed_signers; changes need a restart", "path", path, "err", err)
		return
	}
	abs, _ := filepath.Abs(path)
	if err := w.Add(filepath.Dir(abs)); err != nil {
		_ = w.Close()
		s.log.Warn("signing: cannot watch allowed_signers; changes need a restart", "path", path, "err", err)
		return
	}
	go func() {
		defer w.Close()
		var settle <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == filepath.Clean(abs) {
					settle = time.After(100 * time.Millisecond) // a write often comes in pieces
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				s.log.Warn("signing: watching allowed_signers", "err", err)
			case <-settle:
				settle = nil
				s.reload()
			}
		}
	}()
}

// reload reads allowed_signers again, logging what it found.
func (s *signing) reload() {
	if err := s.load(); err != nil {
		s.log.Error("signing: allowed_signers cannot be used; keeping the keys read before", "err", err)
		return
	}
	s.log.Info("signing: allowed_signers reloaded", "path", s.cfg.AllowedSigners)
}

// load reads allowed_signers and, when it is usable, trusts its keys.
func (s *signing) load() error {
	if s.cfg.AllowedSigners == "" {
		return errors.New("signing.allowed_signers is not set")
	}
	a, err := sshsig.ReadAllowedSigners(s.cfg.AllowedSigners)
	if err != nil {
		return err
	}
	s.signers.Store(a)
	return nil
}

// ReloadSigners reads allowed_signers again now (a watcher does so on
// every change of the file): an error names the line that is wrong, and
// the keys read before stay trusted.
func (l *Local) ReloadSigners() error { return l.sign.load() }
