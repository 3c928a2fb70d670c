package rules

import (
	"strconv"
	"unicode/utf8"
)

// The canonical JSON of a prompt: the bytes a prompt's signature covers and
// its version's sha256 digests (docs/trust.md). It is JSON as RFC 8785
// (JCS) serializes it, which for the values a prompt holds (objects,
// arrays, strings, booleans; no numbers) means:
//
//   - object keys in sorted order, no whitespace anywhere;
//   - strings escaped as ECMAScript's JSON.stringify does: `\"`, `\\`,
//     `\b`, `\f`, `\n`, `\r`, `\t`, other characters below U+0020 as
//     `\u00xx` (lowercase hex), everything else written as UTF-8 as is
//     (no `\u` for non-ASCII, `<`, `>` or `&`);
//   - exactly these fields:
//
//     {"arguments":[{"description":"…","name":"…","required":false},…],
//     "description":"…","function_id":"…"}
//
//     arguments in the order registered (none: []); an argument's
//     "description" only when it has one (null or absent: left out; "" is
//     kept), "required" always (absent: false).
//
// Publishers in other languages produce the same bytes: Node
// `JSON.stringify` of the object built with its keys in that order, Python
// `json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`.

// PromptArg is one argument of a prompt as the canonical JSON holds it.
type PromptArg struct {
	Name        string
	Description *string
	Required    bool
}

// CanonicalPrompt returns the canonical JSON of a prompt's definition.
func CanonicalPrompt(description, functionID string, args []PromptArg) []byte {
	n := len(description) + len(functionID) + 64
	for _, a := range args {
		n += len(a.Name) + 48
		if a.Description != nil {
			n += len(*a.Description) + 16
		}
	}
	b := make([]byte, 0, n)
	b = append(b, `{"arguments":[`...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if a.Description != nil {
			b = append(b, `"description":`...)
			b = AppendCanonicalString(b, *a.Description)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = AppendCanonicalString(b, a.Name)
		b = append(b, `,"required":`...)
		b = strconv.AppendBool(b, a.Required)
		b = append(b, '}')
	}
	b = append(b, `],"description":`...)
	b = AppendCanonicalString(b, description)
	b = append(b, `,"function_id":`...)
	b = AppendCanonicalString(b, functionID)
	return append(b, '}')
}

// AppendCanonicalString appends s as an RFC 8785 JSON string. Bytes that
// are not UTF-8 are written as U+FFFD (a JSON decoder reads them so).
func AppendCanonicalString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
		i++
	}
	return append(b, '"')
}
