package catalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// yaml.v3 (v3.0.1, no longer released) prints the line of a syntax error
// from libyaml's 0-based marks: it adds 1 for scanner errors but not for
// parser errors, and prints no line at all when the mark is on the first
// line (or for reader errors, which have no mark). fixYAMLLine rewrites
// the message so its line is 1-based in every case: the server's
// diagnostics and skills check then name the line the fault is on.
// TestParseFrontmatterErrorLines pins this against the yaml.v3 in go.mod.

// yamlErrRe splits "yaml: [line N: ]problem".
var yamlErrRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlParserProblems are the problems libyaml's parser (parserc.go)
// reports: their marks reach the message 0-based.
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlReaderProblems come from libyaml's reader: no mark, the line is
// found in the text instead.
var yamlReaderProblems = []string{
	"invalid leading UTF-8 octet",
	"incomplete UTF-8 octet sequence",
	"invalid length of a UTF-8 sequence",
	"invalid trailing UTF-8 octet",
	"invalid Unicode character",
	"control characters are not allowed",
}

// yamlSyntaxError is a yaml.v3 error with its line made 1-based.
type yamlSyntaxError struct {
	line    int
	problem string
	err     error // yaml.v3's own
}

func (e *yamlSyntaxError) Error() string {
	return fmt.Sprintf("yaml: line %d: %s", e.line, e.problem)
}

func (e *yamlSyntaxError) Unwrap() error { return e.err }

// fixYAMLLine returns err with a 1-based line when it is a yaml.v3 syntax
// error whose line it can place, else err unchanged.
func fixYAMLLine(raw string, err error) error {
	m := yamlErrRe.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	problem := m[2]
	line := 0
	if m[1] != "" {
		line, _ = strconv.Atoi(m[1])
	}
	printed := line
	switch {
	case hasPrefixIn(yamlParserProblems, problem):
		line++ // 0-based; no line printed means the first line
	case hasPrefixIn(yamlReaderProblems, problem):
		line = badCharLine(raw)
	case hasPrefixIn(yamlComposerProblems, problem):
		return err
	case line == 0:
		line = 1 // a scanner mark on the first line is not printed
	}
	// A fault found at the end of the input (a list never closed) is
	// marked after the last line, which is the closing "---" of the file:
	// name the last line of the YAML instead.
	if last := lastLine(raw); line > last && last > 0 {
		line = last
	}
	if line == 0 || line == printed {
		return err
	}
	return &yamlSyntaxError{line: line, problem: problem, err: err}
}

// lastLine is the 1-based number of the last line of raw that holds
// anything but spaces.
func lastLine(raw string) int {
	lines := strings.Split(raw, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return i + 1
		}
	}
	return 0
}

// yamlComposerProblems are yaml.v3's own messages after parsing, which
// name no line and are not about one (an alias used before its anchor).
var yamlComposerProblems = []string{
	"unknown anchor",
	"anchor '",
	"document contains excessive aliasing",
	"expected ",
}

func hasPrefixIn(list []string, problem string) bool {
	for _, p := range list {
		if strings.HasPrefix(problem, p) {
			return true
		}
	}
	return false
}

// badCharLine is the 1-based line of the first byte libyaml's reader
// refuses (invalid UTF-8 or a character YAML does not allow), 0 if none.
func badCharLine(raw string) int {
	line := 1
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRuneInString(raw[i:])
		if r == utf8.RuneError && size <= 1 || !yamlPrintable(r) {
			return line
		}
		if r == '\n' {
			line++
		}
		i += size
	}
	return 0
}

// yamlPrintable is YAML's c-printable set (what libyaml's reader accepts).
func yamlPrintable(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0x7E || r == 0x85 ||
		r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}
