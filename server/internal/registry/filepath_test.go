package registry

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yosida95/uritemplate/v3"
)

// The encoding is Python's urllib.parse.quote(path, safe="/"), which
// agentskills-mcp-server (the MCP Skills extension's reference server)
// publishes: these expectations are what that function returns.
func TestEscapePathIsTheReferenceServersEncoding(t *testing.T) {
	for in, want := range map[string]string{
		"SKILL.md":               "SKILL.md",
		"references/notes.md":    "references/notes.md",
		"with space.md":          "with%20space.md",
		"100%.md":                "100%25.md",
		"a#b?c.md":               "a%23b%3Fc.md",
		"résumé.md":              "r%C3%A9sum%C3%A9.md",
		"日本.txt":                 "%E6%97%A5%E6%9C%AC.txt",
		"a+b=c&d@e:f;g,h!.md":    "a%2Bb%3Dc%26d%40e%3Af%3Bg%2Ch%21.md",
		"~tilde_under-dash.x":    "~tilde_under-dash.x",
		"quote'\"back\\slash.md": "quote%27%22back%5Cslash.md",
	} {
		if got := EscapePath(in); got != want {
			t.Errorf("EscapePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every name survives a round trip, and every URI produced matches the
// skill://{+path} template go-sdk dispatches reads through.
func TestSkillFileURIRoundTrip(t *testing.T) {
	tmpl := uritemplate.MustNew(SkillScheme + "{+path}")
	for _, name := range []string{"with space.md", "100%.md", "a#b.md", "q?.md", "résumé.md", "x%20y.md", "[x].md", "tab\tless.md"[:3] + ".md",
		strings.Repeat("é", 126) + ".md"} {
		uri := SkillFileURI("team/pdf", "refs/"+name)
		if !tmpl.Regexp().MatchString(uri) {
			t.Errorf("%s does not match the skill:// template", uri)
		}
		if _, err := url.Parse(uri); err != nil {
			t.Errorf("%s is not a URI: %v", uri, err)
		}
		got, err := ParseSkillURI(uri)
		if err != nil || got != "team/pdf/refs/"+name {
			t.Errorf("ParseSkillURI(%s) = %q, %v; want %q", uri, got, err, "team/pdf/refs/"+name)
		}
	}
}

func TestDecodeFilePathRefusals(t *testing.T) {
	for in, want := range map[string]string{
		"ok%00.md":                 "cannot hold a NUL byte",
		"ok\x00.md":                "cannot hold a NUL byte",
		"%FF%FE.md":                "is not UTF-8",
		"a/../b":                   `".." segment`,
		"%2e%2e%2fetc%2fpasswd":    `".." segment`,
		"a//b":                     "empty segment",
		"a/":                       "empty segment",
		"/etc/passwd":              "empty segment",
		"line%0Abreak":             "control character U+000A",
		strings.Repeat("n", 256):   "256 bytes; names are at most 255",
		strings.Repeat("d/", 2100): "4200 bytes; a file path is at most 4096",
		"":                         "names no file",
	} {
		_, err := DecodeFilePath(in, "skill://x/"+in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeFilePath(%q) = %v; want an error containing %q", in, err, want)
			continue
		}
		msg := err.Error()
		if !utf8.ValidString(msg) || strings.ContainsAny(msg, "\x00\n") || len(msg) > 400 {
			t.Errorf("the message for %q is not one short readable line: %q", in, msg)
		}
		if !strings.HasPrefix(msg, "skill://x/") {
			t.Errorf("the message for %q does not name the URI: %q", in, msg)
		}
	}
}

// A client that sent a name unencoded is read as if it had encoded it:
// ToURIChars then yields a URI the template matches.
func TestToURIChars(t *testing.T) {
	tmpl := uritemplate.MustNew(SkillScheme + "{+path}")
	for in, want := range map[string]string{
		"skill://x/with space.md": "skill://x/with%20space.md",
		"skill://x/résumé.md":     "skill://x/r%C3%A9sum%C3%A9.md",
		"skill://x/100%.md":       "skill://x/100%25.md",
		"skill://x/a%20b.md":      "skill://x/a%20b.md",
		"skill://x/ok\x00.md":     "skill://x/ok%00.md",
		"skill://x/a#b?c@d.md":    "skill://x/a#b?c@d.md",
		"skill://x/{x}|^`.md":     "skill://x/%7Bx%7D%7C%5E%60.md",
	} {
		got := ToURIChars(in)
		if got != want {
			t.Errorf("ToURIChars(%q) = %q, want %q", in, got, want)
		}
		if !tmpl.Regexp().MatchString(got) {
			t.Errorf("%q does not match the template", got)
		}
		a, errA := ParseSkillURI(in)
		b, errB := ParseSkillURI(got)
		if a != b || (errA == nil) != (errB == nil) {
			t.Errorf("%q and %q decode differently: %q/%v, %q/%v", in, got, a, errA, b, errB)
		}
	}
}
