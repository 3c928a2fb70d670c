package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
	kindArgs
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

// decodeStruct walks a JSON object in key order, checking each known field
// against its spec, and returns the raw values of the known fields.
func decodeStruct(raw json.RawMessage, structName string, specs []fieldSpec) (map[string]json.RawMessage, error) {
	if firstByte(raw) != '{' {
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil, errors.New("EOF while parsing a value")
		}
		return nil, invalidType(raw, "struct "+structName)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	got := make(map[string]json.RawMessage, len(specs))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		for _, s := range specs {
			if s.name != key {
				continue
			}
			if _, dup := got[key]; dup {
				return nil, fmt.Errorf(FmtDuplicateField, key)
			}
			if err := checkKind(v, s.kind); err != nil {
				return nil, err
			}
			got[key] = v
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing characters")
	}
	for _, s := range specs {
		if _, ok := got[s.name]; s.required && !ok {
			return nil, fmt.Errorf(FmtMissingField, s.name)
		}
	}
	return got, nil
}

func checkKind(v json.RawMessage, k fieldKind) error {
	c := firstByte(v)
	switch k {
	case kindString:
		if c != '"' {
			return invalidType(v, "a string")
		}
	case kindOptString:
		if c != '"' && c != 'n' {
			return invalidType(v, "a string")
		}
	case kindBool:
		if c != 't' && c != 'f' {
			return invalidType(v, "a boolean")
		}
	case kindArgs:
		if c != '[' {
			return invalidType(v, "a sequence")
		}
		// serde decodes the elements as soon as it meets the key, so
		// their errors win over fields missing later in the row.
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return err
		}
		for _, it := range items {
			if _, err := DecodePromptArgument(it); err != nil {
				return err
			}
		}
	}
	return nil
}

func str(raw json.RawMessage) string {
	s, _ := asString(raw)
	return s
}

// DecodeStoredSkill decodes a skills-scope row.
func DecodeStoredSkill(raw json.RawMessage) (StoredSkill, error) {
	f, err := decodeStruct(raw, "StoredSkill", storedSkillFields)
	if err != nil {
		return StoredSkill{}, err
	}
	return StoredSkill{ID: str(f["id"]), Skill: str(f["skill"]), RegisteredAt: str(f["registered_at"])}, nil
}

// DecodeStoredPrompt decodes a prompts-scope row. A missing "arguments"
// key means no arguments.
func DecodeStoredPrompt(raw json.RawMessage) (StoredPrompt, error) {
	f, err := decodeStruct(raw, "StoredPrompt", storedPromptFields)
	if err != nil {
		return StoredPrompt{}, err
	}
	p := StoredPrompt{
		Arguments:    []PromptArgument{},
		Description:  str(f["description"]),
		FunctionID:   str(f["function_id"]),
		Name:         str(f["name"]),
		RegisteredAt: str(f["registered_at"]),
	}
	if a, ok := f["arguments"]; ok {
		var items []json.RawMessage
		if err := json.Unmarshal(a, &items); err != nil {
			return StoredPrompt{}, err
		}
		for _, it := range items {
			arg, err := DecodePromptArgument(it)
			if err != nil {
				return StoredPrompt{}, err
			}
			p.Arguments = append(p.Arguments, arg)
		}
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
	a := PromptArgument{Name: str(f["name"])}
	if d, ok := f["description"]; ok && firstByte(d) == '"' {
		s := str(d)
		a.Description = &s
	}
	if r, ok := f["required"]; ok {
		a.Required = firstByte(r) == 't'
	}
	return a, nil
}
