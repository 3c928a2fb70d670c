package registry

import "github.com/iii-skills/skills/sdk-go/rules"

// Limits enforced by the validators. Every length is a byte count. The
// rules and their messages live in sdk-go/rules, shared with the Go
// publisher so that both refuse with the same text.
const (
	// MaxSegmentLen caps one '/'-separated segment of a skill id.
	MaxSegmentLen = rules.MaxSegmentBytes
	// MaxIDLen caps a whole skill id.
	MaxIDLen = rules.MaxIDBytes
	// MaxNameLen caps a prompt name.
	MaxNameLen = rules.MaxNameBytes
	// MaxSkillBytes caps a skill body; exactly MaxSkillBytes is accepted.
	MaxSkillBytes = rules.MaxSkillBytes
	// MaxDescriptionChars caps index descriptions, in Unicode scalar values.
	MaxDescriptionChars = 140
)

// ReservedFirstSegment may not start a skill id: it marks section URIs.
const ReservedFirstSegment = rules.ReservedFirstSegment

// ValidateIDSegment checks one '/'-separated segment of a skill id (or of a
// section URI path): non-empty, at most MaxSegmentLen bytes, only
// lowercase ASCII letters, digits, '-' and '_'.
func ValidateIDSegment(s string) error { return rules.ValidateIDSegment(s) }

// ValidateID checks a v0.2.2 skill id. The checks run in upstream order and
// the first failure wins: empty; leading or trailing '/'; longer than
// MaxIDLen bytes; each segment (ValidateIDSegment, reported with its 1-based
// index); first segment "fn" (reserved).
func ValidateID(id string) error { return rules.ValidateID(id) }

// ValidateSkillBody checks a skill body: non-empty (whitespace counts as
// content) and at most MaxSkillBytes bytes.
func ValidateSkillBody(body string) error { return rules.ValidateSkillBody(body) }

// ValidateSkillRegistration runs the skills::register checks in order:
// ValidateID, then ValidateSkillBody.
func ValidateSkillRegistration(id, body string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	return ValidateSkillBody(body)
}

// ValidateName checks a prompt name: non-empty, at most MaxNameLen bytes,
// only lowercase ASCII letters, digits, '-' and '_'.
func ValidateName(name string) error { return rules.ValidateName(name) }

// ValidatePromptDescription requires a description that is non-empty after
// trimming. The stored value stays untrimmed.
func ValidatePromptDescription(description string) error {
	return rules.ValidatePromptDescription(description)
}

// ValidatePromptFunctionID requires a function id that is non-empty after
// trimming. It is deliberately not checked against the hidden prefixes
// here; prompts::mcp-get does that at dispatch time.
func ValidatePromptFunctionID(functionID string) error {
	return rules.ValidatePromptFunctionID(functionID)
}

// ValidateArguments checks prompt arguments in list order: a name that is
// empty after trimming, then an exact (untrimmed) duplicate of an earlier
// name.
func ValidateArguments(args []PromptArgument) error {
	return rules.ValidateArgumentNames(argumentNames(args))
}

// ValidatePromptRegistration runs the prompts::register checks in order:
// ValidateName, ValidatePromptDescription, ValidatePromptFunctionID,
// ValidateArguments.
func ValidatePromptRegistration(name, description, functionID string, args []PromptArgument) error {
	return rules.ValidatePrompt(name, description, functionID, argumentNames(args))
}

func argumentNames(args []PromptArgument) []string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
	}
	return names
}
