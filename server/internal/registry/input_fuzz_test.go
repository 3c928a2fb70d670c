package registry

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeInputs feeds function payloads to every input decoder of the
// registry functions (upstream serde semantics): none may panic, and every
// refusal must say something. Seeds run with `go test`; `make fuzz` explores
// it for FUZZTIME.
func FuzzDecodeInputs(f *testing.F) {
	for _, s := range []string{`{"id":"a","skill":"# A"}`, `null`, `[]`, `{"id":5}`, `{"skill":"x"}`,
		`{"id":"a","skill":"b","_caller_worker_id":"w"}`, `"str"`, `{"id":"a","id":"b","skill":""}`, `{`,
		`{"uri":"iii://x"}`, `{"uris":["a",null]}`, `{"name":"n","description":"d","function_id":"f","arguments":[{"name":"a"}]}`,
		`{"name":"n","arguments":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		check := func(err error) {
			if err != nil && err.Error() == "" {
				t.Fatalf("empty error for %q", raw)
			}
		}
		data := json.RawMessage(raw)
		_, err := DecodeRegisterSkillInput(data)
		check(err)
		_, err = DecodeUnregisterSkillInput(data)
		check(err)
		check(DecodeEmptyInput(data, "EmptyInput"))
		_, err = DecodeReadResourceInput(data)
		check(err)
		_, err = DecodeFetchInput(data)
		check(err)
		_, err = DecodeRegisterPromptInput(data)
		check(err)
		_, err = DecodeUnregisterPromptInput(data)
		check(err)
		_, err = DecodePromptGetInput(data)
		check(err)
	})
}
