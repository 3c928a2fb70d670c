package registry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
)

func goQuote(s string) string { return fmt.Sprintf("%q", s) }

// encode marshals v without HTML escaping and without a trailing newline,
// the bytes a serde_json worker would send.
func encode(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func ptr[T any](v T) *T { return &v }
