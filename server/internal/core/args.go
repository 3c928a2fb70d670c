package core

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/iii-skills/skills/server/internal/jsonargs"
)

// The arguments of the registry's own functions (versions, search, the
// catalog view) are decoded by package jsonargs, in its one wording, and
// refused with INVALID_ARGUMENTS. The 13 upstream functions keep
// upstream's serde messages (package registry's decoders).

// args is one decoded JSON object payload of function fn.
type args struct{ jsonargs.Object }

// decodeArgs decodes a payload that must be an object with only the known
// fields. required: the payload must be there (a function with a
// required field); otherwise null or nothing is {}.
func decodeArgs(fn string, raw json.RawMessage, shape string, required bool, known ...string) (args, error) {
	o, err := jsonargs.Decode(fn, raw, jsonargs.Spec{Shape: shape, Known: known, Required: required, Wrap: invalidArguments})
	return args{o}, err
}

// selector reads a version field: a version number (1 or more) or a label.
func (a args) selector(name string) (string, error) {
	v, ok := a.Raw(name)
	if !ok {
		return "", a.Bad("%s is required (expected a version number or a label)", name)
	}
	v = bytes.TrimSpace(v)
	var n json.Number
	if v[0] != '"' && json.Unmarshal(v, &n) == nil {
		i, err := strconv.Atoi(n.String())
		if err != nil || i < 1 {
			return "", a.Bad("%s must be a version number of 1 or more, got %s", name, jsonargs.Shown(v))
		}
		return strconv.Itoa(i), nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil || s == "" {
		return "", a.Bad("%s must be a version number or a label, got %s", name, jsonargs.Shown(v))
	}
	return s, nil
}
