package registry

import (
	"errors"
	"fmt"
	"strings"
)

// SelectorSep separates a skill id from a version selector in a URI:
// iii://{id}@{version} or iii://{id}@{label}. Skill ids cannot contain it
// (ValidateID), so no existing URI changes meaning.
const SelectorSep = "@"

// SplitSelector splits a TargetSkill id into the id and the version
// selector after its last '@' (a version number or a label). ok is false
// when there is no '@'; an '@' with nothing after it is an error.
func SplitSelector(id string) (base, selector string, ok bool, err error) {
	i := strings.LastIndex(id, SelectorSep)
	if i < 0 {
		return id, "", false, nil
	}
	base, selector = id[:i], id[i+1:]
	if selector == "" {
		return "", "", false, fmt.Errorf("empty version selector in %q: expected iii://{id}@{version} or iii://{id}@{label}", SkillURI(id))
	}
	return base, selector, true, nil
}

// DigestSelectorPrefix starts a content pin: iii://{id}@sha256:<hex>.
const DigestSelectorPrefix = "sha256:"

// CheckSelector refuses a selector that cannot name anything: a content
// pin whose digest is not 64 lowercase hex digits. Numbers and labels are
// checked where they are looked up.
func CheckSelector(selector string) error {
	hexSum, ok := strings.CutPrefix(selector, DigestSelectorPrefix)
	if !ok {
		return nil
	}
	if msg := BadDigest(hexSum); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// BadDigest says what is wrong with the hex of a sha256:<hex> selector,
// or "" when it is 64 lowercase hex digits.
func BadDigest(hexSum string) string {
	shown := hexSum
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	if len(hexSum) != 64 {
		return fmt.Sprintf("invalid digest selector sha256:%s: expected 64 lowercase hex digits after sha256:, got %d characters", shown, len(hexSum))
	}
	for i, r := range hexSum {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return fmt.Sprintf("invalid digest selector sha256:%s: expected 64 lowercase hex digits, got %q at position %d", shown, r, i+1)
		}
	}
	return ""
}
