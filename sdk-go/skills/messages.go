package skills

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The registry's limits, in bytes (docs/publishers.md, "Validation").
const (
	MaxIDBytes      = 1024
	MaxSegmentBytes = 64
	MaxNameBytes    = 64
	MaxSkillBytes   = 262144
)

// GaveUpMessage is logged, at warning level and exactly, when boot-time
// registration reaches its deadline.
const GaveUpMessage = "skills handshake gave up; install / start it and restart this worker"

// Exact message texts shared with the registry and the other publisher SDKs.
// Fmt* are fmt formats whose %s stand for rustQuote(x) where the registry
// prints Rust's {:?}.
const (
	msgIDEmpty        = "id must be non-empty"
	fmtIDEdgeSlash    = "id may not have a leading or trailing '/': %s"
	fmtIDTooLong      = "id too long (%d chars; max %d): %s"
	fmtIDSegment      = "invalid id (segment %d of %s): %s"
	fmtIDReserved     = `id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): %s`
	msgSegmentEmpty   = "segment must be non-empty"
	fmtSegmentTooLong = "segment too long (%d chars; max %d): %s"
	fmtSegmentChars   = "segment may only contain lowercase ASCII letters, digits, '-' and '_': %s"

	msgSkillEmpty    = "skill must be non-empty"
	fmtSkillTooLarge = "skill body too large (%d bytes; max %d)"

	fmtSectionSegment  = "invalid section URI segment %s: %s"
	fmtSectionInternal = "Function '%s' is in an internal namespace and cannot back a skill resource"

	msgNameEmpty         = "name must be non-empty"
	fmtNameTooLong       = "name too long (%d chars; max %d)"
	fmtNameChars         = "name may only contain lowercase ASCII letters, digits, '-' and '_': %s"
	msgDescriptionEmpty  = "description must be non-empty"
	msgFunctionIDEmpty   = "function_id must be non-empty"
	msgArgumentNameEmpty = "argument name must be non-empty"
	fmtArgumentDuplicate = "duplicate argument name: %s"
	fmtPromptInternal    = "Prompt handler '%s' is in an internal namespace and cannot back a prompt"

	// Prompt arguments at call time; %s are jsonQuote'd names and the JSON
	// text of the received value.
	fmtArgPrefix     = "prompt %s: "
	fmtArgMissing    = "missing required argument %s"
	fmtArgType       = "argument %s must be %s, got %s"
	fmtArgRange      = "argument %s must be %s between %s and %s, got %s"
	fmtArgsNotObject = "arguments must be an object, got %s"
)

// Type words of prompt-argument messages.
const (
	wordString  = "a string"
	wordInteger = "an integer"
	wordNumber  = "a number"
	wordBoolean = "a boolean"
)

// internalPrefixes is the registry's hard floor: a function id starting with
// one of these can back neither a section URI nor a prompt.
var internalPrefixes = []string{
	"engine::", "state::", "stream::", "iii.", "iii::", "mcp::", "a2a::", "skills::", "prompts::",
}

// isInternal reports whether the registry refuses to call functionID.
func isInternal(functionID string) bool {
	for _, p := range internalPrefixes {
		if strings.HasPrefix(functionID, p) {
			return true
		}
	}
	return false
}

// rustQuote renders s like Rust's format!("{:?}", s), which is how the
// registry quotes values in its messages. For printable ASCII it equals %q.
func rustQuote(s string) string {
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

// jsonQuote is the JSON text of s (like JavaScript's JSON.stringify), which
// the prompt-argument messages use for names.
func jsonQuote(s string) string {
	return jsonText(s)
}

// jsonText encodes v as compact JSON without HTML escaping.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// rawText is the compact JSON text of a received value.
func rawText(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
