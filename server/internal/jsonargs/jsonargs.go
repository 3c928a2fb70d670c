// Package jsonargs decodes the JSON object arguments of the functions this
// server defines itself: the registry's own functions (versions, search,
// the catalog view; package core) and the embedded engine's built-ins
// (engine::*, state::*, publish; package engine). One decoder, one
// wording: every refusal names the function, the field, what was expected
// and what came.
//
//	skills::label: input must be a JSON object like {"id": …}, got an array
//	skills::label: label is required (expected a string)
//	skills::search: limit must be an integer from 1 to 100, got 0
//	skills::search: unknown field "k" (expected query, limit, namespace)
//	state::get: key must be a string, got 5
//
// Each caller gives the refusals its code (Spec.Wrap): INVALID_ARGUMENTS
// for the registry's functions, deserialization_error for the engine's.
// The functions upstream defines (the registry's 13, iii-directory's)
// answer with serde's wording instead, as upstream does (package
// registry's decoders).
package jsonargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Spec is what one function's input may be.
type Spec struct {
	// Shape shows the input, for the refusal of one that is no object:
	// `{"query": "<words>", "limit"?: n}`.
	Shape string
	// Known are the only fields taken; nil takes any. Keys starting with
	// "_" are the engine's own (_caller_worker_id) and always taken.
	Known []string
	// Required refuses null and an empty payload (otherwise they read as {}).
	Required bool
	// Wrap gives every refusal its code (nil: the plain error).
	Wrap func(error) error
}

// Object is one decoded JSON object input of function Fn.
type Object struct {
	Fn     string
	fields map[string]json.RawMessage
	wrap   func(error) error
}

// Decode decodes raw, the input of function fn, by spec.
func Decode(fn string, raw json.RawMessage, spec Spec) (Object, error) {
	o := Object{Fn: fn, wrap: spec.Wrap}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if spec.Required {
			return o, o.refuse(NotObject(fn, spec.Shape, raw))
		}
		return o, nil
	}
	if raw[0] != '{' || json.Unmarshal(raw, &o.fields) != nil {
		return o, o.refuse(NotObject(fn, spec.Shape, raw))
	}
	if spec.Known == nil {
		return o, nil
	}
	keys := make([]string, 0, len(o.fields))
	for k := range o.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(spec.Known, k) && !strings.HasPrefix(k, "_") {
			return o, o.refuse(fmt.Errorf("%s: unknown field %q (expected %s)", fn, k, strings.Join(spec.Known, ", ")))
		}
	}
	return o, nil
}

// The wording, for decoders that read their fields their own way (the
// engine's one-pass reader of state::* inputs).

// NotObject refuses raw, the input of fn, which is no JSON object.
func NotObject(fn, shape string, raw json.RawMessage) error {
	return fmt.Errorf("%s: input must be a JSON object like %s, got %s", fn, shape, Kind(raw))
}

// Missing refuses an input of fn without its field name.
func Missing(fn, name, expected string) error {
	return fmt.Errorf("%s: %s is required (expected %s)", fn, name, expected)
}

// WrongType refuses field name of fn's input, which holds raw.
func WrongType(fn, name, expected string, raw json.RawMessage) error {
	return fmt.Errorf("%s: %s must be %s, got %s", fn, name, expected, Shown(raw))
}

// Bad is a refusal of fn's input in words of its own ("query is empty: …").
func (o Object) Bad(format string, v ...any) error {
	return o.refuse(fmt.Errorf(o.Fn+": "+format, v...))
}

func (o Object) refuse(err error) error {
	if o.wrap != nil {
		return o.wrap(err)
	}
	return err
}

// Raw is field name's JSON; ok false when it is absent or null.
func (o Object) Raw(name string) (v json.RawMessage, ok bool) {
	v, ok = o.fields[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// Has reports whether the object names field name at all, null included
// (for a key whose null means something, such as "undo").
func (o Object) Has(name string) bool {
	_, ok := o.fields[name]
	return ok
}

// Present reports whether field name holds a value (null is none).
func (o Object) Present(name string) bool {
	_, ok := o.Raw(name)
	return ok
}

// String reads a string field of at most maxBytes (0: any length);
// expected says what it should hold ("a string of words"), for refusals.
// A missing optional one is "".
func (o Object) String(name string, required bool, maxBytes int, expected string) (string, error) {
	v, ok := o.Raw(name)
	if !ok {
		if required {
			return "", o.refuse(Missing(o.Fn, name, expected))
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", o.refuse(WrongType(o.Fn, name, expected, v))
	}
	if maxBytes > 0 && len(s) > maxBytes {
		return "", o.Bad("%s is %d bytes, the limit is %d", name, len(s), maxBytes)
	}
	return s, nil
}

// Integer reads an integer field from lo to hi; a missing one is def.
func (o Object) Integer(name string, lo, hi, def int64) (int64, error) {
	v, ok := o.Raw(name)
	if !ok {
		return def, nil
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, o.Bad("%s must be an integer from %d to %d, got %s", name, lo, hi, Shown(v))
	}
	return int64(f), nil
}

// Bool reads an optional boolean field (false when absent).
func (o Object) Bool(name string) (bool, error) {
	v, ok := o.Raw(name)
	if !ok {
		return false, nil
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		return false, o.refuse(WrongType(o.Fn, name, "a boolean", v))
	}
	return b, nil
}

// Strings reads an optional array of strings; ok false when absent.
func (o Object) Strings(name string) (list []string, ok bool, err error) {
	v, ok := o.Raw(name)
	if !ok {
		return nil, false, nil
	}
	if json.Unmarshal(v, &list) != nil {
		return nil, false, o.refuse(WrongType(o.Fn, name, "an array of strings", v))
	}
	return list, true, nil
}

// Into decodes field name into dst (a present one only); expected says
// what it should hold, for the refusal.
func (o Object) Into(name, expected string, dst any) (ok bool, err error) {
	v, ok := o.Raw(name)
	if !ok {
		return false, nil
	}
	if json.Unmarshal(v, dst) != nil {
		return false, o.refuse(WrongType(o.Fn, name, expected, v))
	}
	return true, nil
}

// Shown shows a value that was refused: itself when short, else its start.
func Shown(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	if s == "" {
		return "nothing"
	}
	return s
}

// Kind names the JSON type of a value: "an object", "a string", "null", ….
func Kind(v json.RawMessage) string {
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
	}
	return "a number"
}
