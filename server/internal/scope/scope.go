// Package scope is what the engine, the registry worker and the Skills
// Protocol runtime share about scoped engine tokens: the caller identity
// our engine stamps into invocation metadata, the namespace rule an id of
// a scoped token must follow, and the refusal when it does not. It sits
// below all three, so the worker and the runtime do not import the engine.
package scope

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// CallerKey is the invocation metadata key our engine stamps on every
// invocation it delivers (see Caller). A key of that name sent by a client
// is replaced, so a function can trust it on our engine.
const CallerKey = "iii_caller"

// Caller is the value of CallerKey: the calling connection ("" when the
// engine itself calls: trigger fires), the name of its scoped token (""
// for full access), the token's namespaces and the namespaces of other
// tokens nested in them (see Nested).
type Caller struct {
	WorkerID   string   `json:"worker_id"`
	Token      string   `json:"token"`
	Namespaces []string `json:"namespaces,omitempty"`
	// Nested are the namespaces of other tokens that extend one of
	// Namespaces past a '-' or '_' (acme-corp beside acme): prompt names
	// under them belong to those tokens (NamespacedPrompt).
	Nested []string `json:"nested,omitempty"`
}

// Scoped reports whether the caller holds a scoped token.
func (c Caller) Scoped() bool { return c.Token != "" }

// Kinds of ids a scoped token's namespaces cover, each with its own
// boundary: skill ids (and bundles, by their iii id) split at '/',
// prompt names at '-' or '_'.
const (
	KindSkill  = "skill"
	KindBundle = "bundle"
	KindPrompt = "prompt"
)

// Covers reports whether c may use id of kind (KindSkill, KindBundle,
// KindPrompt): always for a full-access caller, else by the namespace
// rule of that kind.
func (c Caller) Covers(kind, id string) bool {
	if !c.Scoped() {
		return true
	}
	if kind == KindPrompt {
		return NamespacedPrompt(id, c.Namespaces, c.Nested)
	}
	return NamespacedSkill(id, c.Namespaces)
}

// CoversFunction reports whether c may register function (or trigger
// type) id, or point a prompt at it: NamespacedFunction, with the prompt
// rule (Nested included) for the publishers' "prompt::<name>" handlers.
func (c Caller) CoversFunction(id string) bool {
	if !c.Scoped() {
		return true
	}
	if name, ok := strings.CutPrefix(id, "prompt::"); ok && !strings.Contains(name, "::") &&
		NamespacedPrompt(name, c.Namespaces, nil) && !NamespacedPrompt(name, c.Namespaces, c.Nested) {
		return false // the handler of another token's prompt
	}
	return NamespacedFunction(id, c.Namespaces)
}

// OutOfScope refuses id of kind what (KindSkill, KindBundle, KindPrompt)
// when c holds a scoped token whose namespaces do not cover it (Covers);
// nil when c may use it.
func (c Caller) OutOfScope(what, id string) error {
	if c.Covers(what, id) {
		return nil
	}
	return c.OutOfScopeError(fmt.Sprintf("%s %q is outside the namespaces of token %q (%s)", what, id, c.Token, strings.Join(c.Namespaces, ", ")))
}

// OutOfScopeError is a rules.CodeOutOfScope invocation error "forbidden: <why>",
// why saying which id lies outside which namespaces.
func (c Caller) OutOfScopeError(why string) error {
	return iii.NewInvocationError(rules.CodeOutOfScope, "forbidden: "+why)
}

// Forbidden is a rules.CodeForbidden invocation error "forbidden: <why>".
func (c Caller) Forbidden(why string) error {
	return iii.NewInvocationError(rules.CodeForbidden, "forbidden: "+why)
}

// FromMetadata reads the stamped caller of an invocation's metadata (zero
// when there is none).
func FromMetadata(meta json.RawMessage) Caller {
	var c Caller
	var m map[string]json.RawMessage
	if len(meta) > 0 && json.Unmarshal(meta, &m) == nil && m[CallerKey] != nil {
		_ = json.Unmarshal(m[CallerKey], &c)
	}
	return c
}

// Stamped knows whether the engine stamps the caller (ours does; the skills
// binary finds out with a probe once its functions are registered, which
// is after other clients may already call them when it dials an engine of
// its own). The zero value is "not known yet".
type Stamped struct{ state atomic.Int32 }

const (
	stampUnknown int32 = iota
	stampTrusted
	stampAbsent
)

// Set records what the probe found.
func (s *Stamped) Set(stamped bool) {
	if stamped {
		s.state.Store(stampTrusted)
	} else {
		s.state.Store(stampAbsent)
	}
}

