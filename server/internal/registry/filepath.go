package registry

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// File paths in URIs. A file of a skill is addressed as
// skill://<skill path>/<file> (the MCP Skills extension) and as
// iii://<skill>/<file>. Its name may hold any character a file system
// allows: spaces, '%', '#', '?', non-ASCII letters. Every URI the server
// produces carries the path percent-encoded (RFC 3986: unreserved
// characters and '/' kept, every other byte %XX), byte for byte what
// agentskills-mcp-server, the MCP Skills extension's reference server,
// publishes (Python's urllib.parse.quote(path, safe="/")). Every read
// decodes the path exactly once (DecodeFilePath), so a URI encoded twice
// names a file whose name holds "%25…", which is looked up as such.

// SkillScheme prefixes every skill:// URI.
const SkillScheme = "skill://"

// Limits of a decoded file path: no file system in use allows a name
// (one segment) over 255 bytes; a path of several is capped at 4096
// bytes (Linux PATH_MAX).
const (
	MaxFileNameBytes = 255
	MaxFilePathBytes = 4096
)

// EscapePath percent-encodes p for a URI: ALPHA, DIGIT, '-', '.', '_',
// '~' and '/' are kept, every other byte is %XX (uppercase hex).
func EscapePath(p string) string { return escape(p, keptInPath) }

func escape(p string, kept func(byte) bool) string {
	n := 0
	for i := 0; i < len(p); i++ {
		if !kept(p[i]) {
			n++
		}
	}
	if n == 0 {
		return p
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(p)+2*n)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if kept(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}

func keptInPath(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '/'
}

// keptInSkillPath also keeps '@' and ':' (RFC 3986 allows both in a
// path): a skill path is a catalog id, and its only other characters are
// those of a version selector (skill://<id>@<version>/SKILL.md).
func keptInSkillPath(c byte) bool { return keptInPath(c) || c == '@' || c == ':' }

// SkillFileURI is the URI of file (a '/'-separated path relative to the
// skill root, as the catalog lists it) of the skill at skillPath.
func SkillFileURI(skillPath, file string) string {
	return SkillScheme + escape(skillPath, keptInSkillPath) + "/" + EscapePath(file)
}

// PathError says why a path in a URI names no file. Its message names the
// URI (or path) as given, with the characters a message cannot show
// escaped.
type PathError struct {
	Where  string // the URI or path as the client gave it
	Reason string
}

func (e *PathError) Error() string { return Quoted(e.Where) + ": " + e.Reason }

// Quoted shows a URI or path in a message: clipped to 200 bytes, with
// control characters, NUL and bytes that are not UTF-8 escaped as %XX, so
// a message about a hostile name stays one readable line.
func Quoted(s string) string {
	const max = 200
	clipped := ""
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		clipped = fmt.Sprintf("… (%d bytes)", len(s))
		s = s[:cut]
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || r < 0x20 || r == 0x7f {
			fmt.Fprintf(&b, "%%%02X", s[i])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String() + clipped
}

// DecodeFilePath decodes the percent-encoding of a path taken from a URI,
// once, and checks that the result can name a file: every "%XX" becomes
// its byte (a '%' not followed by two hex digits stays a '%', as
// browsers and Python's unquote leave it); the result must be UTF-8
// without NUL or control characters, hold no empty, "." or ".." segment,
// and stay within MaxFileNameBytes per segment and MaxFilePathBytes in
// all. where is the URI reported in errors.
func DecodeFilePath(p, where string) (string, error) {
	if strings.IndexByte(p, '%') >= 0 {
		p = percentDecode(p)
	}
	fail := func(format string, args ...any) (string, error) {
		return "", &PathError{Where: where, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case p == "":
		return fail("the path names no file")
	case len(p) > MaxFilePathBytes:
		return fail("the path is %d bytes; a file path is at most %d", len(p), MaxFilePathBytes)
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return fail("the path has an empty segment (a leading, trailing or doubled '/')")
		case seg == "." || seg == "..":
			return fail("the path has a %q segment: paths stay inside the skill", seg)
		}
		if why := FileNameProblem(seg); why != "" {
			return fail("%s", why)
		}
	}
	return p, nil
}

// FileNameProblem says why name (one path segment) cannot be a served
// file's name, or "" when it can: a name must be UTF-8 (JSON, in which
// every surface lists files, carries nothing else) without NUL or control
// characters, and at most MaxFileNameBytes. Skills folders leave such
// files out with a diagnostic, so nothing is listed that cannot be read.
func FileNameProblem(name string) string {
	switch {
	case !utf8.ValidString(name):
		return fmt.Sprintf("the file name %s is not UTF-8: no file is served under such a name", Quoted(name))
	case strings.IndexByte(name, 0) >= 0:
		return "a file name cannot hold a NUL byte"
	case len(name) > MaxFileNameBytes:
		return fmt.Sprintf("a file name is %d bytes; names are at most %d", len(name), MaxFileNameBytes)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("the file name %s holds the control character %U: no file is served under such a name", Quoted(name), r)
		}
	}
	return ""
}

// percentDecode replaces every %XX with its byte and leaves any other '%'.
func percentDecode(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// ParseSkillURI returns the decoded path of a skill:// URI (the skill
// path and the file, '/'-separated; DecodeFilePath's rules).
func ParseSkillURI(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, SkillScheme)
	if !ok {
		return "", &PathError{Where: uri, Reason: "expected skill://<skill-path>/<file>"}
	}
	return DecodeFilePath(rest, uri)
}

// ToURIChars percent-encodes the characters of uri that a URI may not
// hold (RFC 3987 §3.1: an IRI to its URI): bytes outside ASCII, controls,
// space, `"<>\^`{|}` and a '%' that starts no %XX, leaving everything
// else (reserved characters and existing %XX) as it is. A client that sent a file name unencoded
// is then read as if it had encoded it.
func ToURIChars(uri string) string {
	var b []byte
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		lonepercent := c == '%' && !(i+2 < len(uri) && isHex(uri[i+1]) && isHex(uri[i+2]))
		if c > ' ' && c < 0x7f && !lonepercent && !strings.ContainsRune("\"<>\\^`{|}", rune(c)) {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(uri)+16), uri[:i]...)
		}
		const hex = "0123456789ABCDEF"
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	if b == nil {
		return uri
	}
	return string(b)
}
