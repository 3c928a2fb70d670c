package jsonargs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Every refusal names the function, the field, what was expected and
// what came, in one wording; Wrap gives each its code.
func TestRefusalsHaveOneWording(t *testing.T) {
	type coded struct{ error }
	wrap := func(err error) error { return coded{err} }
	spec := Spec{Shape: `{"q": "<words>"}`, Known: []string{"q", "n", "flag", "list"}, Required: true, Wrap: wrap}
	read := func(raw string, f func(Object) error) error {
		o, err := Decode("x::y", json.RawMessage(raw), spec)
		if err != nil {
			return err
		}
		return f(o)
	}
	str := func(o Object) error { _, err := o.String("q", true, 4, "a string of words"); return err }
	for _, c := range []struct {
		raw  string
		f    func(Object) error
		want string
	}{
		{``, str, `x::y: input must be a JSON object like {"q": "<words>"}, got nothing`},
		{`null`, str, `x::y: input must be a JSON object like {"q": "<words>"}, got null`},
		{`[1]`, str, `x::y: input must be a JSON object like {"q": "<words>"}, got an array`},
		{`{"z": 1}`, str, `x::y: unknown field "z" (expected q, n, flag, list)`},
		{`{}`, str, `x::y: q is required (expected a string of words)`},
		{`{"q": 5}`, str, `x::y: q must be a string of words, got 5`},
		{`{"q": "words"}`, str, `x::y: q is 5 bytes, the limit is 4`},
		{`{"n": 2.5}`, func(o Object) error { _, err := o.Integer("n", 1, 9, 1); return err }, `x::y: n must be an integer from 1 to 9, got 2.5`},
		{`{"flag": "yes"}`, func(o Object) error { _, err := o.Bool("flag"); return err }, `x::y: flag must be a boolean, got "yes"`},
		{`{"list": [1]}`, func(o Object) error { _, _, err := o.Strings("list"); return err }, `x::y: list must be an array of strings, got [1]`},
	} {
		err := read(c.raw, c.f)
		var w coded
		if err == nil || err.Error() != c.want || !errors.As(err, &w) {
			t.Errorf("%q: %v (wrapped %v), want %q wrapped", c.raw, err, errors.As(err, &w), c.want)
		}
	}
	if got := WrongType("state::get", "key", "a string", json.RawMessage(`{"a":"`+strings.Repeat("b", 50)+`"}`)).Error(); got != `state::get: key must be a string, got {"a":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb…` {
		t.Errorf("a long value is cut: %s", got)
	}
}

// What is taken: engine keys (_…) beside the known fields, any field
// without Known, null and nothing as {} unless Required; null fields are
// absent.
func TestWhatIsTaken(t *testing.T) {
	o, err := Decode("x", json.RawMessage(`{"q":"a","_caller_worker_id":"w","n":null}`), Spec{Known: []string{"q", "n"}})
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := o.String("q", true, 0, "a string"); q != "a" || o.Present("n") {
		t.Errorf("q %q, n present %v", q, o.Present("n"))
	}
	if n, _ := o.Integer("n", 1, 9, 7); n != 7 {
		t.Errorf("null integer: %d, want the default", n)
	}
	for _, raw := range []string{``, `null`, `{"anything": 1}`} {
		if _, err := Decode("x", json.RawMessage(raw), Spec{}); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
