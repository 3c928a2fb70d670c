package skills

import (
	"fmt"
	"strings"
)

// ValidationError is a value the registry would refuse. Its message is the
// registry's own wording (docs/publishers.md, "Validation"), so a publisher
// fails locally with the text the registry would have answered.
type ValidationError struct {
	Message string
}

func (e *ValidationError) Error() string { return e.Message }

func invalid(format string, args ...any) error {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

func validChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// segmentProblem is the registry's rule for one '/'-separated segment, or "".
func segmentProblem(s string) string {
	switch {
	case s == "":
		return msgSegmentEmpty
	case len(s) > MaxSegmentBytes:
		return fmt.Sprintf(fmtSegmentTooLong, len(s), MaxSegmentBytes, rustQuote(s))
	case !validChars(s):
		return fmt.Sprintf(fmtSegmentChars, rustQuote(s))
	}
	return ""
}

// ValidateSkillID checks a skill id (`a`, `a/b/c`) with the registry's rules
// and messages; the first failure wins.
func ValidateSkillID(id string) error {
	if id == "" {
		return invalid("%s", msgIDEmpty)
	}
	if strings.HasPrefix(id, "/") || strings.HasSuffix(id, "/") {
		return invalid(fmtIDEdgeSlash, rustQuote(id))
	}
	if len(id) > MaxIDBytes {
		return invalid(fmtIDTooLong, len(id), MaxIDBytes, rustQuote(id))
	}
	segs := strings.Split(id, "/")
	for i, s := range segs {
		if p := segmentProblem(s); p != "" {
			return invalid(fmtIDSegment, i+1, rustQuote(id), p)
		}
	}
	if segs[0] == "fn" {
		return invalid(fmtIDReserved, rustQuote(id))
	}
	return nil
}

// ValidateSkillBody checks a skill body: non-empty, at most MaxSkillBytes.
func ValidateSkillBody(markdown string) error {
	if markdown == "" {
		return invalid("%s", msgSkillEmpty)
	}
	if len(markdown) > MaxSkillBytes {
		return invalid(fmtSkillTooLarge, len(markdown), MaxSkillBytes)
	}
	return nil
}

// SectionFunctionID checks a section path (`a/b/c`, the part of
// iii://fn/a/b/c after "fn/") and returns the function id behind it
// (`a::b::c`).
func SectionFunctionID(path string) (string, error) {
	segs := strings.Split(path, "/")
	for _, s := range segs {
		if p := segmentProblem(s); p != "" {
			return "", invalid(fmtSectionSegment, rustQuote(s), p)
		}
	}
	fid := strings.Join(segs, "::")
	if isInternal(fid) {
		return "", invalid(fmtSectionInternal, fid)
	}
	return fid, nil
}

// ValidatePromptName checks a prompt name: non-empty, at most MaxNameBytes,
// only lowercase ASCII letters, digits, '-' and '_'.
func ValidatePromptName(name string) error {
	switch {
	case name == "":
		return invalid("%s", msgNameEmpty)
	case len(name) > MaxNameBytes:
		return invalid(fmtNameTooLong, len(name), MaxNameBytes)
	case !validChars(name):
		return invalid(fmtNameChars, rustQuote(name))
	}
	return nil
}

// validatePrompt runs the prompts::register checks in the registry's order,
// then the rule that the handler may not live in an internal namespace.
func validatePrompt(name, description, functionID string, args []Argument) error {
	if err := ValidatePromptName(name); err != nil {
		return err
	}
	if strings.TrimSpace(description) == "" {
		return invalid("%s", msgDescriptionEmpty)
	}
	if strings.TrimSpace(functionID) == "" {
		return invalid("%s", msgFunctionIDEmpty)
	}
	seen := make(map[string]bool, len(args))
	for _, a := range args {
		if strings.TrimSpace(a.Name) == "" {
			return invalid("%s", msgArgumentNameEmpty)
		}
		if seen[a.Name] {
			return invalid(fmtArgumentDuplicate, a.Name)
		}
		seen[a.Name] = true
	}
	if isInternal(functionID) {
		return invalid(fmtPromptInternal, functionID)
	}
	return nil
}
