package registry

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzUnquote checks the one-pass string decoder against encoding/json:
// the same string for every literal encoding/json accepts, a refusal for
// every one it refuses.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"a\nb\tc\"d\\e\/f\bg\fh\ri"`, `"\u00e9\u2028\u0000"`,
		`"\ud83d\ude00"`, `"\ud800"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"raw\ncontrol\"", `"é ü 漢"`,
		"\"\xff\xfe\"", `"ends with \\"`, `"trailing \"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		// Callers pass one string literal, as skipString delimits it.
		if len(q) < 2 || q[0] != '"' {
			return
		}
		if end, err := skipString(q, 0); err != nil || end != len(q) {
			return
		}
		got, ok := Unquote(q)
		var want string
		err := json.Unmarshal(q, &want)
		if (err == nil) != ok {
			t.Fatalf("Unquote(%q): ok=%v, encoding/json err=%v", q, ok, err)
		}
		if ok && got != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json gives %q", q, got, want)
		}
		// The fast path sizes its output by decodedMax: never short.
		if body := q[1 : len(q)-1]; ok && utf8.Valid(body) {
			if esc := bytes.IndexByte(body, '\\'); esc >= 0 && decodedMax(body, esc) < len(got) {
				t.Fatalf("decodedMax(%q) = %d, decoded %d bytes", body, decodedMax(body, esc), len(got))
			}
		}
	})
}

// TestDecodedMaxIsExactForOneLetterEscapes: a markdown body's escapes are
// \n, \" and \\; its decoded string is then allocated at its exact size.
func TestDecodedMaxIsExactForOneLetterEscapes(t *testing.T) {
	for _, s := range []string{`a\nb`, `\\\\`, `line\n\\n\"q\"\t`, `\n`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &want); err != nil {
			t.Fatal(err)
		}
		body := []byte(s)
		if got := decodedMax(body, bytes.IndexByte(body, '\\')); got != len(want) {
			t.Errorf("decodedMax(%q) = %d, want %d (%q)", s, got, len(want), want)
		}
	}
}

// Unquote reads history's content rows back too: the escapes and the
// surrogate pairs encoding/json reads, and refuses what it refuses.
func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	for _, lit := range []string{`""`, `"plain"`, `"a\nb\tc\"d\\e\/f\b\f\r"`, `"\u00e9\u2028"`, `"\ud83d\ude00"`, `"\ud83d x"`, `"\u0041BC"`} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := Unquote([]byte(lit)); !ok || got != want {
			t.Errorf("Unquote(%s) = %q %v, want %q", lit, got, ok, want)
		}
	}
	for _, bad := range []string{`"`, `"\`, `"\x"`, `"\u12"`, `abc`} {
		if _, ok := Unquote([]byte(bad)); ok {
			t.Errorf("Unquote(%s) accepted", bad)
		}
	}
}
