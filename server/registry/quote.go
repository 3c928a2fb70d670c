package registry

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// rustDebugQuote renders s the way Rust's `format!("{:?}", s)` does for a
// str: wrapped in double quotes; `"` `\` NUL tab CR LF get backslash
// escapes; grapheme-extending characters (Mn, Me, Other_Grapheme_Extend)
// and non-printable characters (Cc, Cf, Cs, Co, Cn, Zl, Zp, and Zs other
// than the ASCII space) become `\u{hex}` with lowercase hex and no leading
// zeros; everything else, printable non-ASCII included, is written as is.
// For printable ASCII the result equals Go's %q.
func rustDebugQuote(s string) string {
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
			if isGraphemeExtend(r) || !unicode.IsPrint(r) {
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

// isGraphemeExtend reports the Unicode Grapheme_Extend property, which is
// Mn + Me + Other_Grapheme_Extend.
func isGraphemeExtend(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Other_Grapheme_Extend)
}
