// Package rules holds the skills registry's validation rules and their
// exact upstream (skills v0.2.2) messages. The registry worker
// (server/internal/registry) and the Go publisher (sdk-go/skills) both call it, so a
// publisher refuses locally with the very text the registry would answer.
// It depends on the standard library only.
//
// Msg* constants are complete messages. Fmt* constants are fmt formats;
// where upstream prints a value with Rust's `{x:?}`, the %s gets
// RustQuote(x).
package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits, in bytes.
const (
	// MaxSegmentBytes caps one '/'-separated segment of a skill id.
	MaxSegmentBytes = 64
	// MaxIDBytes caps a whole skill id.
	MaxIDBytes = 1024
	// MaxNameBytes caps a prompt name.
	MaxNameBytes = 64
	// MaxSkillBytes caps a skill body; exactly MaxSkillBytes is accepted.
	MaxSkillBytes = 262144
)

// ReservedFirstSegment may not start a skill id: it marks section URIs.
const ReservedFirstSegment = "fn"

// Validation messages.
const (
	MsgIDEmpty = "id must be non-empty"
	// FmtIDEdgeSlash: quoted id.
	FmtIDEdgeSlash = "id may not have a leading or trailing '/': %s"
	// FmtIDTooLong: byte length, limit, quoted id.
	FmtIDTooLong = "id too long (%d chars; max %d): %s"
	// FmtIDSegment: 1-based segment index, quoted id, segment error.
	FmtIDSegment = "invalid id (segment %d of %s): %s"
	// FmtIDReserved: quoted id.
	FmtIDReserved = `id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): %s`

	MsgSegmentEmpty = "segment must be non-empty"
	// FmtSegmentTooLong: byte length, limit, quoted segment.
	FmtSegmentTooLong = "segment too long (%d chars; max %d): %s"
	// FmtSegmentChars: quoted segment.
	FmtSegmentChars = "segment may only contain lowercase ASCII letters, digits, '-' and '_': %s"

	MsgNameEmpty = "name must be non-empty"
	// FmtNameTooLong: byte length, limit.
	FmtNameTooLong = "name too long (%d chars; max %d)"
	// FmtNameChars: quoted name.
	FmtNameChars = "name may only contain lowercase ASCII letters, digits, '-' and '_': %s"

	MsgArgumentNameEmpty = "argument name must be non-empty"
	// FmtArgumentDuplicate: the raw (untrimmed) argument name.
	FmtArgumentDuplicate = "duplicate argument name: %s"

	MsgSkillEmpty = "skill must be non-empty"
	// FmtSkillTooLarge: byte length, limit.
	FmtSkillTooLarge = "skill body too large (%d bytes; max %d)"

	MsgDescriptionEmpty = "description must be non-empty"
	MsgFunctionIDEmpty  = "function_id must be non-empty"

	// FmtSectionSegment: quoted segment, segment error.
	FmtSectionSegment = "invalid section URI segment %s: %s"
	// FmtHiddenSection: the function id a section URI resolved to.
	FmtHiddenSection = "Function '%s' is in an internal namespace and cannot back a skill resource"
	// FmtHiddenPrompt: the function id of a prompt's handler.
	FmtHiddenPrompt = "Prompt handler '%s' is in an internal namespace and cannot back a prompt"
)

// AlwaysHiddenPrefixes is the hard floor of internal namespaces: a function
// id starting with any of these can never back a section URI or a prompt,
// and MCP bridges never list it as a tool. "iii." carries a dot on purpose;
// a bare "state" (without "::") and "skill::" (singular) are not hidden.
var AlwaysHiddenPrefixes = []string{
	"engine::",
	"state::",
	"stream::",
	"iii.",
	"iii::",
	"mcp::",
	"a2a::",
	"skills::",
	"prompts::",
}

// hiddenPrefixes is a private copy so callers mutating the exported slice
// cannot weaken the guard.
var hiddenPrefixes = append([]string(nil), AlwaysHiddenPrefixes...)

