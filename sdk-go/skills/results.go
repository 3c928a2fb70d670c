package skills

import (
	"encoding/json"
	"errors"
)

// PromptResult is what a prompt handler returns (and what a section handler
// may return): plain text, {content} or {messages}. Build it with Text,
// Content or Messages; the registry turns the first two into one user-text
// message and passes messages through unchanged.
type PromptResult struct {
	kind     resultKind
	text     string
	messages []PromptMessage
}

type resultKind int

const (
	resultNone resultKind = iota
	resultText
	resultContent
	resultMessages
)

// Text is a result sent as a plain JSON string.
func Text(s string) PromptResult { return PromptResult{kind: resultText, text: s} }

// Content is a result sent as {"content": s}.
func Content(s string) PromptResult { return PromptResult{kind: resultContent, text: s} }

// Messages is a result sent as {"messages": [...]} (multi-turn templates,
// assistant prefills).
func Messages(msgs ...PromptMessage) PromptResult {
	if msgs == nil {
		msgs = []PromptMessage{}
	}
	return PromptResult{kind: resultMessages, messages: msgs}
}

// IsZero reports whether r was built by none of Text, Content or Messages.
func (r PromptResult) IsZero() bool { return r.kind == resultNone }

var errEmptyResult = errors.New("empty PromptResult: build it with skills.Text, skills.Content or skills.Messages")

// MarshalJSON encodes the result in its wire shape.
func (r PromptResult) MarshalJSON() ([]byte, error) {
	switch r.kind {
	case resultText:
		return json.Marshal(r.text)
	case resultContent:
		return json.Marshal(struct {
			Content string `json:"content"`
		}{r.text})
	case resultMessages:
		return json.Marshal(struct {
			Messages []PromptMessage `json:"messages"`
		}{r.messages})
	}
	return nil, errEmptyResult
}

// PromptMessage is one message of an MCP prompt (role "user" or
// "assistant").
type PromptMessage struct {
	Role    string         `json:"role"`
	Content MessageContent `json:"content"`
}

// MessageContent is the content of a PromptMessage: {"type": "text",
// "text": …} for text; the other MCP content types use Data / MimeType /
// Resource.
type MessageContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Resource any    `json:"resource,omitempty"`
}

// UserText is a user message with text content.
func UserText(s string) PromptMessage {
	return PromptMessage{Role: "user", Content: MessageContent{Type: "text", Text: s}}
}

// AssistantText is an assistant message with text content.
func AssistantText(s string) PromptMessage {
	return PromptMessage{Role: "assistant", Content: MessageContent{Type: "text", Text: s}}
}
