package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON walker for the hot paths (every payload and every stored row
// is decoded here once): it finds an object's members and the extent of
// each value without building anything, where encoding/json would check the
// whole input, then scan it again to decode. Values are handed out as
// sub-slices of the input. Malformed input gives an error, never a panic.

var (
	errEOF      = errors.New("EOF while parsing a value")
	errSyntax   = errors.New("expected value")
	errTrailing = errors.New("trailing characters")
	// errBadString: a string with a raw control character or a bad escape.
	errBadString = errors.New("control character (\\u0000-\\u001F) found while parsing a string")
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errEOF
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errEOF
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errEOF
	default:
		start := i
		for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		if i == start {
			return 0, errSyntax
		}
		return i, nil
	}
}

// eachMember calls fn with every member of the object raw (which starts
// with '{' after optional space), in order.
func eachMember(raw []byte, fn func(key string, val json.RawMessage) error) error {
	i := skipSpace(raw, 0) + 1 // past '{'
	for first := true; ; first = false {
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return errEOF
		}
		if raw[i] == '}' && first {
			i++
			break
		}
		if raw[i] != '"' {
			return errors.New("key must be a string")
		}
		end, err := skipString(raw, i)
		if err != nil {
			return err
		}
		key, ok := Unquote(raw[i:end])
		if !ok {
			return errors.New("invalid key")
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return errors.New("expected `:`")
		}
		i = skipSpace(raw, i+1)
		vend, err := skipValue(raw, i)
		if err != nil {
			return err
		}
		if err := fn(key, raw[i:vend:vend]); err != nil {
			return err
		}
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return errEOF
		}
		if raw[i] == '}' {
			i++
			break
		}
		if raw[i] != ',' {
			return errors.New("expected `,` or `}`")
		}
		i++
	}
	if skipSpace(raw, i) != len(raw) {
		return errTrailing
	}
	return nil
}

// Unquote decodes a JSON string literal q (quotes included). Strings
// without escapes are copied as they are; common escapes (a markdown body
// is full of \n) are decoded here in one pass; surrogate escapes and invalid
// UTF-8 go through encoding/json, which replaces invalid UTF-8 like
// serde_json does not need to (input that reached us over the wire is
// valid UTF-8).
func Unquote(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	body := q[1 : len(q)-1]
	if !utf8.Valid(body) {
		return unquoteSlow(q)
	}
	esc := bytes.IndexByte(body, '\\')
	if esc < 0 {
		for _, c := range body {
			if c < 0x20 {
				return "", false // control characters must be escaped
			}
		}
		return string(body), true
	}
	// A Builder hands its bytes over as the string: one allocation, sized
	// to the decoded length (decodedMax) rather than the quoted one: a
	// published body is kept for as long as the skill is registered, and
	// its newlines alone put a 2 KiB body's quoted form in the next
	// allocation size class (2304 bytes, +12 % of every body held).
	var out strings.Builder
	out.Grow(decodedMax(body, esc))
	start := 0
	for i := 0; i < len(body); {
		c := body[i]
		if c < 0x20 {
			return "", false
		}
		if c != '\\' {
			i++
			continue
		}
		out.Write(body[start:i])
		if i+1 >= len(body) {
			return "", false
		}
		switch e := body[i+1]; e {
		case '"', '\\', '/':
			out.WriteByte(e)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := hex4(body, i+2)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				return unquoteSlow(q) // pairs (and lone halves) as encoding/json decodes them
			}
			out.WriteRune(r)
			i += 4
		default:
			return "", false
		}
		i += 2
		start = i
	}
	out.Write(body[start:])
	return out.String(), true
}

// decodedMax bounds the decoded length of the JSON string contents body
// whose first backslash is at esc: every escape sequence is at least two
// bytes and decodes to fewer (a \uXXXX of six to at most three), so each
// takes at least one byte off. Exact for the common one-letter escapes.
func decodedMax(body []byte, esc int) int {
	n := len(body)
	for i := esc; i < len(body); {
		j := bytes.IndexByte(body[i:], '\\')
		if j < 0 {
			break
		}
		n--
		i += j + 2 // past the escaped character, so \\ counts once
	}
	return n
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unquoteSlow decodes q with encoding/json.
func unquoteSlow(q []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", false
	}
	return s, true
}