// IsHidden reports whether functionID starts with one of the
// AlwaysHiddenPrefixes (a plain prefix test).
func IsHidden(functionID string) bool {
	for _, p := range hiddenPrefixes {
		if strings.HasPrefix(functionID, p) {
			return true
		}
	}
	return false
}

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
// section URI path): non-empty, at most MaxSegmentBytes, only lowercase
// ASCII letters, digits, '-' and '_'.
func ValidateIDSegment(s string) error {
	if s == "" {
		return errors.New(MsgSegmentEmpty)
	}
	if len(s) > MaxSegmentBytes {
		return fmt.Errorf(FmtSegmentTooLong, len(s), MaxSegmentBytes, RustQuote(s))
	}
	if !validChars(s) {
		return fmt.Errorf(FmtSegmentChars, RustQuote(s))
	}
	return nil
}

// ValidateID checks a skill id. The checks run in upstream order and the
// first failure wins: empty; leading or trailing '/'; longer than
// MaxIDBytes; each segment (ValidateIDSegment, reported with its 1-based
// index); first segment "fn" (reserved).
func ValidateID(id string) error {
	if id == "" {
		return errors.New(MsgIDEmpty)
	}
	if strings.HasPrefix(id, "/") || strings.HasSuffix(id, "/") {
		return fmt.Errorf(FmtIDEdgeSlash, RustQuote(id))
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf(FmtIDTooLong, len(id), MaxIDBytes, RustQuote(id))
	}
	i, rest, first := 0, id, ""
	for {
		i++
		seg, tail, more := strings.Cut(rest, "/")
		if i == 1 {
			first = seg
		}
		if err := ValidateIDSegment(seg); err != nil {
			return fmt.Errorf(FmtIDSegment, i, RustQuote(id), err.Error())
		}
		if !more {
			break
		}
		rest = tail
	}
	if first == ReservedFirstSegment {
		return fmt.Errorf(FmtIDReserved, RustQuote(id))
	}
	return nil
}

// ValidateSkillBody checks a skill body: non-empty (whitespace counts as
// content) and at most MaxSkillBytes.
func ValidateSkillBody(body string) error {
	if body == "" {
		return errors.New(MsgSkillEmpty)
	}
	if len(body) > MaxSkillBytes {
		return fmt.Errorf(FmtSkillTooLarge, len(body), MaxSkillBytes)
	}
	return nil
}

// ValidateName checks a prompt name: non-empty, at most MaxNameBytes, only
// lowercase ASCII letters, digits, '-' and '_'.
func ValidateName(name string) error {
	if name == "" {
		return errors.New(MsgNameEmpty)
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf(FmtNameTooLong, len(name), MaxNameBytes)
	}
	if !validChars(name) {
		return fmt.Errorf(FmtNameChars, RustQuote(name))
	}
	return nil
}

// ValidatePromptDescription requires a description that is non-empty after
// trimming (the stored value stays untrimmed).
func ValidatePromptDescription(description string) error {
	if strings.TrimSpace(description) == "" {
		return errors.New(MsgDescriptionEmpty)
	}
	return nil
}

// ValidatePromptFunctionID requires a function id that is non-empty after
// trimming. The hidden prefixes are not checked here: the registry does
// that when the prompt is rendered.
func ValidatePromptFunctionID(functionID string) error {
	if strings.TrimSpace(functionID) == "" {
		return errors.New(MsgFunctionIDEmpty)
	}
	return nil
}

// ValidateArgumentNames checks prompt argument names in list order: a name
// that is empty after trimming, then an exact (untrimmed) duplicate of an
// earlier name.
func ValidateArgumentNames(names []string) error {
	seen := make(map[string]struct{}, len(names))
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return errors.New(MsgArgumentNameEmpty)
		}
		if _, dup := seen[n]; dup {
			return fmt.Errorf(FmtArgumentDuplicate, n)
		}
		seen[n] = struct{}{}
	}
	return nil
}

// ValidatePrompt runs the prompts::register checks in the registry's order:
// ValidateName, ValidatePromptDescription, ValidatePromptFunctionID,
// ValidateArgumentNames.
func ValidatePrompt(name, description, functionID string, argumentNames []string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := ValidatePromptDescription(description); err != nil {
		return err
	}
	if err := ValidatePromptFunctionID(functionID); err != nil {
		return err
	}
	return ValidateArgumentNames(argumentNames)
}

