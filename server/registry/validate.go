package registry

import (
	"errors"
	"fmt"
	"strings"
)

// Limits enforced by the validators. Every length is a byte count.
const (
	// MaxSegmentLen caps one '/'-separated segment of a skill id.
	MaxSegmentLen = 64
	// MaxIDLen caps a whole skill id.
	MaxIDLen = 1024
	// MaxNameLen caps a prompt name.
	MaxNameLen = 64
	// MaxSkillBytes caps a skill body; exactly MaxSkillBytes is accepted.
	MaxSkillBytes = 262144
	// MaxDescriptionChars caps index descriptions, in Unicode scalar values.
	MaxDescriptionChars = 140
)

// ReservedFirstSegment may not start a skill id: it marks section URIs.
const ReservedFirstSegment = "fn"

// validChars reports whether s only holds [a-z0-9_-].
func validChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ValidateIDSegment checks one '/'-separated segment of a skill id (or of a
// section URI path): non-empty, at most MaxSegmentLen bytes, only
// lowercase ASCII letters, digits, '-' and '_'.
func ValidateIDSegment(s string) error {
	if s == "" {
		return errors.New(MsgSegmentEmpty)
	}
	if len(s) > MaxSegmentLen {
		return fmt.Errorf(FmtSegmentTooLong, len(s), MaxSegmentLen, rustDebugQuote(s))
	}
	if !validChars(s) {
		return fmt.Errorf(FmtSegmentChars, rustDebugQuote(s))
	}
	return nil
}

// ValidateID checks a v0.2.2 skill id. The checks run in upstream order and
// the first failure wins: empty; leading or trailing '/'; longer than
// MaxIDLen bytes; each segment (ValidateIDSegment, reported with its 1-based
// index); first segment "fn" (reserved).
func ValidateID(id string) error {
	if id == "" {
		return errors.New(MsgIDEmpty)
	}
	if strings.HasPrefix(id, "/") || strings.HasSuffix(id, "/") {
		return fmt.Errorf(FmtIDEdgeSlash, rustDebugQuote(id))
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf(FmtIDTooLong, len(id), MaxIDLen, rustDebugQuote(id))
	}
	i, rest, first := 0, id, ""
	for {
		i++
		seg, tail, more := strings.Cut(rest, "/")
		if i == 1 {
			first = seg
		}
		if err := ValidateIDSegment(seg); err != nil {
			return fmt.Errorf(FmtIDSegment, i, rustDebugQuote(id), err.Error())
		}
		if !more {
			break
		}
		rest = tail
	}
	if first == ReservedFirstSegment {
		return fmt.Errorf(FmtIDReserved, rustDebugQuote(id))
	}
	return nil
}

// ValidateSkillBody checks a skill body: non-empty (whitespace counts as
// content) and at most MaxSkillBytes bytes.
func ValidateSkillBody(body string) error {
	if body == "" {
		return errors.New(MsgSkillEmpty)
	}
	if len(body) > MaxSkillBytes {
		return fmt.Errorf(FmtSkillTooLarge, len(body), MaxSkillBytes)
	}
	return nil
}

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
func ValidateName(name string) error {
	if name == "" {
		return errors.New(MsgNameEmpty)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf(FmtNameTooLong, len(name), MaxNameLen)
	}
	if !validChars(name) {
		return fmt.Errorf(FmtNameChars, rustDebugQuote(name))
	}
	return nil
}

// ValidatePromptDescription requires a description that is non-empty after
// trimming. The stored value stays untrimmed.
func ValidatePromptDescription(description string) error {
	if strings.TrimSpace(description) == "" {
		return errors.New(MsgDescriptionEmpty)
	}
	return nil
}

// ValidatePromptFunctionID requires a function id that is non-empty after
// trimming. It is deliberately not checked against the hidden prefixes
// here; prompts::mcp-get does that at dispatch time.
func ValidatePromptFunctionID(functionID string) error {
	if strings.TrimSpace(functionID) == "" {
		return errors.New(MsgFunctionIDEmpty)
	}
	return nil
}

// ValidateArguments checks prompt arguments in list order: a name that is
// empty after trimming, then an exact (untrimmed) duplicate of an earlier
// name.
func ValidateArguments(args []PromptArgument) error {
	seen := make(map[string]struct{}, len(args))
	for _, a := range args {
		if strings.TrimSpace(a.Name) == "" {
			return errors.New(MsgArgumentNameEmpty)
		}
		if _, dup := seen[a.Name]; dup {
			return fmt.Errorf(FmtArgumentDuplicate, a.Name)
		}
		seen[a.Name] = struct{}{}
	}
	return nil
}

// ValidatePromptRegistration runs the prompts::register checks in order:
// ValidateName, ValidatePromptDescription, ValidatePromptFunctionID,
// ValidateArguments.
func ValidatePromptRegistration(name, description, functionID string, args []PromptArgument) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := ValidatePromptDescription(description); err != nil {
		return err
	}
	if err := ValidatePromptFunctionID(functionID); err != nil {
		return err
	}
	return ValidateArguments(args)
}
