package engine

import (
	"encoding/json"
	"strings"

	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/jsonargs"
)

// The inputs of the built-ins are decoded by package jsonargs, in the
// wording of every function this server defines ("state::get: key is
// required (expected a string)"), and refused with deserialization_error,
// the code the real engine gives a built-in's input that does not match.

// args is the decoded object input of a built-in.
type args struct{ jsonargs.Object }

// parseArgs decodes a built-in's input. null (or no data) is accepted as an
// empty object when every field is optional (required == false).
func parseArgs(fn string, data json.RawMessage, required bool, example string) (*args, *wire.ErrorBody) {
	o, err := jsonargs.Decode(fn, data, jsonargs.Spec{Shape: example, Required: required})
	if err != nil {
		return nil, decodeErr(err)
	}
	return &args{o}, nil
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

// decodeErr is a refusal of a built-in's input (a jsonargs error).
func decodeErr(err error) *wire.ErrorBody {
	return &wire.ErrorBody{Code: wire.CodeDeserializationError, Message: err.Error()}
}

// raw returns a field's JSON, treating an explicit null as absent.
func (a *args) raw(name string) (json.RawMessage, bool) { return a.Raw(name) }

// str reads a required string field.
func (a *args) str(name string) (string, *wire.ErrorBody) {
	return orRefusal(a.String(name, true, 0, "a string"))
}

// optStr reads an optional string field ("" when absent).
func (a *args) optStr(name string) (string, *wire.ErrorBody) {
	return orRefusal(a.String(name, false, 0, "a string"))
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
func (a *args) optBool(name string) (bool, *wire.ErrorBody) { return orRefusal(a.Bool(name)) }

// optStrings reads an optional array-of-strings field.
func (a *args) optStrings(name string) ([]string, bool, *wire.ErrorBody) {
	list, ok, err := a.Strings(name)
	if err != nil {
		return nil, false, decodeErr(err)
	}
	return list, ok, nil
}

// into decodes a present field into dst; expected says what it holds.
func (a *args) into(name, expected string, dst any) (bool, *wire.ErrorBody) {
	return orRefusal(a.Into(name, expected, dst))
}

func orRefusal[T any](v T, err error) (T, *wire.ErrorBody) {
	if err != nil {
		return v, decodeErr(err)
	}
	return v, nil
}
