package skills

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// The exact messages of docs/publishers.md (and of the registry, which the
// server's registry package pins). A change here is a contract change.
func TestValidationMessages(t *testing.T) {
	long := strings.Repeat("a", 65)
	tooLongID := strings.Repeat("a/", 512) + "a"
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"id empty", ValidateSkillID(""), `id must be non-empty`},
		{"id trailing slash", ValidateSkillID("x/"), `id may not have a leading or trailing '/': "x/"`},
		{"id leading slash", ValidateSkillID("/x"), `id may not have a leading or trailing '/': "/x"`},
		{"id too long", ValidateSkillID(tooLongID), `id too long (1025 chars; max 1024): "` + tooLongID + `"`},
		{"id bad segment", ValidateSkillID("a/B"), `invalid id (segment 2 of "a/B"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "B"`},
		{"id empty segment", ValidateSkillID("a//b"), `invalid id (segment 2 of "a//b"): segment must be non-empty`},
		{"id long segment", ValidateSkillID(long), `invalid id (segment 1 of "` + long + `"): segment too long (65 chars; max 64): "` + long + `"`},
		{"id fn reserved", ValidateSkillID("fn/x"), `id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/x"`},
		{"id quoting", ValidateSkillID("a\"b\n"), `invalid id (segment 1 of "a\"b\n"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "a\"b\n"`},
		{"body empty", ValidateSkillBody(""), `skill must be non-empty`},
		{"body too large", ValidateSkillBody(strings.Repeat("x", rules.MaxSkillBytes+1)), `skill body too large (262145 bytes; max 262144)`},
		{"name empty", ValidatePromptName(""), `name must be non-empty`},
		{"name too long", ValidatePromptName(long), `name too long (65 chars; max 64)`},
		{"name chars", ValidatePromptName("Send Email"), `name may only contain lowercase ASCII letters, digits, '-' and '_': "Send Email"`},
		{"description", ValidatePrompt("x", "  ", "f::x", nil), `description must be non-empty`},
		{"function id", ValidatePrompt("x", "d", " ", nil), `function_id must be non-empty`},
		{"argument empty", ValidatePrompt("x", "d", "f::x", []PromptArgument{{Name: " "}}), `argument name must be non-empty`},
		{"argument duplicate", ValidatePrompt("x", "d", "f::x", []PromptArgument{{Name: "a"}, {Name: "a"}}), `duplicate argument name: a`},
		{"prompt internal", ValidatePrompt("x", "d", "state::set", nil), `Prompt handler 'state::set' is in an internal namespace and cannot back a prompt`},
	}
	for _, c := range cases {
		var ve *ValidationError
		if !errors.As(c.err, &ve) {
			t.Errorf("%s: got %v; want a *ValidationError", c.name, c.err)
			continue
		}
		if ve.Message != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, ve.Message, c.want)
		}
	}
	for _, ok := range []error{ValidateSkillID("resend/email/send"), ValidateSkillID("docs/fn"),
		ValidateSkillBody(strings.Repeat("x", rules.MaxSkillBytes)), ValidatePromptName("send-email_2"),
		ValidatePrompt("x", "d", "prompt::x", []PromptArgument{{Name: "a"}, {Name: "b"}})} {
		if ok != nil {
			t.Errorf("unexpected error %v", ok)
		}
	}
}

func TestSectionFunctionID(t *testing.T) {
	fid, err := SectionFunctionID("resend/email/send")
	if err != nil || fid != "resend::email::send" {
		t.Fatalf("got %q, %v", fid, err)
	}
	for path, want := range map[string]string{
		"state/set":  `Function 'state::set' is in an internal namespace and cannot back a skill resource`,
		"a/B":        `invalid section URI segment "B": segment may only contain lowercase ASCII letters, digits, '-' and '_': "B"`,
		"a//b":       `invalid section URI segment "": segment must be non-empty`,
		"":           `invalid section URI segment "": segment must be non-empty`,
		"skills/x":   `Function 'skills::x' is in an internal namespace and cannot back a skill resource`,
		"iii/on_foo": `Function 'iii::on_foo' is in an internal namespace and cannot back a skill resource`,
	} {
		if _, err := SectionFunctionID(path); err == nil || err.Error() != want {
			t.Errorf("%q: got %v; want %s", path, err, want)
		}
	}
}

// The messages docs/publishers.md quotes verbatim come out of this package
// verbatim.
func TestMessagesAppearInContractDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "publishers.md"))
	if err != nil {
		t.Fatalf("read the contract: %v", err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	type countArgs struct {
		Count int `json:"count"`
	}
	type sendArgs struct {
		To string `json:"to"`
	}
	specs, _ := deriveArguments(typeOf[sendArgs]())
	var s sendArgs
	missing := decodeArguments("send-email", specs, json.RawMessage(`{}`), &s)
	cspecs, _ := deriveArguments(typeOf[countArgs]())
	var c countArgs
	badInt := decodeArguments("send-email", cspecs, json.RawMessage(`{"count":"abc"}`), &c)
	_, sectionErr := SectionFunctionID("state/set")
	want := []string{
		GaveUpMessage,
		missing.Error(),
		badInt.Error(),
		sectionErr.Error(),
		ValidatePrompt("x", "d", "state::set", nil).Error(),
		ValidateSkillID("").Error(),
		ValidateSkillBody("").Error(),
		ValidatePromptName("").Error(),
		ValidatePrompt("x", " ", "f", nil).Error(),
		ValidatePrompt("x", "d", "f", []PromptArgument{{Name: ""}}).Error(),
		`id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker)`,
		`segment may only contain lowercase ASCII letters, digits, '-' and '_'`,
		`name may only contain lowercase ASCII letters, digits, '-' and '_'`,
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("docs/publishers.md does not contain %q", w)
		}
	}
	for _, w := range []string{wordString, wordInteger, wordNumber, wordBoolean} {
		if !strings.Contains(text, "`"+w+"`") {
			t.Errorf("type word %q not in docs/publishers.md", w)
		}
	}
}