// Trusted reports whether the engine is known to stamp callers.
func (s *Stamped) Trusted() bool { return s.state.Load() == stampTrusted }

// Caller is the stamped caller of the invocation behind ctx; ok false
// when there is none to go by. On an engine known to stamp, the whole
// stamp. Before the probe has answered, only a stamp that names a scoped
// token, without its worker id: on our engine it is the caller's real
// scope, and anywhere else a client that forges one only bounds itself, so
// the bound holds from the first call. On an engine known not to stamp,
// nothing (scoped tokens exist only on ours).
func (s *Stamped) Caller(ctx context.Context) (c Caller, ok bool) {
	if s.state.Load() == stampAbsent {
		return Caller{}, false
	}
	meta, _ := iii.MetadataFromContext(ctx)
	return s.callerOf(meta)
}

// callerOf is Caller for an invocation's metadata.
func (s *Stamped) callerOf(meta json.RawMessage) (c Caller, ok bool) {
	state := s.state.Load()
	if state == stampAbsent {
		return Caller{}, false
	}
	c = FromMetadata(meta)
	switch {
	case state == stampTrusted:
		return c, true
	case c.Scoped():
		return Caller{Token: c.Token, Namespaces: c.Namespaces, Nested: c.Nested}, true
	}
	return Caller{}, false
}

// NamespacedSkill reports whether skill id (or a bundle's iii id) lies in
// one of namespaces: the id is the namespace itself or starts with it and
// a '/'. `acme` covers acme and acme/crm, not acme-corp/x or acmecorp:
// segments are whole, so a namespace never reaches into another that
// only shares its first letters.
func NamespacedSkill(id string, namespaces []string) bool {
	for _, ns := range namespaces {
		if rest, ok := strings.CutPrefix(id, ns); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// NamespacedPrompt reports whether prompt name lies in one of namespaces:
// the name is the namespace itself or starts with it and a '-' or '_'
// (prompt names hold nothing else to split at), unless a longer
// namespace of another token (nested, see Nested) covers it too: the
// longest namespace wins, so `acme` covers acme-review but not
// acme-corp-review when another token holds acme-corp.
func NamespacedPrompt(name string, namespaces, nested []string) bool {
	best := longestPromptNamespace(name, namespaces)
	return best >= 0 && longestPromptNamespace(name, nested) <= best
}

// longestPromptNamespace is the length of the longest of namespaces that
// covers prompt name, -1 when none does.
func longestPromptNamespace(name string, namespaces []string) int {
	best := -1
	for _, ns := range namespaces {
		rest, ok := strings.CutPrefix(name, ns)
		if ok && (rest == "" || rest[0] == '-' || rest[0] == '_') && len(ns) > best {
			best = len(ns)
		}
	}
	return best
}

// Nested lists, for the token holding own, the namespaces of other tokens
// (others) that extend one of own past a '-' or '_': acme-corp (or
// acme_corp, acme-corp-eu) beside acme. Prompt names split at those
// characters, so without this a token holding acme would also cover
// every prompt of acme-corp; the engine stamps the list with the caller.
func Nested(own []string, others [][]string) []string {
	var out []string
	for _, list := range others {
		for _, o := range list {
			for _, ns := range own {
				if rest, ok := strings.CutPrefix(o, ns); ok && rest != "" && (rest[0] == '-' || rest[0] == '_') && !slices.Contains(out, o) {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// PublisherPrivatePrefix is where the publisher SDKs put their internal
// functions and trigger types (change subscriptions, watchers:
// "iii-skills::<random>::…"); a scoped token may register there too, so
// publishers work with their defaults.
const PublisherPrivatePrefix = "iii-skills::"

// NamespacedFunction reports whether a scoped token with namespaces may
// register function (or trigger type) id: "<ns>::…", the publishers'
// default prompt handler "prompt::<prompt name in ns>", or the publishers'
// private "iii-skills::…".
func NamespacedFunction(id string, namespaces []string) bool {
	if strings.HasPrefix(id, PublisherPrivatePrefix) && len(id) > len(PublisherPrivatePrefix) {
		return true
	}
	if name, ok := strings.CutPrefix(id, "prompt::"); ok && !strings.Contains(name, "::") && NamespacedPrompt(name, namespaces, nil) {
		return true
	}
	first, _, _ := strings.Cut(id, "::")
	for _, ns := range namespaces {
		if first == ns {
			return true
		}
	}
	return false
}
