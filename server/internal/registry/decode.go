package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// Stored rows are decoded with serde's strictness, because upstream drops
// rows that do not decode when listing and reports the serde message when
// reading: unknown keys are ignored, a required key that is missing gives
// FmtMissingField, a key given twice gives FmtDuplicateField, and a value
// of the wrong JSON type gives FmtInvalidType. (serde_json would append
// " at line L column C"; positions are not reproduced.)

// fieldKind is the JSON type a stored field accepts.
type fieldKind int

const (
	kindString fieldKind = iota
	kindOptString
	kindBool
	kindArgs       // a sequence of PromptArgument
	kindOptStrings // absent, null or a sequence of strings
	kindAny        // any JSON value
)

type fieldSpec struct {
	name     string
	kind     fieldKind
	required bool
}

var (
	storedSkillFields = []fieldSpec{
		{"id", kindString, true},
		{"skill", kindString, true},
		{"registered_at", kindString, true},
	}
	storedPromptFields = []fieldSpec{
		{"name", kindString, true},
		{"description", kindString, true},
		{"arguments", kindArgs, false},
		{"function_id", kindString, true},
		{"registered_at", kindString, true},
	}
	promptArgumentFields = []fieldSpec{
		{"name", kindString, true},
		{"description", kindOptString, false},
		{"required", kindBool, false},
	}
)

// unexpected describes a JSON value the way serde's Unexpected displays it.
func unexpected(raw json.RawMessage) string {
	switch firstByte(raw) {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean `" + string(bytes.TrimSpace(raw)) + "`"
	case '"':
		s, _ := asString(raw)
		return "string " + rules.RustQuote(s)
	case '[':
		return "sequence"
	case '{':
		return "map"
	}
	num := string(bytes.TrimSpace(raw))
	if bytes.ContainsAny(raw, ".eE") {
		return "floating point `" + num + "`"
	}
	return "integer `" + num + "`"
}

func invalidType(raw json.RawMessage, expected string) error {
	return fmt.Errorf(FmtInvalidType, unexpected(raw), expected)
}

// InvalidType is serde's refusal of raw where expected was wanted
// ("invalid type: integer `5`, expected a string"), for the other
// surfaces that answer as an upstream serde decoder does (iii-directory).
func InvalidType(raw json.RawMessage, expected string) error { return invalidType(raw, expected) }

// fields are the known fields of a decoded object: their raw values, and
// the decoded prompt arguments when a kindArgs field was present.
type fields struct {
	raw  map[string]json.RawMessage
	strs map[string]string // the decoded string fields
	args []PromptArgument
}

// str returns a string field ("" when absent or null).
func (f fields) str(name string) string { return f.strs[name] }

// decodeStruct walks a JSON object in key order, checking each known field
// against its spec, and returns the known fields.
func decodeStruct(raw json.RawMessage, structName string, specs []fieldSpec) (fields, error) {
	var f fields
	if firstByte(raw) != '{' {
		if len(bytes.TrimSpace(raw)) == 0 {
			return f, errors.New("EOF while parsing a value")
		}
		return f, invalidType(raw, "struct "+structName)
	}
	got := make(map[string]json.RawMessage, len(specs))
	f.raw = got
	f.strs = make(map[string]string, len(specs))
	err := eachMember(raw, func(key string, v json.RawMessage) error {
		for _, s := range specs {
			if s.name != key {
				continue
			}
			if _, dup := got[key]; dup {
				return fmt.Errorf(FmtDuplicateField, key)
			}
			args, err := checkKind(v, s.kind)
			if err != nil {
				return err
			}
			if s.kind == kindArgs {
				f.args = args
			}
			if (s.kind == kindString || s.kind == kindOptString) && firstByte(v) == '"' {
				str, ok := Unquote(bytes.TrimSpace(v))
				if !ok {
					return errBadString
				}
				f.strs[key] = str
			}
			got[key] = v
		}
		return nil
	})
	if err != nil {
		return f, err
	}
	for _, s := range specs {
		if _, ok := got[s.name]; s.required && !ok {
			return f, fmt.Errorf(FmtMissingField, s.name)
		}
	}
	return f, nil
}

// checkKind checks a field's JSON type; a kindArgs field's elements are
// decoded here (serde decodes them as soon as it meets the key, so their
// errors win over fields missing later in the row) and returned.
func checkKind(v json.RawMessage, k fieldKind) ([]PromptArgument, error) {
	c := firstByte(v)
	switch k {
	case kindString:
		if c != '"' {
			return nil, invalidType(v, "a string")
		}
	case kindOptString:
		if c != '"' && c != 'n' {
			return nil, invalidType(v, "a string")
		}
	case kindBool:
		if c != 't' && c != 'f' {
			return nil, invalidType(v, "a boolean")
		}
	case kindOptStrings:
		if c == 'n' {
			return nil, nil
		}
		if c != '[' {
			return nil, invalidType(v, "a sequence")
		}
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		for _, it := range items {
			if firstByte(it) != '"' {
				return nil, invalidType(it, "a string")
			}
		}
	case kindArgs:
		if c != '[' {
			return nil, invalidType(v, "a sequence")
		}
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		args := make([]PromptArgument, 0, len(items))
		for _, it := range items {
			a, err := DecodePromptArgument(it)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
		}
		return args, nil
	}
	return nil, nil
}

// DecodeStoredSkill decodes a skills-scope row.
func DecodeStoredSkill(raw json.RawMessage) (StoredSkill, error) {
	f, err := decodeStruct(raw, "StoredSkill", storedSkillFields)
	if err != nil {
		return StoredSkill{}, err
	}
	return StoredSkill{ID: f.str("id"), Skill: f.str("skill"), RegisteredAt: f.str("registered_at")}, nil
}

// DecodeStoredPrompt decodes a prompts-scope row. A missing "arguments"
// key means no arguments.
func DecodeStoredPrompt(raw json.RawMessage) (StoredPrompt, error) {
	f, err := decodeStruct(raw, "StoredPrompt", storedPromptFields)
	if err != nil {
		return StoredPrompt{}, err
	}
	p := StoredPrompt{
		Arguments:    f.args,
		Description:  f.str("description"),
		FunctionID:   f.str("function_id"),
		Name:         f.str("name"),
		RegisteredAt: f.str("registered_at"),
	}
	if p.Arguments == nil {
		p.Arguments = []PromptArgument{}
	}
	return p, nil
}

// DecodePromptArgument decodes one argument: "name" is required,
// "description" may be absent or null, "required" defaults to false.
func DecodePromptArgument(raw json.RawMessage) (PromptArgument, error) {
	f, err := decodeStruct(raw, "PromptArgument", promptArgumentFields)
	if err != nil {
		return PromptArgument{}, err
	}
	a := PromptArgument{Name: f.str("name")}
	if d, ok := f.raw["description"]; ok && firstByte(d) == '"' {
		s := f.str("description")
		a.Description = &s
	}
	if r, ok := f.raw["required"]; ok {
		a.Required = firstByte(r) == 't'
	}
	return a, nil
}
