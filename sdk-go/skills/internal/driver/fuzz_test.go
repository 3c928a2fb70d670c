package main

import "testing"

// FuzzDecodeCommand feeds command lines to the conformance driver's
// decoder. Seeds run with `go test`; `make fuzz` explores it for FUZZTIME.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{`{"id":1,"cmd":"skill","skill_id":"a","markdown":"# A"}`, `{"id":1,"cmd":"skill","id":"x"}`, `{"cmd":5}`, `[]`, `{"id":1,"cmd":"x"} trailing`, `{`, `{"cmd":"configure","backoff":{"initial_ms":-1}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := decodeCommand(line)
		if err == nil && c.id == nil {
			t.Fatalf("decoded %q without a frame id", line)
		}
	})
}
