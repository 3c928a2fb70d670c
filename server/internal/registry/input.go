package registry

import (
	"bytes"
	"encoding/json"
)

// Function payloads are decoded once, with the same serde strictness as the
// stored rows (decodeStruct): the payload must be a JSON object, required
// keys present, known keys of the right JSON type, unknown keys (such as the
// engine's _caller_worker_id) ignored. The messages are the serde ones, so a
// payload {"id": 5} reads "invalid type: integer `5`, expected a string"
// wherever it is decoded. Every error here is the caller's fault: the worker
// answers it with CodeInvalidArguments.

// Input struct names, as upstream's serde derives print them.
const (
	inRegisterSkill    = "RegisterSkillInput"
	inUnregisterSkill  = "UnregisterSkillInput"
	inReadResource     = "ReadResourceInput"
	inFetchSkill       = "FetchSkillInput"
	inRegisterPrompt   = "RegisterPromptInput"
	inUnregisterPrompt = "UnregisterPromptInput"
	inPromptGet        = "PromptGetInput"
)

var (
	registerSkillFields  = []fieldSpec{{"id", kindString, true}, {"skill", kindString, true}, {"message", kindOptString, false}, {"author", kindOptString, false}, {"signature", kindOptString, false}}
	idFields             = []fieldSpec{{"id", kindString, true}}
	nameFields           = []fieldSpec{{"name", kindString, true}}
	uriFields            = []fieldSpec{{"uri", kindString, true}}
	fetchFields          = []fieldSpec{{"uri", kindOptString, false}, {"uris", kindOptStrings, false}}
	registerPromptFields = []fieldSpec{
		{"name", kindString, true},
		{"description", kindString, true},
		{"function_id", kindString, true},
		{"arguments", kindArgs, false},
		{"message", kindOptString, false},
		{"author", kindOptString, false},
		{"signature", kindOptString, false},
	}
	promptGetFields = []fieldSpec{{"name", kindString, true}, {"arguments", kindAny, false}}
)

// decodeInput is decodeStruct for a function payload: an absent payload
// reads as null.
func decodeInput(raw json.RawMessage, structName string, specs []fieldSpec) (fields, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null")
	}
	return decodeStruct(raw, structName, specs)
}

// RegisterSkillInput is the payload of skills::register. Message, Author
// and Signature are ours (optional): they describe the version a changed
// body becomes; Signature is the armored SSH signature (sshsig, namespace
// iii-skills) over the exact UTF-8 bytes of Skill.
type RegisterSkillInput struct{ ID, Skill, Message, Author, Signature string }

// DecodeRegisterSkillInput decodes a skills::register payload.
func DecodeRegisterSkillInput(raw json.RawMessage) (RegisterSkillInput, error) {
	f, err := decodeInput(raw, inRegisterSkill, registerSkillFields)
	if err != nil {
		return RegisterSkillInput{}, err
	}
	return RegisterSkillInput{ID: f.str("id"), Skill: f.str("skill"), Message: f.str("message"), Author: f.str("author"), Signature: f.str("signature")}, nil
}

// DecodeUnregisterSkillInput returns the id of a skills::unregister payload.
func DecodeUnregisterSkillInput(raw json.RawMessage) (string, error) {
	f, err := decodeInput(raw, inUnregisterSkill, idFields)
	if err != nil {
		return "", err
	}
	return f.str("id"), nil
}

// DecodeEmptyInput checks a payload that carries nothing (listings,
// templates): it must still be an object. structName is upstream's name of
// the input struct (EmptyInput, ListSkillsInput, ListPromptsInput).
func DecodeEmptyInput(raw json.RawMessage, structName string) error {
	_, err := decodeInput(raw, structName, nil)
	return err
}

// DecodeReadResourceInput returns the uri of a skills::resources-read payload.
func DecodeReadResourceInput(raw json.RawMessage) (string, error) {
	f, err := decodeInput(raw, inReadResource, uriFields)
	if err != nil {
		return "", err
	}
	return f.str("uri"), nil
}

// FetchInput is the payload of skill::fetch / skills::fetch_skill; URI is
// nil when absent or null.
type FetchInput struct {
	URI  *string
	URIs []string
}

// DecodeFetchInput decodes a skill::fetch payload.
func DecodeFetchInput(raw json.RawMessage) (FetchInput, error) {
	f, err := decodeInput(raw, inFetchSkill, fetchFields)
	if err != nil {
		return FetchInput{}, err
	}
	var in FetchInput
	if firstByte(f.raw["uri"]) == '"' {
		s := f.str("uri")
		in.URI = &s
	}
	if v := f.raw["uris"]; firstByte(v) == '[' {
		if err := json.Unmarshal(v, &in.URIs); err != nil {
			return FetchInput{}, err
		}
	}
	return in, nil
}

// RegisterPromptInput is the payload of prompts::register; an absent
// "arguments" key means none.
type RegisterPromptInput struct {
	Name, Description, FunctionID string
	Arguments                     []PromptArgument
	// Signature is ours (optional): the armored SSH signature over the
	// prompt's canonical JSON (docs/trust.md).
	Signature string
	// Message and Author are ours (optional): they describe the version a
	// changed definition becomes.
	Message, Author string
}

// DecodeRegisterPromptInput decodes a prompts::register payload.
func DecodeRegisterPromptInput(raw json.RawMessage) (RegisterPromptInput, error) {
	f, err := decodeInput(raw, inRegisterPrompt, registerPromptFields)
	if err != nil {
		return RegisterPromptInput{}, err
	}
	args := f.args
	if args == nil {
		args = []PromptArgument{}
	}
	return RegisterPromptInput{Name: f.str("name"), Description: f.str("description"), FunctionID: f.str("function_id"), Arguments: args,
		Message: f.str("message"), Author: f.str("author"), Signature: f.str("signature")}, nil
}

// DecodeUnregisterPromptInput returns the name of a prompts::unregister
// payload.
func DecodeUnregisterPromptInput(raw json.RawMessage) (string, error) {
	f, err := decodeInput(raw, inUnregisterPrompt, nameFields)
	if err != nil {
		return "", err
	}
	return f.str("name"), nil
}

// PromptGetInput is the payload of prompts::mcp-get; Arguments is the raw
// value (NormalizePromptArguments decides what it means).
type PromptGetInput struct {
	Name      string
	Arguments json.RawMessage
}

// DecodePromptGetInput decodes a prompts::mcp-get payload.
func DecodePromptGetInput(raw json.RawMessage) (PromptGetInput, error) {
	f, err := decodeInput(raw, inPromptGet, promptGetFields)
	if err != nil {
		return PromptGetInput{}, err
	}
	return PromptGetInput{Name: f.str("name"), Arguments: f.raw["arguments"]}, nil
}
