package skills

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// PromptArgument is one entry of a prompt's argument list, as sent to
// prompts::register and shown in a client's argument picker.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

type argKind int

const (
	kindString argKind = iota
	kindInteger
	kindNumber
	kindBoolean
)

func (k argKind) word() string {
	switch k {
	case kindInteger:
		return wordInteger
	case kindNumber:
		return wordNumber
	case kindBoolean:
		return wordBoolean
	}
	return wordString
}

// Argument is the old name of PromptArgument, which the Node and Python
// publishers use too.
//
// Deprecated: use PromptArgument; Argument is removed in the next release.
type Argument = PromptArgument

// argSpec is a derived argument plus what checking it needs.
type argSpec struct {
	PromptArgument
	kind argKind
	typ  reflect.Type // the field's type with pointers removed
}

// ArgumentsOf derives the argument list of a prompt from its Args type (see
// Prompt): one argument per exported field, in declaration order.
func ArgumentsOf[Args any]() ([]PromptArgument, error) {
	specs, err := deriveArguments(reflect.TypeFor[Args]())
	if err != nil {
		return nil, err
	}
	out := make([]PromptArgument, len(specs))
	for i, s := range specs {
		out[i] = s.PromptArgument
	}
	return out, nil
}

// deriveArguments reflects a struct type into argument specs. The name is
// the json name; the description comes from the jsonschema tags
// (`jsonschema:"description=…"` or `jsonschema_description:"…"`); an
// argument is required unless its field is a pointer or tagged omitempty
// (`jsonschema:"required"` makes it required anyway). Only strings,
// integers, floats and booleans (or pointers to them) can be arguments,
// because MCP sends every argument as one string.
func deriveArguments(t reflect.Type) ([]argSpec, error) {
	if t == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("prompt arguments must be a struct type, got %s", t)
	}
	var descriptions map[string]string
	if t.NumField() > 0 {
		descriptions = schemaDescriptions(t)
	}
	var specs []argSpec
	if err := collectFields(t, descriptions, &specs, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	return specs, nil
}

func schemaDescriptions(t reflect.Type) (out map[string]string) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	r := &jsonschema.Reflector{Anonymous: true, AllowAdditionalProperties: true, ExpandedStruct: true, DoNotReference: true}
	s := r.ReflectFromType(t)
	out = map[string]string{}
	if s == nil || s.Properties == nil {
		return out
	}
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		if p.Value != nil && p.Value.Description != "" {
			out[p.Key] = p.Value.Description
		}
	}
	return out
}

func collectFields(t reflect.Type, descriptions map[string]string, specs *[]argSpec, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if err := collectFields(et, descriptions, specs, seen); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft, optional := f.Type, false
		for ft.Kind() == reflect.Pointer {
			ft, optional = ft.Elem(), true
		}
		kind, ok := kindOf(ft)
		if !ok {
			return fmt.Errorf("prompt argument %s has type %s, which MCP cannot send as a string; use a string, integer, float or boolean field", jsonQuote(name), f.Type)
		}
		if hasOption(opts, "omitempty") || hasOption(opts, "omitzero") {
			optional = true
		}
		if hasOption(f.Tag.Get("jsonschema"), "required") {
			optional = false
		}
		*specs = append(*specs, argSpec{
			PromptArgument: PromptArgument{Name: name, Description: descriptions[name], Required: !optional},
			kind:           kind,
			typ:            ft,
		})
	}
	return nil
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if strings.TrimSpace(o) == want {
			return true
		}
	}
	return false
}

func kindOf(t reflect.Type) (argKind, bool) {
	switch t.Kind() {
	case reflect.String:
		return kindString, true
	case reflect.Bool:
		return kindBoolean, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kindInteger, true
	case reflect.Float32, reflect.Float64:
		return kindNumber, true
	}
	return 0, false
}

var (
	integerText = regexp.MustCompile(`^[-+]?[0-9]+$`)
	numberText  = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)
)

