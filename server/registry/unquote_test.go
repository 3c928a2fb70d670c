package registry

import (
	"encoding/json"
	"testing"
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
		got, ok := unquote(q)
		var want string
		err := json.Unmarshal(q, &want)
		if (err == nil) != ok {
			t.Fatalf("unquote(%q): ok=%v, encoding/json err=%v", q, ok, err)
		}
		if ok && got != want {
			t.Fatalf("unquote(%q) = %q, encoding/json gives %q", q, got, want)
		}
	})
}
