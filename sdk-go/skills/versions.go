package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// WithMessage sets the message of the version a changed skill body or
// prompt definition becomes in the registry's history (Skill, Prompt).
// Registering unchanged content makes no version, so the message of a
// boot that changed nothing is not recorded.
func WithMessage(m string) FuncOption { return func(c *funcConfig) { c.message = m } }

// WithAuthor sets the author of that version (Skill, Prompt).
func WithAuthor(a string) FuncOption { return func(c *funcConfig) { c.author = a } }

// versionMeta adds message and author to a register payload when set.
func versionMeta[V string | any](payload map[string]V, c funcConfig) {
	for k, v := range map[string]string{"message": c.message, "author": c.author} {
		if v != "" {
			payload[k] = any(v).(V)
		}
	}
}

// LabelMove is the registry's answer to a label move.
type LabelMove struct {
	ID       string `json:"id"`
	Label    string `json:"label"`
	Version  int    `json:"version"`
	Previous int    `json:"previous,omitempty"` // 0: the label is new
}

// LabelSkill points label (production, staging, …; never latest) at a
// version of skill id: version is a number ("3") or another label
// ("staging", "latest"). adminToken is needed for the registry's
// protected labels, else "". With the registry's serve label, moving it
// changes what every reader is served.
func (p *Publisher) LabelSkill(ctx context.Context, id, label, version, adminToken string) (LabelMove, error) {
	return p.label(ctx, rules.FnSkillsLabel, "id", id, label, version, adminToken)
}

// LabelPrompt is LabelSkill for prompt name.
func (p *Publisher) LabelPrompt(ctx context.Context, name, label, version, adminToken string) (LabelMove, error) {
	return p.label(ctx, rules.FnPromptsLabel, "name", name, label, version, adminToken)
}

func (p *Publisher) label(ctx context.Context, fid, key, id, label, version, adminToken string) (LabelMove, error) {
	payload := map[string]any{key: id, "label": label, "version": version}
	if adminToken != "" {
		payload["admin_token"] = adminToken
	}
	out, err := p.trigger(ctx, fid, payload)
	if err != nil {
		return LabelMove{}, err
	}
	var m LabelMove
	if err := json.Unmarshal(out, &m); err != nil {
		return LabelMove{}, fmt.Errorf("%s: unexpected answer %s: %w", fid, out, err)
	}
	return m, nil
}

// HistoryVersion is one version in the registry's history.
type HistoryVersion struct {
	Version      int      `json:"version"`
	RegisteredAt string   `json:"registered_at"`
	Bytes        int      `json:"bytes"`
	SHA256       string   `json:"sha256"`
	Message      string   `json:"message,omitempty"`
	Author       string   `json:"author,omitempty"`
	Labels       []string `json:"labels,omitempty"`
	// SignedBy is the principal allowed_signers names for the key that
	// signed the version, nil when it is unsigned or the key is not
	// trusted; Key is that key's SHA256:… fingerprint ("" unsigned) and
	// Signature the armored signature (docs/trust.md).
	SignedBy  *string `json:"signed_by"`
	Key       string  `json:"key,omitempty"`
	Signature string  `json:"signature,omitempty"`
	// Yanked is the reason the version was yanked ("" in service).
	Yanked string `json:"yanked,omitempty"`
	// Definition is a prompt version's canonical JSON, the bytes its
	// sha256 digests and its signature covers ("" for skills).
	Definition string `json:"definition,omitempty"`
}

// History is a skill's or prompt's history: versions newest first, and
// the labels.
type History struct {
	ID       string           `json:"id"`
	Latest   int              `json:"latest"`
	Labels   map[string]int   `json:"labels"`
	Versions []HistoryVersion `json:"versions"`
}

// SkillVersions lists the kept versions of skill id.
func (p *Publisher) SkillVersions(ctx context.Context, id string) (History, error) {
	return p.versions(ctx, rules.FnSkillsVersions, "id", id)
}

// PromptVersions lists the kept versions of prompt name.
func (p *Publisher) PromptVersions(ctx context.Context, name string) (History, error) {
	return p.versions(ctx, rules.FnPromptsVersions, "name", name)
}

func (p *Publisher) versions(ctx context.Context, fid, key, id string) (History, error) {
	out, err := p.trigger(ctx, fid, map[string]any{key: id})
	if err != nil {
		return History{}, err
	}
	var v History
	if err := json.Unmarshal(out, &v); err != nil {
		return History{}, fmt.Errorf("%s: unexpected answer %s: %w", fid, out, err)
	}
	return v, nil
}

// IsNotFound reports whether err is the registry's answer that it does not
// hold what was asked: an unknown skill, prompt, version or label. Our
// registry says so with code NOT_FOUND (rules.CodeNotFound); the message
// text is the fallback for an upstream registry, which answers every
// failure with invocation_failed and knows no versions.
func IsNotFound(err error) bool {
	var ie *iii.InvocationError
	if !errors.As(err, &ie) {
		return false
	}
	if ie.Code == rules.CodeNotFound {
		return true
	}
	return ie.Code == iii.CodeInvocationFailed &&
		(strings.HasPrefix(ie.Message, "Skill not found: ") || strings.HasPrefix(ie.Message, "Prompt not found: "))
}