// decodeArguments checks the arguments of one prompt call against specs,
// converts MCP's strings to the declared types and decodes the result into
// dst (a pointer to the Args struct). Every problem is reported in one error:
// `prompt "name": problem; problem`. Undeclared keys are ignored; null counts
// as absent.
func decodeArguments(prompt string, specs []argSpec, data json.RawMessage, dst any) error {
	prefix := fmt.Sprintf(fmtArgPrefix, jsonQuote(prompt))
	var in map[string]json.RawMessage
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &in) != nil {
			return fmt.Errorf("%s"+fmtArgsNotObject, prefix, rawText(trimmed))
		}
	}
	var problems []string
	out := make(map[string]json.RawMessage, len(specs))
	for _, s := range specs {
		raw, ok := in[s.Name]
		if ok {
			raw = bytes.TrimSpace(raw)
		}
		if !ok || len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			if s.Required {
				problems = append(problems, fmt.Sprintf(fmtArgMissing, jsonQuote(s.Name)))
			}
			continue
		}
		v, problem := convertArgument(s, raw)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		out[s.Name] = v
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s%s", prefix, strings.Join(problems, "; "))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("%s%v", prefix, err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("%s%v", prefix, err)
	}
	return nil
}

// convertArgument accepts a value of the argument's own JSON type or a
// string that converts unambiguously, and returns its canonical JSON.
func convertArgument(s argSpec, raw json.RawMessage) (json.RawMessage, string) {
	typeProblem := func() (json.RawMessage, string) {
		return nil, fmt.Sprintf(fmtArgType, jsonQuote(s.Name), s.kind.word(), rawText(raw))
	}
	var text string
	isString := raw[0] == '"'
	if isString {
		if json.Unmarshal(raw, &text) != nil {
			return typeProblem()
		}
	}
	switch s.kind {
	case kindString:
		if !isString {
			return typeProblem()
		}
		return raw, ""
	case kindBoolean:
		switch {
		case string(raw) == "true" || isString && text == "true":
			return json.RawMessage("true"), ""
		case string(raw) == "false" || isString && text == "false":
			return json.RawMessage("false"), ""
		}
		return typeProblem()
	case kindInteger:
		if isString {
			if !integerText.MatchString(text) {
				return typeProblem()
			}
		} else if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
			text = string(raw)
		} else {
			return typeProblem()
		}
		return convertInteger(s, text, raw)
	case kindNumber:
		if isString {
			if !numberText.MatchString(text) {
				return typeProblem()
			}
		} else if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
			text = string(raw)
		} else {
			return typeProblem()
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return typeProblem()
		}
		if s.typ.Kind() == reflect.Float32 && math.Abs(f) > math.MaxFloat32 {
			return typeProblem()
		}
		return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64)), ""
	}
	return typeProblem()
}

func convertInteger(s argSpec, text string, raw json.RawMessage) (json.RawMessage, string) {
	typeProblem := fmt.Sprintf(fmtArgType, jsonQuote(s.Name), wordInteger, rawText(raw))
	bits := s.typ.Bits()
	unsigned := s.typ.Kind() >= reflect.Uint && s.typ.Kind() <= reflect.Uint64
	rangeProblem := func() string {
		lo, hi := "", ""
		if unsigned {
			lo, hi = "0", strconv.FormatUint(math.MaxUint64>>(64-bits), 10)
		} else {
			lo = strconv.FormatInt(math.MinInt64>>(64-bits), 10)
			hi = strconv.FormatInt(math.MaxInt64>>(64-bits), 10)
		}
		return fmt.Sprintf(fmtArgRange, jsonQuote(s.Name), wordInteger, lo, hi, rawText(raw))
	}
	// A JSON number like 42.0 or 4e1 is still an integer.
	if !integerText.MatchString(text) {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
			return nil, typeProblem
		}
		if f < math.MinInt64 || f >= math.MaxUint64 {
			return nil, rangeProblem()
		}
		if f >= 0 {
			text = strconv.FormatUint(uint64(f), 10)
		} else {
			text = strconv.FormatInt(int64(f), 10)
		}
	}
	if unsigned {
		t := strings.TrimPrefix(text, "+")
		if strings.HasPrefix(t, "-") {
			if strings.Trim(t[1:], "0") == "" {
				return json.RawMessage("0"), ""
			}
			return nil, rangeProblem()
		}
		u, err := strconv.ParseUint(t, 10, bits)
		if err != nil {
			return nil, rangeProblem()
		}
		return json.RawMessage(strconv.FormatUint(u, 10)), ""
	}
	n, err := strconv.ParseInt(text, 10, bits)
	if err != nil {
		return nil, rangeProblem()
	}
	return json.RawMessage(strconv.FormatInt(n, 10)), ""
}
