package skills

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeArguments feeds MCP prompt arguments to the publisher's
// argument coercion (strings to declared types). Seeds run with `go test`;
// `make fuzz` explores it for FUZZTIME.
func FuzzDecodeArguments(f *testing.F) {
	for _, s := range []string{`{"count":"3","to":"a","subject":"s"}`, `{"count":3.5}`, `{"ratio":"1e400"}`, `{"small":"300"}`, `{"size":"-1"}`, `{"plain":"true","forced":"x"}`, `null`, `[]`, `{"count":"0x10"}`, `{"urgent":"maybe"}`} {
		f.Add([]byte(s))
	}
	mixed, err := deriveArguments(reflect.TypeOf(mixedArgs{}))
	if err != nil {
		f.Fatal(err)
	}
	email, err := deriveArguments(reflect.TypeOf(sendEmailArgs{}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m mixedArgs
		if err := decodeArguments("p", mixed, json.RawMessage(raw), &m); err != nil && !strings.HasPrefix(err.Error(), `prompt "p": `) {
			t.Fatalf("error without the prompt prefix: %v", err)
		}
		var e sendEmailArgs
		_ = decodeArguments("p", email, json.RawMessage(raw), &e)
	})
}
