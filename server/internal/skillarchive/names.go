package skillarchive

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Name limits: PATH_MAX and NAME_MAX of Linux.
const (
	maxNameBytes      = 4096
	maxComponentBytes = 255
)

// EntryError is a refused entry: the archive (or source) it is in, its
// name as found, and the rule it broke.
type EntryError struct {
	Where string // the archive: a file name, a URL, "archive"
	Entry string // the entry's name exactly as the archive has it ("" for the archive as a whole)
	Rule  string
}

func (e *EntryError) Error() string {
	if e.Entry == "" {
		return e.Where + ": " + e.Rule
	}
	return fmt.Sprintf("%s: entry %s: %s", e.Where, quote(e.Entry), e.Rule)
}

// quote shows a name with every byte visible: invalid UTF-8, NUL and
// control characters escaped.
func quote(s string) string { return strconv.Quote(s) }

// CleanName checks the name of an archive entry and returns it cleaned:
// "./" prefixes and a trailing '/' removed. A name that is the root itself
// ("." or "./") returns "". The error says which rule the name broke.
func CleanName(raw string) (string, error) {
	switch {
	case !utf8.ValidString(raw):
		return "", fmt.Errorf("name is not valid UTF-8")
	case strings.IndexByte(raw, 0) >= 0:
		return "", fmt.Errorf("name holds a NUL byte")
	case strings.IndexByte(raw, '\\') >= 0:
		return "", fmt.Errorf(`name holds a backslash: archives separate folders with '/', and a '\' is read as a separator on Windows (where "..\" leaves the folder)`)
	case len(raw) > maxNameBytes:
		return "", fmt.Errorf("name is %d bytes long, the limit is %d", len(raw), maxNameBytes)
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return "", fmt.Errorf("name holds the control character %U", r)
		}
	}
	if strings.HasPrefix(raw, "/") {
		return "", fmt.Errorf("absolute path: names must be relative to the archive's root")
	}
	if len(raw) >= 2 && raw[1] == ':' && (raw[0]|0x20 >= 'a' && raw[0]|0x20 <= 'z') {
		return "", fmt.Errorf("name starts with a drive letter (%s): names must be relative to the archive's root", raw[:2])
	}
	name := raw
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	if name == "." || name == "" {
		return "", nil
	}
	name = strings.TrimSuffix(name, "/")
	for _, c := range strings.Split(name, "/") {
		switch {
		case c == "":
			return "", fmt.Errorf("name has an empty component (\"//\")")
		case c == ".":
			return "", fmt.Errorf(`name has a "." component`)
		case c == "..":
			return "", fmt.Errorf(`name has a ".." component, which leaves the archive's root (zip slip)`)
		case len(c) > maxComponentBytes:
			return "", fmt.Errorf("name has a component of %d bytes, the limit is %d", len(c), maxComponentBytes)
		}
	}
	return name, nil
}

// parents lists the folders above name: "a/b/c" → "a", "a/b".
func parents(name string) []string {
	var out []string
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			out = append(out, name[:i])
		}
	}
	return out
}
