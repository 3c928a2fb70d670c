package registry

import (
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