// RustQuote renders s the way Rust's `format!("{:?}", s)` does for a str,
// which is how the registry quotes values in its messages: wrapped in
// double quotes; `"` `\` NUL tab CR LF get backslash escapes;
// grapheme-extending characters (Mn, Me, Other_Grapheme_Extend) and
// non-printable characters (Cc, Cf, Cs, Co, Cn, Zl, Zp, and Zs other than
// the ASCII space) become `\u{hex}` with lowercase hex and no leading
// zeros; everything else, printable non-ASCII included, is written as is.
// For printable ASCII the result equals Go's %q.
func RustQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case 0:
			b.WriteString(`\0`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\n':
			b.WriteString(`\n`)
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		default:
			if unicode.In(r, unicode.Mn, unicode.Me, unicode.Other_Grapheme_Extend) || !unicode.IsPrint(r) {
				b.WriteString(`\u{`)
				b.WriteString(strconv.FormatInt(int64(r), 16))
				b.WriteByte('}')
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CodeInvalidArguments is the error code the registry answers bad input
// with (a payload that does not decode, or a value these rules refuse),
// the code the iii engine gives its own built-ins' bad input. A caller that
// gets it knows the same call is refused again: publishers stop retrying
// on the code, and match the message text only as a fallback for
// registries that answer with a generic code.
const CodeInvalidArguments = "INVALID_ARGUMENTS"

// CodeNotFound is the error code the registry answers a read of something
// it does not hold with: an unknown skill, prompt, version or label, or a
// section URI whose function is not registered. The message is upstream's
// ("Skill not found: a/b"); only the code is ours (upstream answers
// invocation_failed), so callers decide by code and match the text only
// as a fallback for an upstream registry.
const CodeNotFound = "NOT_FOUND"

// CodeForbidden is the error code of a call the id's owner does not allow:
// a register or unregister of an id another publisher's connection holds.
// It can clear up: once that connection is gone (a publisher restarting
// gets a new one; the registry waits about 2 s for it) the next register
// takes the id over, so publishers retry it. It also answers a call a
// scoped token may never make (a directory download), and every refusal
// of the embedded engine (a scoped token calling state::* or publish, a
// write to a private scope, a reserved worker name), the code the real
// engine gives its RBAC denials.
const CodeForbidden = "FORBIDDEN"

// CodeOutOfScope is the error code of a call on an id (a skill, prompt,
// prompt handler function or bundle) outside the namespaces of the
// caller's scoped token. Unlike CodeForbidden it never clears up: the
// token's namespaces do not change while the publisher runs, so
// publishers give the item up at once, as for CodeInvalidArguments. The
// message is "forbidden: <kind> "<id>" is outside the namespaces of token
// …", the same text the refusal had under CodeForbidden.
const CodeOutOfScope = "OUT_OF_SCOPE"

// CodeUnsigned is the error code of a register the registry's signing
// policy refuses: no signature where signing.require_signed asks for one,
// or a signature by a key allowed_signers does not trust for the id's
// namespace (the message names the namespace and the key's fingerprint).
// It never clears up by retrying: sign with a trusted key.
const CodeUnsigned = "UNSIGNED"

// CodeBadSignature is the error code of a register whose signature does
// not verify over the content: malformed armor, another namespace than
// SignatureNamespace, an unsupported key type, or the wrong bytes signed.
const CodeBadSignature = "BAD_SIGNATURE"

// CodeCorrupt is the error code of a read of a stored version whose
// content no longer matches the sha256 recorded for it (a row changed
// outside the registry): it is refused, never served.
const CodeCorrupt = "CORRUPT"

// CodeLimitExceeded is the error code of a register the registry's caps
// on published content refuse (count, size per skill, total bytes); the
// message names the cap and the setting that raises it. It clears up only
// when content is unregistered or the operator raises the cap.
const CodeLimitExceeded = "LIMIT_EXCEEDED"

// SignatureNamespace is the SSHSIG namespace of signatures over registry
// content (ssh-keygen -Y sign -n iii-skills).
const SignatureNamespace = "iii-skills"
