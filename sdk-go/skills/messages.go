package skills

import (
	"bytes"
	"encoding/json"
	"strings"
)

// GaveUpMessage is logged, at warning level and exactly, when boot-time
// registration reaches its deadline.
const GaveUpMessage = "skills handshake gave up; install / start it and restart this worker"

// Messages of prompt arguments checked at call time (the registry's own
// validation messages come from sdk-go/rules); %s are jsonQuote'd names and
// the JSON text of the received value.
const (
	fmtArgPrefix     = "prompt %s: "
	fmtArgMissing    = "missing required argument %s"
	fmtArgType       = "argument %s must be %s, got %s"
	fmtArgRange      = "argument %s must be %s between %s and %s, got %s"
	fmtArgsNotObject = "arguments must be an object, got %s"
)

// Type words of prompt-argument messages.
const (
	wordString  = "a string"
	wordInteger = "an integer"
	wordNumber  = "a number"
	wordBoolean = "a boolean"
)

// jsonQuote is the JSON text of s (like JavaScript's JSON.stringify), which
// the prompt-argument messages use for names.
func jsonQuote(s string) string {
	return jsonText(s)
}

// jsonText encodes v as compact JSON without HTML escaping.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// rawText is the compact JSON text of a received value.
func rawText(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
