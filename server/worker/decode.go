package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeInput decodes a function's payload the way upstream's serde structs
// do: the payload must be a JSON object (null or any other value is
// "invalid type: …, expected struct Name"), required keys must be present
// ("missing field `id`"), unknown keys (such as the engine's
// _caller_worker_id) are ignored, and a wrongly typed value names the field.
func decodeInput(raw json.RawMessage, structName string, dst any, required ...string) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("invalid type: %s, expected struct %s", describeJSON(t), structName)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(t, &keys); err != nil {
		return fmt.Errorf("invalid JSON payload for %s: %v", structName, err)
	}
	for _, k := range required {
		if _, ok := keys[k]; !ok {
			return fmt.Errorf("missing field `%s`", k)
		}
	}
	if err := json.Unmarshal(t, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("invalid type for field `%s`: %s, expected %s", te.Field, te.Value, jsonTypeWord(te.Type.Kind().String()))
		}
		return fmt.Errorf("invalid payload for %s: %v", structName, err)
	}
	return nil
}

// describeJSON names a JSON value like serde's "invalid type" messages.
func describeJSON(t []byte) string {
	if len(t) == 0 {
		return "null"
	}
	switch t[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean `" + string(t) + "`"
	case '"':
		var s string
		_ = json.Unmarshal(t, &s)
		return fmt.Sprintf("string %q", s)
	case '[':
		return "sequence"
	}
	return "number `" + string(t) + "`"
}

func jsonTypeWord(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "a sequence"
	case "struct", "map":
		return "a map"
	case "ptr":
		return "a value of the declared type"
	default:
		return "a number"
	}
}
