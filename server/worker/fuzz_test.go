package worker

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeInput feeds function payloads to the worker's input decoder
// (upstream serde semantics). Seeds run with `go test`; `make fuzz`
// explores it for FUZZTIME.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{`{"id":"a","skill":"# A"}`, `null`, `[]`, `{"id":5}`, `{"skill":"x"}`, `{"id":"a","skill":"b","_caller_worker_id":"w"}`, `"str"`, `{"id":"a","id":"b","skill":""}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var in struct {
			ID    string   `json:"id"`
			Skill string   `json:"skill"`
			URIs  []string `json:"uris"`
		}
		err := decodeInput(json.RawMessage(raw), "RegisterSkillInput", &in, "id", "skill")
		if err != nil && err.Error() == "" {
			t.Fatalf("empty error for %q", raw)
		}
	})
}
