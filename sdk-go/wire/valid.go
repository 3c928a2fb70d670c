package wire

import "encoding/binary"

// maxDepth is how deeply arrays and objects may nest; encoding/json refuses
// deeper input with the same limit.
const maxDepth = 10000

// Valid reports whether data is one valid JSON value (with optional
// surrounding whitespace), exactly as json.Valid does, at several times its
// speed: strings, most of every payload, are skipped over a byte at a time
// without encoding/json's per-byte state machine. Like json.Valid it checks
// the grammar, not UTF-8.
func Valid(data []byte) bool {
	v := validator{data: data}
	i := v.value(skipSpace(data, 0), 0)
	return i >= 0 && skipSpace(data, i) == len(data)
}

type validator struct{ data []byte }

// afterItem reads what follows an object member or array element at i:
// a comma (done false, i after it and its spaces), the closing byte (done
// true, i after it) or anything else (done true, -1).
func afterItem(d []byte, i int, closing byte) (int, bool) {
	i = skipSpace(d, i)
	switch {
	case i >= len(d):
		return -1, true
	case d[i] == ',':
		return skipSpace(d, i+1), false
	case d[i] == closing:
		return i + 1, true
	}
	return -1, true
}

// value checks the value at i and returns the index after it, or -1.
func (v *validator) value(i, depth int) int {
	d := v.data
	if i >= len(d) {
		return -1
	}
	switch c := d[i]; {
	case c == '"':
		return v.str(i)
	case c == '{':
		if depth++; depth > maxDepth {
			return -1
		}
		i = skipSpace(d, i+1)
		if i < len(d) && d[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(d) || d[i] != '"' {
				return -1
			}
			if i = v.str(i); i < 0 {
				return -1
			}
			i = skipSpace(d, i)
			if i >= len(d) || d[i] != ':' {
				return -1
			}
			if i = v.value(skipSpace(d, i+1), depth); i < 0 {
				return -1
			}
			var done bool
			if i, done = afterItem(d, i, '}'); done {
				return i
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return -1
		}
		i = skipSpace(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1
		}
		for {
			if i = v.value(i, depth); i < 0 {
				return -1
			}
			var done bool
			if i, done = afterItem(d, i, ']'); done {
				return i
			}
		}
	case c == '-' || ('0' <= c && c <= '9'):
		return v.number(i)
	case c == 't':
		return v.literal(i, "true")
	case c == 'f':
		return v.literal(i, "false")
	case c == 'n':
		return v.literal(i, "null")
	}
	return -1
}

func (v *validator) literal(i int, lit string) int {
	if len(v.data)-i < len(lit) || string(v.data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// str checks the string starting at the quote at i.
func (v *validator) str(i int) int {
	d := v.data
	for i++; i < len(d); i++ {
		// Skip eight plain bytes at a time (no control character, quote
		// or backslash among them): most of a payload is string content.
		for i+8 <= len(d) {
			w := binary.LittleEndian.Uint64(d[i:])
			if hasLess(w, 0x20)|hasZero(w^(ones*'"'))|hasZero(w^(ones*'\\')) != 0 {
				break
			}
			i += 8
		}
		if i >= len(d) {
			return -1
		}
		c := d[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// A backslash: one of \" \\ \/ \b \f \n \r \t or \u and 4 hex digits.
		i++
		if i >= len(d) {
			return -1
		}
		switch d[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(d) {
				return -1
			}
			for _, h := range d[i+1 : i+5] {
				if !isHex(h) {
					return -1
				}
			}
			i += 4
		default:
			return -1
		}
	}
	return -1
}

// HasSpace reports whether the valid JSON value v has whitespace outside
// its strings, i.e. whether compacting it would change it. Strings are
// skipped eight bytes at a time: the spaces of a markdown body do not count.
func HasSpace(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case ' ', '\t', '\r', '\n':
			return true
		case '"':
			for i++; i < len(v); i++ {
				for i+8 <= len(v) {
					w := binary.LittleEndian.Uint64(v[i:])
					if hasZero(w^(ones*'"'))|hasZero(w^(ones*'\\')) != 0 {
						break
					}
					i += 8
				}
				if i >= len(v) {
					return false
				}
				if v[i] == '\\' {
					i++
				} else if v[i] == '"' {
					break
				}
			}
		}
	}
	return false
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasZero is non-zero when a byte of x is zero; hasLess when a byte of x is
// below n (n <= 128). Both are exact about whether, not which.
func hasZero(x uint64) uint64           { return (x - ones) & ^x & highs }
func hasLess(x uint64, n uint64) uint64 { return (x - ones*n) & ^x & highs }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func (v *validator) number(i int) int {
	d := v.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		i = digits(d, i)
	default:
		return -1
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}
