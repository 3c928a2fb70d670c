package registry

import (
	"bytes"
	"encoding/json"
	"errors"
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
		key, ok := unquote(raw[i:end])
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

// unquote decodes a JSON string literal q (quotes included). Strings
// without escapes are copied as they are; the rest go through
// encoding/json, which also replaces invalid UTF-8 like serde_json does not
// need to (input that reached us over the wire is valid UTF-8).
func unquote(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	body := q[1 : len(q)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		for _, c := range body {
			if c < 0x20 {
				return "", false // control characters must be escaped
			}
		}
		return string(body), true
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", false
	}
	return s, true
}
