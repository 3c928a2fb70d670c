package skills

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The validation vectors are shared with the Node and Python publishers
// (conformance/vectors/validation.json): the three copies of the rules are
// checked against the same cases, so they cannot drift apart.

type vectorCase struct {
	Input      json.RawMessage `json:"input"`
	OK         bool            `json:"ok"`
	Error      json.RawMessage `json:"error"`
	FunctionID string          `json:"function_id"`
}

type vectorFile struct {
	SkillID     []vectorCase `json:"skill_id"`
	SkillBody   []vectorCase `json:"skill_body"`
	SectionPath []vectorCase `json:"section_path"`
	PromptName  []vectorCase `json:"prompt_name"`
	Prompt      []vectorCase `json:"prompt"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "conformance", "vectors", "validation.json"))
	if err != nil {
		t.Fatalf("the shared validation vectors: %v", err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("conformance/vectors/validation.json: %v", err)
	}
	return f
}

// expand turns a vector string (a string, or a list of strings and
// {"repeat", "times"} parts) into the string it stands for.
func expand(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		t.Fatalf("vector string %s: want a string or a list of parts", raw)
	}
	var b strings.Builder
	for _, p := range parts {
		var rep struct {
			Repeat *string `json:"repeat"`
			Times  int     `json:"times"`
		}
		if json.Unmarshal(p, &rep) == nil && rep.Repeat != nil {
			b.WriteString(strings.Repeat(*rep.Repeat, rep.Times))
			continue
		}
		b.WriteString(expand(t, p))
	}
	return b.String()
}

// check compares a rule's verdict with the case.
func (c vectorCase) check(t *testing.T, group string, i int, err error) {
	t.Helper()
	switch {
	case c.Error == nil && err != nil:
		t.Errorf("%s[%d]: refused with %q; want accepted", group, i, err)
	case c.Error != nil && err == nil:
		t.Errorf("%s[%d]: accepted; want %q", group, i, expand(t, c.Error))
	case c.Error != nil && err.Error() != expand(t, c.Error):
		t.Errorf("%s[%d]: refused with\n  %q\nwant\n  %q", group, i, err, expand(t, c.Error))
	}
}

func TestSharedValidationVectors(t *testing.T) {
	f := loadVectors(t)
	for i, c := range f.SkillID {
		c.check(t, "skill_id", i, ValidateSkillID(expand(t, c.Input)))
	}
	for i, c := range f.SkillBody {
		c.check(t, "skill_body", i, ValidateSkillBody(expand(t, c.Input)))
	}
	for i, c := range f.SectionPath {
		fid, err := SectionFunctionID(expand(t, c.Input))
		c.check(t, "section_path", i, err)
		if err == nil && fid != c.FunctionID {
			t.Errorf("section_path[%d]: function id %q; want %q", i, fid, c.FunctionID)
		}
	}
	for i, c := range f.PromptName {
		c.check(t, "prompt_name", i, ValidatePromptName(expand(t, c.Input)))
	}
	for i, c := range f.Prompt {
		var in struct {
			Name        string   `json:"name"`
			Description string   `json:"description"`
			FunctionID  string   `json:"function_id"`
			Arguments   []string `json:"arguments"`
		}
		if err := json.Unmarshal(c.Input, &in); err != nil {
			t.Fatalf("prompt[%d]: %v", i, err)
		}
		args := make([]PromptArgument, len(in.Arguments))
		for j, n := range in.Arguments {
			args[j] = PromptArgument{Name: n}
		}
		c.check(t, "prompt", i, ValidatePrompt(in.Name, in.Description, in.FunctionID, args))
	}
	if len(f.SkillID)*len(f.SkillBody)*len(f.SectionPath)*len(f.PromptName)*len(f.Prompt) == 0 {
		t.Fatal("a group of the shared vectors is empty")
	}
}
