package rules

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for the validators and RustQuote. Their seeds run with
// `go test`; `make fuzz` explores each for FUZZTIME.

func FuzzValidators(f *testing.F) {
	for _, s := range []string{"resend/email/send", "a", "", "/a", "a//b", "A", "a-b_c", strings.Repeat("a", 300), "é", "engine::x", "skills::register", "a::b", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateID(s) == nil {
			for _, seg := range strings.Split(s, "/") {
				if err := ValidateIDSegment(seg); err != nil {
					t.Fatalf("ValidateID(%q) ok but segment %q: %v", s, seg, err)
				}
			}
		}
		for _, err := range []error{ValidateIDSegment(s), ValidateSkillBody(s), ValidateName(s),
			ValidatePromptDescription(s), ValidatePromptFunctionID(s), ValidateArgumentNames([]string{s, s}),
			ValidatePrompt(s, s, s, []string{s})} {
			if err != nil && err.Error() == "" {
				t.Fatalf("empty error message for %q", s)
			}
		}
		_ = IsHidden(s)
	})
}

func FuzzRustQuote(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "\n\t\r\x00\x7f", "é😀", "\xff\xfe", "\u200b\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := RustQuote(s)
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
			t.Fatalf("RustQuote(%q) = %q is not a quoted string", s, q)
		}
		if !utf8.ValidString(q) {
			t.Fatalf("RustQuote(%q) = %q is not valid UTF-8", s, q)
		}
		if strings.ContainsAny(q[1:len(q)-1], "\n\r\x00") {
			t.Fatalf("RustQuote(%q) = %q leaves control characters unescaped", s, q)
		}
	})
}
