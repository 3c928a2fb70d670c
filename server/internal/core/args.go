package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The one decoder of the arguments of the registry's own functions
// (versions, search, the catalog view): every refusal names the function,
// the field, what was expected and what came, in one wording:
//
//	skills::label input must be a JSON object, expected {"id": …}
//	skills::label: label is required (expected a string)
//	skills::search: limit must be an integer from 1 to 100, got 0
//	skills::search: unknown field "k" (expected query, limit, namespace)
//
// The 13 upstream functions keep upstream's serde messages (package
// registry's decoders).

// args is one decoded JSON object payload.
type args struct {
	fn     string
	fields map[string]json.RawMessage
}

// decodeArgs decodes a payload that must be an object with only the
// fields known (keys starting with "_" are the engine's own, like
// _caller_worker_id, and ignored). An empty payload is {}.
func decodeArgs(fn string, raw json.RawMessage, shape string, known ...string) (args, error) {
	a := args{fn: fn}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' || json.Unmarshal(raw, &a.fields) != nil || a.fields == nil {
		return a, invalidArguments(fmt.Errorf("%s input must be a JSON object, expected %s", fn, shape))
	}
	keys := make([]string, 0, len(a.fields))
	for k := range a.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) && !strings.HasPrefix(k, "_") {
			return a, invalidArguments(fmt.Errorf("%s: unknown field %q (expected %s)", fn, k, strings.Join(known, ", ")))
		}
	}
	return a, nil
}

func (a args) bad(format string, v ...any) error {
	return invalidArguments(fmt.Errorf(a.fn+": "+format, v...))
}

// present reports whether name holds a value (null is none).
func (a args) present(name string) bool {
	v, ok := a.fields[name]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

// str reads a string field of at most maxBytes (0: any length); a missing
// optional one is "".
func (a args) str(name string, required bool, maxBytes int) (string, error) {
	return a.text(name, required, maxBytes, "a string")
}

// text is str with expected naming what the string should hold.
func (a args) text(name string, required bool, maxBytes int, expected string) (string, error) {
	if !a.present(name) {
		if required {
			return "", a.bad("%s is required (expected %s)", name, expected)
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(a.fields[name], &s) != nil {
		return "", a.bad("%s must be %s, got %s", name, expected, got(a.fields[name]))
	}
	if maxBytes > 0 && len(s) > maxBytes {
		return "", a.bad("%s is %d bytes, the limit is %d", name, len(s), maxBytes)
	}
	return s, nil
}

// integer reads an integer field from lo to hi; a missing one is def.
func (a args) integer(name string, lo, hi, def int64) (int64, error) {
	if !a.present(name) {
		return def, nil
	}
	var f float64
	if json.Unmarshal(a.fields[name], &f) != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, a.bad("%s must be an integer from %d to %d, got %s", name, lo, hi, got(a.fields[name]))
	}
	return int64(f), nil
}

// selector reads a version field: a version number (1 or more) or a label.
func (a args) selector(name string) (string, error) {
	if !a.present(name) {
		return "", a.bad("%s is required (expected a version number or a label)", name)
	}
	v := bytes.TrimSpace(a.fields[name])
	var n json.Number
	if v[0] != '"' && json.Unmarshal(v, &n) == nil {
		i, err := strconv.Atoi(n.String())
		if err != nil || i < 1 {
			return "", a.bad("%s must be a version number of 1 or more, got %s", name, got(v))
		}
		return strconv.Itoa(i), nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil || s == "" {
		return "", a.bad("%s must be a version number or a label, got %s", name, got(v))
	}
	return s, nil
}

// got shows a value that was refused: itself when short, else its start.
func got(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
