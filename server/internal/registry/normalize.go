package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
)

// firstByte returns the first non-whitespace byte of raw, or 0.
func firstByte(raw []byte) byte {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

// isNullOrEmpty reports a JSON null or an absent value.
func isNullOrEmpty(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// objectFields decodes raw as a JSON object. A repeated key resolves to its
// last occurrence, as in serde_json.
func objectFields(raw []byte) (map[string]json.RawMessage, bool) {
	if firstByte(raw) != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

// asString decodes raw when it is a JSON string.
func asString(raw json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	return Unquote(t)
}

// NormalizeSectionOutput turns the output of a function behind a section
// URI into resource text:
//
//   - a JSON string is served as is, as text/markdown;
//   - an object whose "content" is a string serves that string as
//     text/markdown ({"content": 5} falls through);
//   - anything else (other objects, arrays, numbers, booleans, null) is
//     pretty-printed like serde_json::to_string_pretty (PrettyJSON) and
//     served as application/json.
//
// An absent output (empty raw) counts as null. Bytes that are not valid
// JSON cannot arrive from an engine; they are served verbatim as
// application/json rather than dropped.
func NormalizeSectionOutput(raw json.RawMessage) (text, mime string) {
	if s, ok := asString(raw); ok {
		return s, MimeMarkdown
	}
	if m, ok := objectFields(raw); ok {
		if s, ok := asString(m["content"]); ok {
			return s, MimeMarkdown
		}
	}
	if isNullOrEmpty(raw) {
		return "null", MimeJSON
	}
	pretty, err := PrettyJSON(raw)
	if err != nil {
		return string(raw), MimeJSON
	}
	return pretty, MimeJSON
}

// PromptMessage is the single user message built from a string or
// {content} prompt output.
type PromptMessage struct {
	Content PromptTextContent `json:"content"`
	Role    string            `json:"role"`
}

// PromptTextContent is the content of a PromptMessage.
type PromptTextContent struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// UserTextMessage returns {"content":{"text":text,"type":"text"},"role":"user"}.
func UserTextMessage(text string) json.RawMessage {
	return marshalNoEscape(PromptMessage{Content: PromptTextContent{Text: text, Type: "text"}, Role: "user"})
}

// NormalizePromptOutput turns a prompt handler's output into MCP messages.
// Checks run in upstream order:
//
//  1. a JSON string becomes one user text message;
//  2. an object with a "messages" array passes the array through element
//     by element, unvalidated (it wins over "content");
//  3. an object whose "content" is a string becomes one user text message;
//  4. anything else fails with MsgPromptUnsupportedShape.
func NormalizePromptOutput(raw json.RawMessage) ([]json.RawMessage, error) {
	if s, ok := asString(raw); ok {
		return []json.RawMessage{UserTextMessage(s)}, nil
	}
	if m, ok := objectFields(raw); ok {
		if msgs, ok := m["messages"]; ok && firstByte(msgs) == '[' {
			var out []json.RawMessage
			if err := json.Unmarshal(msgs, &out); err == nil {
				if out == nil {
					out = []json.RawMessage{}
				}
				return out, nil
			}
		}
		if s, ok := asString(m["content"]); ok {
			return []json.RawMessage{UserTextMessage(s)}, nil
		}
	}
	return nil, errors.New(MsgPromptUnsupportedShape)
}

// NormalizePromptArguments returns what a prompt handler receives: {} when
// arguments are null or absent, otherwise the value unchanged (non-objects
// included).
func NormalizePromptArguments(raw json.RawMessage) json.RawMessage {
	if isNullOrEmpty(raw) {
		return json.RawMessage(`{}`)
	}
	return raw
}

// marshalNoEscape encodes v like serde_json would: no HTML escaping, no
// trailing newline.
func marshalNoEscape(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only called with plain structs of strings; cannot fail.
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// PrettyJSON re-renders a JSON document the way serde_json::to_string_pretty
// prints a serde_json::Value: two-space indentation, `": "` after keys,
// object keys in bytewise order (a repeated key keeps its last value),
// `{}` and `[]` for empty containers, no HTML escaping, non-ASCII written
// as is, control characters escaped as \b \f \n \r \t or \u00xx. Number
// literals are kept exactly as written (e.g. 1.0 stays 1.0).
func PrettyJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errors.New("trailing characters after JSON value")
	}
	var b strings.Builder
	b.Grow(len(raw) * 2)
	writePretty(&b, v, 0)
	return b.String(), nil
}

func writeIndent(b *strings.Builder, depth int) {
	b.WriteByte('\n')
	for range depth {
		b.WriteString("  ")
	}
}

func writePretty(b *strings.Builder, v any, depth int) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(string(x))
	case string:
		writeJSONString(b, x)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeIndent(b, depth+1)
			writePretty(b, e, depth+1)
		}
		writeIndent(b, depth)
		b.WriteByte(']')
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeIndent(b, depth+1)
			writeJSONString(b, k)
			b.WriteString(": ")
			writePretty(b, x[k], depth+1)
		}
		writeIndent(b, depth)
		b.WriteByte('}')
	}
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s with serde_json's escaping rules.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var esc string
		switch c {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\b':
			esc = `\b`
		case '\f':
			esc = `\f`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			if c >= 0x20 {
				continue
			}
			esc = `\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf])
		}
		b.WriteString(s[start:i])
		b.WriteString(esc)
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
