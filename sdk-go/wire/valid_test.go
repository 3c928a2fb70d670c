package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzValid checks Valid against json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `null`, ` true `, `false`, `0`, `-0.5e+10`, `01`, `1.`, `.5`, `-`, `1e`,
		`"a\"b\\c\/\b\f\n\r\t\u00e9"`, `"\u12"`, `"\x"`, "\"\x01\"", "\"\xff\"", `{"a":[1,{"b":null}],"c":"d"}`,
		`{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a":1}x`, `nul`, `"unterminated`, `{"a":}`, ``, ` `, `{,}`,
		`[` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `]`, strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	body := strings.Repeat("- a line of orientation text about one function and its arguments\n", 31)
	data, _ := json.Marshal(map[string]any{"scope": "skills", "key": "w1/s1", "value": map[string]string{"id": "w1/s1", "skill": body}})
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			Valid(data)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			json.Valid(data)
		}
	})
}

// Every special byte is found at every offset of the eight-byte skipping.
func TestValidFindsEveryByte(t *testing.T) {
	for _, special := range []string{"\x00", "\x1f", "\"", "\\", "\\n", "\\u00e9", "\\q", "\x7f", "\xc3\xa9", "\xff"} {
		for at := 0; at < 40; at++ {
			s := []byte(`"` + strings.Repeat("a", at) + special + strings.Repeat("b", 40-at) + `"`)
			if got, want := Valid(s), json.Valid(s); got != want {
				t.Errorf("Valid(%q) = %v, json.Valid says %v", s, got, want)
			}
		}
	}
}

// HasSpace tells whether json.Compact would change a valid value.
func FuzzHasSpace(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{"a":"b c\n\\\" d"}`, `[1,2]`, " 1", `"` + strings.Repeat("x \\\"", 9) + `"`, `{"k":"v"}` + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, v)
		if got, want := HasSpace(v), !bytes.Equal(buf.Bytes(), v); got != want {
			t.Fatalf("HasSpace(%q) = %v, compacting changes it: %v", v, got, want)
		}
	})
}
