package skills

import (
	"fmt"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// ValidationError is a value the registry would refuse. Its message is the
// registry's own wording (docs/publishers.md, "Validation"), so a publisher
// fails locally with the text the registry would have answered.
type ValidationError struct {
	Message string
}

func (e *ValidationError) Error() string { return e.Message }

// invalid wraps a rules error (the registry's exact text) as a
// *ValidationError.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return &ValidationError{Message: err.Error()}
}

// ValidateSkillID checks a skill id (`a`, `a/b/c`) with the registry's rules
// and messages; the first failure wins.
func ValidateSkillID(id string) error { return invalid(rules.ValidateID(id)) }

// ValidateSkillBody checks a skill body: non-empty, at most rules.MaxSkillBytes.
func ValidateSkillBody(markdown string) error { return invalid(rules.ValidateSkillBody(markdown)) }

// SectionFunctionID checks a section path (`a/b/c`, the part of
// iii://fn/a/b/c after "fn/") and returns the function id behind it
// (`a::b::c`).
func SectionFunctionID(path string) (string, error) {
	segs := strings.Split(path, "/")
	for _, s := range segs {
		if err := rules.ValidateIDSegment(s); err != nil {
			return "", invalid(fmt.Errorf(rules.FmtSectionSegment, rules.RustQuote(s), err.Error()))
		}
	}
	fid := strings.Join(segs, "::")
	if rules.IsHidden(fid) {
		return "", invalid(fmt.Errorf(rules.FmtHiddenSection, fid))
	}
	return fid, nil
}

// ValidatePromptName checks a prompt name: non-empty, at most rules.MaxNameBytes,
// only lowercase ASCII letters, digits, '-' and '_'.
func ValidatePromptName(name string) error { return invalid(rules.ValidateName(name)) }

// ValidatePrompt checks a prompt as prompts::register does, in the
// registry's order (name, description, handler function id, argument
// names), then the rule that the handler may not live in an internal
// namespace. Prompt runs it before registering anything.
func ValidatePrompt(name, description, functionID string, args []PromptArgument) error {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
	}
	if err := rules.ValidatePrompt(name, description, functionID, names); err != nil {
		return invalid(err)
	}
	if rules.IsHidden(functionID) {
		return invalid(fmt.Errorf(rules.FmtHiddenPrompt, functionID))
	}
	return nil
}
