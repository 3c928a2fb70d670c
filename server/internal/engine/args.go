package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// args is the decoded object input of a built-in. Its accessors produce
// deserialization_error bodies that name the function, the field and what
// was expected, e.g. "state::get: missing field `key` (expected a string)".
type args struct {
	fn     string
	fields map[string]json.RawMessage
}

// parseArgs decodes a built-in's input. null (or no data) is accepted as an
// empty object when every field is optional (required == false).
func parseArgs(fn string, data json.RawMessage, required bool, example string) (*args, *wire.ErrorBody) {
	a := &args{fn: fn}
	d := bytes.TrimSpace(data)
	if len(d) == 0 || bytes.Equal(d, jsonNull) {
		if required {
			return nil, decodeErr("%s: input must be a JSON object like %s, got null", fn, example)
		}
		return a, nil
	}
	if d[0] != '{' {
		return nil, decodeErr("%s: input must be a JSON object like %s, got %s", fn, example, jsonKind(d))
	}
	if err := json.Unmarshal(d, &a.fields); err != nil {
		return nil, decodeErr("%s: input is not a valid JSON object: %v", fn, err)
	}
	return a, nil
}

// listInput is the parsed input of a listing built-in (engine::*::list).
type listInput struct {
	*args
	filters         []string // the string filters asked for, "" when absent; the first, search, lower-cased
	includeInternal bool
}

// parseListInput parses a listing's input: optional string filters, the
// first of them "search" (matched case-insensitively), and with internal
// the flag include_internal.
func parseListInput(fn string, data json.RawMessage, example string, internal bool, filters ...string) (listInput, *wire.ErrorBody) {
	a, errb := parseArgs(fn, data, false, example)
	if errb != nil {
		return listInput{}, errb
	}
	in := listInput{args: a}
	if in.filters, errb = a.optStrs(filters...); errb != nil {
		return listInput{}, errb
	}
	in.filters[0] = strings.ToLower(in.filters[0])
	if internal {
		if in.includeInternal, errb = a.optBool("include_internal"); errb != nil {
			return listInput{}, errb
		}
	}
	return in, nil
}

func decodeErr(format string, v ...any) *wire.ErrorBody {
	return &wire.ErrorBody{Code: wire.CodeDeserializationError, Message: fmt.Sprintf(format, v...)}
}

// raw returns a field's JSON, treating an explicit null as absent.
func (a *args) raw(name string) (json.RawMessage, bool) {
	v, ok := a.fields[name]
	if !ok || bytes.Equal(bytes.TrimSpace(v), jsonNull) {
		return nil, false
	}
	return v, true
}

// str reads a required string field.
func (a *args) str(name string) (string, *wire.ErrorBody) {
	v, ok := a.raw(name)
	if !ok {
		return "", decodeErr("%s: missing field `%s` (expected a string)", a.fn, name)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", decodeErr("%s: field `%s` must be a string, got %s", a.fn, name, jsonKind(v))
	}
	return s, nil
}

// optStr reads an optional string field ("" when absent).
func (a *args) optStr(name string) (string, *wire.ErrorBody) {
	if _, ok := a.raw(name); !ok {
		return "", nil
	}
	return a.str(name)
}

// optStrs reads several optional string fields, in the order named.
func (a *args) optStrs(names ...string) ([]string, *wire.ErrorBody) {
	out := make([]string, len(names))
	for i, name := range names {
		var errb *wire.ErrorBody
		if out[i], errb = a.optStr(name); errb != nil {
			return nil, errb
		}
	}
	return out, nil
}

// optBool reads an optional boolean field (false when absent).
func (a *args) optBool(name string) (bool, *wire.ErrorBody) {
	v, ok := a.raw(name)
	if !ok {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, decodeErr("%s: field `%s` must be a boolean, got %s", a.fn, name, jsonKind(v))
	}
	return b, nil
}

// optStrings reads an optional array-of-strings field.
func (a *args) optStrings(name string) ([]string, bool, *wire.ErrorBody) {
	v, ok := a.raw(name)
	if !ok {
		return nil, false, nil
	}
	var ss []string
	if err := json.Unmarshal(v, &ss); err != nil {
		return nil, false, decodeErr("%s: field `%s` must be an array of strings, got %s", a.fn, name, jsonKind(v))
	}
	return ss, true, nil
}

// jsonKind names the JSON type of a value for error messages.
func jsonKind(v json.RawMessage) string {
	d := bytes.TrimSpace(v)
	if len(d) == 0 {
		return "nothing"
	}
	switch d[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
