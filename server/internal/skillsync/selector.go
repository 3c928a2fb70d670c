package skillsync

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// SelectorKind says what a selector picks.
type SelectorKind int

const (
	// SelID picks one skill by id, at the version the registry serves (or
	// at the label of an @label selector).
	SelID SelectorKind = iota
	// SelPin picks one skill at a version: id@N, id@sha256:<hex>, id@label.
	SelPin
	// SelNamespace picks every skill whose id starts with the namespace
	// (which ends in '/').
	SelNamespace
	// SelLabel (@label) reads every other selected skill at that label.
	SelLabel
	// SelQuery picks the skills the registry's search ranks for words.
	SelQuery
)

// QueryPrefix marks a search query among selectors where they are
// written as strings (the lock's selector fields): "query:<words>".
const QueryPrefix = "query:"

// Selector is one parsed selector.
type Selector struct {
	Raw  string // as written (a query as QueryPrefix+words)
	Kind SelectorKind
	// ID is the skill id of SelID and SelPin; Namespace the prefix of
	// SelNamespace (ending in '/'); Label the label of SelLabel.
	ID, Namespace, Label string
	// Pin is what follows '@' in SelPin: "3", "sha256:<hex>" or a label.
	Pin string
	// Query is the words of SelQuery.
	Query string
}

// Explicit reports whether the selector names one skill: its choice beats
// a namespace's or a query's for the same id.
func (s Selector) Explicit() bool { return s.Kind == SelID || s.Kind == SelPin }

// ParseSelector reads one selector: an id, a namespace ending in '/',
// @label, id@N, id@sha256:<64 lowercase hex>, id@label, or
// QueryPrefix+words.
func ParseSelector(raw string) (Selector, error) {
	s := Selector{Raw: raw}
	switch {
	case strings.HasPrefix(raw, QueryPrefix):
		s.Kind, s.Query = SelQuery, strings.TrimSpace(strings.TrimPrefix(raw, QueryPrefix))
		if s.Query == "" {
			return s, fmt.Errorf("selector %q: an empty search query", raw)
		}
		return s, nil
	case raw == "":
		return s, fmt.Errorf("an empty selector; expected an id, a namespace ending in '/', @label, id@N or id@sha256:<hex>")
	case raw == "/":
		return s, fmt.Errorf("selector \"/\": give no selector at all to sync every skill the registry serves")
	case strings.HasPrefix(raw, "@"):
		s.Kind, s.Label = SelLabel, raw[1:]
		if err := checkLabel(s.Label); err != nil {
			return s, fmt.Errorf("selector %q: %w", raw, err)
		}
		return s, nil
	case strings.HasSuffix(raw, "/"):
		s.Kind, s.Namespace = SelNamespace, raw
		if err := rules.ValidateID(strings.TrimSuffix(raw, "/")); err != nil {
			return s, fmt.Errorf("selector %q is not a namespace (an id prefix ending in '/'): %v", raw, err)
		}
		return s, nil
	}
	id, pin, pinned := strings.Cut(raw, "@")
	if err := rules.ValidateID(id); err != nil {
		return s, fmt.Errorf("selector %q: %v (expected an id, a namespace ending in '/', @label, id@N or id@sha256:<hex>)", raw, err)
	}
	s.Kind, s.ID = SelID, id
	if !pinned {
		return s, nil
	}
	s.Kind, s.Pin = SelPin, pin
	if err := checkPin(pin); err != nil {
		return s, fmt.Errorf("selector %q: %w", raw, err)
	}
	return s, nil
}

// checkPin checks what follows '@' in id@pin.
func checkPin(pin string) error {
	if n, err := strconv.Atoi(pin); err == nil {
		if n < 1 || strconv.Itoa(n) != pin {
			return fmt.Errorf("version %q: expected a version number from 1", pin)
		}
		return nil
	}
	if sum, ok := strings.CutPrefix(pin, "sha256:"); ok {
		if !isHexDigest(sum) {
			return fmt.Errorf("digest %q: expected sha256: and 64 lowercase hex digits", clip(pin, 80))
		}
		return nil
	}
	if pin == "" {
		return fmt.Errorf("nothing after '@': expected a version number, sha256:<hex> or a label")
	}
	return checkLabel(pin)
}

// checkLabel applies the registry's label rules (docs/versions.md);
// "latest" reads the newest version.
func checkLabel(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("label %q: expected 1 to 64 characters", clip(name, 80))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_' || c == '.')) {
			return fmt.Errorf("label %q: expected lowercase letters, digits, '-', '_' and '.', starting with a letter or digit", clip(name, 80))
		}
	}
	if _, err := strconv.Atoi(name); err == nil {
		return fmt.Errorf("label %q is a number; a version is chosen with id@N", name)
	}
	return nil
}

// Selection is what a run syncs: its selectors (none: every skill the
// registry serves), at most one @label, and queries.
type Selection struct {
	Selectors []Selector
	// Label is the @label every selected skill is read at, unless it is
	// pinned ("" for the served version).
	Label string
	// QueryLimit is how many skills a query picks at most.
	QueryLimit int
}

// DefaultQueryLimit is how many skills a query picks unless told.
const DefaultQueryLimit = 10

// MaxQueryLimit is the registry's search limit.
const MaxQueryLimit = 100

// NewSelection parses selectors (and queries, as words) into a Selection.
func NewSelection(selectors, queries []string, limit int) (Selection, error) {
	sel := Selection{QueryLimit: limit}
	if sel.QueryLimit == 0 {
		sel.QueryLimit = DefaultQueryLimit
	}
	if sel.QueryLimit < 1 || sel.QueryLimit > MaxQueryLimit {
		return sel, fmt.Errorf("query limit %d: expected 1 to %d", limit, MaxQueryLimit)
	}
	raws := append([]string(nil), selectors...)
	for _, q := range queries {
		raws = append(raws, QueryPrefix+q)
	}
	seen := map[string]bool{}
	for _, raw := range raws {
		s, err := ParseSelector(raw)
		if err != nil {
			return sel, err
		}
		if seen[s.Raw] {
			continue
		}
		seen[s.Raw] = true
		if s.Kind == SelLabel {
			if sel.Label != "" {
				return sel, fmt.Errorf("two labels, @%s and @%s: a label applies to every selected skill, give one", sel.Label, s.Label)
			}
			sel.Label = s.Label
		}
		sel.Selectors = append(sel.Selectors, s)
	}
	return sel, nil
}

// Strings is the selection as the lock records it: every selector, sorted.
func (s Selection) Strings() []string {
	out := make([]string, 0, len(s.Selectors))
	for _, x := range s.Selectors {
		out = append(out, x.Raw)
	}
	sort.Strings(out)
	return out
}

// picksAll reports whether the selection names no skill, namespace or
// query: it then picks every skill the registry serves.
func (s Selection) picksAll() bool {
	for _, x := range s.Selectors {
		if x.Kind != SelLabel {
			return false
		}
	}
	return true
}
