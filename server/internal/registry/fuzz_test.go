package registry

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for everything in this package that reads outside input.
// Their seeds run with `go test`; `make fuzz` explores each for FUZZTIME.

func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"iii://skills", "iii://a/b", "iii://fn/a/b", "iii://fn/a", "iii://", "http://x", "iii://fn/", "iii://a//b", "iii://A", "iii://fn/a::b", "agent-memory"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		tg, err := ParseURI(uri)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty error for %q", uri)
			}
			return
		}
		switch tg.Kind {
		case TargetIndex:
		case TargetSkill:
			// Ids are validated when read (skillBody), as upstream does.
			if again, err := ParseURI(SkillURI(tg.ID)); err != nil || again != tg {
				t.Fatalf("round trip of %q: %+v, %v", uri, again, err)
			}
		case TargetSection:
			if tg.FunctionID == "" {
				t.Fatalf("ParseURI(%q): section without a function id", uri)
			}
		default:
			t.Fatalf("ParseURI(%q): unknown kind %d", uri, tg.Kind)
		}
	})
}

func FuzzTitleDescription(f *testing.F) {
	for _, s := range []string{"# T\n\ndesc", "no heading", "#\n", "# 标题\n\n" + strings.Repeat("é", 300), "---\na: b\n---\n# x", "\x00# \xff"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, md string, n int) {
		title, _ := ExtractTitle(md)
		desc, _ := ExtractDescription(md)
		if utf8.ValidString(md) && (!utf8.ValidString(title) || !utf8.ValidString(desc)) {
			t.Fatalf("valid UTF-8 in, invalid out: %q %q", title, desc)
		}
		n %= 1000
		out := TruncateChars(md, n)
		if n < 0 {
			n = 0
		}
		if !strings.HasPrefix(md, strings.TrimSuffix(out, IndexTruncationMark)) {
			t.Fatalf("TruncateChars(%q, %d) = %q is not a prefix plus the mark", md, n, out)
		}
		if out != md && utf8.RuneCountInString(strings.TrimSuffix(out, IndexTruncationMark)) != n {
			t.Fatalf("TruncateChars(%q, %d) kept the wrong count: %q", md, n, out)
		}
		e := NewIndexEntry("x", md)
		_ = IndexLine(e.ID, e.Title, e.Description, e.HasDescription)
	})
}

func FuzzNormalizeOutputs(f *testing.F) {
	for _, s := range []string{`"text"`, `{"content":"x"}`, `{"a":1.0}`, `[1,2]`, `null`, `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`, `[{"role":"assistant","content":"x"}]`, `{"content":5,"content":"late"}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // outputs arrive as decoded JSON values
		}
		text, mime := NormalizeSectionOutput(raw)
		if mime != MimeMarkdown && mime != MimeJSON {
			t.Fatalf("mime %q", mime)
		}
		_ = text
		msgs, err := NormalizePromptOutput(raw)
		if err == nil {
			for _, m := range msgs {
				if !json.Valid(m) {
					t.Fatalf("prompt message is not JSON: %s", m)
				}
			}
		}
		_ = NormalizePromptArguments(raw)
	})
}

func FuzzPrettyJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"\u0001"]}`, `1.0`, `"é<>&"`, `{}`, `[]`, `{"a":{"a":{}}}`, `{"x":1,"x":2}`, `not json`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := PrettyJSON(raw)
		if err != nil {
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("PrettyJSON(%q) = %q is not JSON", raw, out)
		}
		again, err := PrettyJSON([]byte(out))
		if err != nil || again != out {
			t.Fatalf("PrettyJSON is not idempotent on %q: %q, %v", out, again, err)
		}
	})
}
