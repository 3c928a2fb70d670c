package registry

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// nextLine returns the first line of s and the rest after it, the way Rust's
// str::lines() splits: on '\n', dropping a '\r' right before it. ok is false
// once s is exhausted (a trailing '\n' does not start an empty last line).
func nextLine(s string) (line, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, "", true
	}
	line = s[:i]
	line = strings.TrimSuffix(line, "\r")
	return line, s[i+1:], true
}

// ExtractTitle returns the first H1 of md: the first line whose
// left-trimmed form starts with "# " (hash and space), with the rest of the
// line trimmed. "## x", "#x" and a bare "#" do not count; code fences are
// not recognised. A line "#  " yields ("", true).
func ExtractTitle(md string) (string, bool) {
	for line, rest, ok := nextLine(md); ok; line, rest, ok = nextLine(rest) {
		if t, found := strings.CutPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), "# "); found {
			return strings.TrimSpace(t), true
		}
	}
	return "", false
}

// ExtractDescription returns the first paragraph of md that is not a
// heading (see ExtractParagraph), truncated with TruncateChars(…,
// MaxDescriptionChars). ok is false when nothing was collected.
func ExtractDescription(md string) (string, bool) {
	// More than 140 runes collected means the rest of the paragraph cannot
	// change the truncated result.
	p, ok := paragraph(md, utf8.UTFMax*MaxDescriptionChars)
	if !ok {
		return "", false
	}
	return TruncateChars(p, MaxDescriptionChars), true
}

// ExtractParagraph returns the whole first paragraph of md that is not a
// heading, untruncated: the iii-directory index and the skill catalog keep
// it whole. Lines are trimmed; a blank line or a line starting with '#'
// ends the paragraph once text has been collected and is skipped before
// that; every other line is joined to the paragraph with one space. ok is
// false when nothing was collected.
func ExtractParagraph(md string) (string, bool) {
	return paragraph(md, -1)
}

// paragraph collects the first paragraph, stopping early once more than
// limit bytes are collected (limit < 0: no limit). A one-line paragraph is
// returned as a substring of md, without a copy.
func paragraph(md string, limit int) (string, bool) {
	var first string
	var b strings.Builder
	for line, rest, ok := nextLine(md); ok; line, rest, ok = nextLine(rest) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			if first != "" {
				break
			}
			continue
		}
		if first == "" {
			first = t
			if limit >= 0 && len(first) > limit {
				break
			}
			continue
		}
		if b.Len() == 0 {
			b.WriteString(first)
		}
		b.WriteByte(' ')
		b.WriteString(t)
		if limit >= 0 && b.Len() > limit {
			break
		}
	}
	if first == "" {
		return "", false
	}
	if b.Len() == 0 {
		return first, true
	}
	return b.String(), true
}

// TruncateChars keeps the first n Unicode scalar values of s and appends
// ASCII "..." when s holds more than n of them; otherwise s is returned
// unchanged. Nothing is trimmed before the mark.
func TruncateChars(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n { // at most n bytes means at most n runes
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + IndexTruncationMark
		}
		count++
	}
	return s
}
