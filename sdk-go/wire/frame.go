package wire

import (
	"bytes"
	"encoding/json"
)

// ResultFrame is the part of an invocationresult frame that routing needs.
// Result and Error alias the scanned frame; nothing is copied.
type ResultFrame struct {
	InvocationID string
	FunctionID   string
	Result       json.RawMessage
	Error        json.RawMessage
}

var resultType = []byte(`"` + string(TypeInvocationResult) + `"`)

// ScanResultFrame reads an invocationresult frame without decoding its
// result. encoding/json walks a frame twice (validation, then decoding), and
// results can be megabytes (the iii://skills index): engines forward them and
// callers hand them on, so locating the value is all that is needed here.
//
// Keys may come in any order and unknown keys are skipped. The result is
// located, not validated: whoever decodes it reports malformed JSON. ok is
// false for anything else (another frame type, an escaped id, a frame whose
// top level does not scan): the caller then takes the full decoding path,
// which logs what was wrong.
func ScanResultFrame(data []byte) (f ResultFrame, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return f, false
	}
	isResult := false
	for {
		i = skipSpace(data, i+1)
		keyEnd := stringEnd(data, i)
		if keyEnd < 0 {
			return f, false
		}
		key := data[i+1 : keyEnd-1]
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return f, false
		}
		i = skipSpace(data, i+1)
		end := valueEnd(data, i)
		if end < 0 {
			return f, false
		}
		value := data[i:end]
		switch string(key) {
		case "type":
			if !bytes.Equal(value, resultType) {
				return f, false // other frames are small: decode them fully
			}
			isResult = true
		case "invocation_id":
			id, plain := plainString(value)
			if !plain {
				return f, false
			}
			f.InvocationID = id
		case "function_id":
			id, plain := plainString(value)
			if !plain {
				return f, false
			}
			f.FunctionID = id
		case "result":
			f.Result = json.RawMessage(value)
		case "error":
			if string(value) != "null" {
				f.Error = json.RawMessage(value)
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return f, false
		}
		switch data[i] {
		case ',':
		case '}':
			if skipSpace(data, i+1) != len(data) {
				return f, false
			}
			return f, isResult && f.InvocationID != ""
		default:
			return f, false
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at i, or -1.
func stringEnd(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	i++
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		// The quote is escaped when an odd run of backslashes precedes it.
		bs := 0
		for j := q - 1; j >= i && data[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// valueEnd returns the index just past the JSON value starting at i, or -1.
// Containers are matched by bracket depth with strings jumped over whole.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				e := stringEnd(data, i)
				if e < 0 {
					return -1
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // number, true, false, null
		start := i
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if i == start {
					return -1
				}
				return i
			}
			i++
		}
		return -1
	}
}

// plainString returns the content of a JSON string without escapes.
func plainString(value []byte) (string, bool) {
	if len(value) < 2 || value[0] != '"' || bytes.IndexByte(value, '\\') >= 0 {
		return "", false
	}
	return string(value[1 : len(value)-1]), true
}

// InvokeFrame is the part of an invokefunction frame that routing needs.
// Data and Metadata alias the scanned frame; nothing is copied.
type InvokeFrame struct {
	InvocationID string
	FunctionID   string
	Traceparent  string
	Baggage      string
	Data         json.RawMessage
	Metadata     json.RawMessage
	Action       *Action
	TriggerID    string
}

var invokeType = []byte(`"` + string(TypeInvokeFunction) + `"`)

// ScanInvokeFrame reads an invokefunction frame without decoding its data,
// like ScanResultFrame: an engine only routes the payload (a skill body of
// kilobytes, say) to the function's owner or a built-in, which decode it.
// Data and Metadata are located, not validated. ok is false for anything
// else (another frame type, a string with escapes, a frame whose top level
// does not scan, no function_id): the caller then decodes fully.
func ScanInvokeFrame(data []byte) (f InvokeFrame, ok bool) {
	isInvoke := false
	scanned := scanObject(data, func(key, value []byte) bool {
		var plain bool
		switch string(key) {
		case "type":
			isInvoke = bytes.Equal(value, invokeType)
			return isInvoke
		case "invocation_id":
			f.InvocationID, plain = plainString(value)
			return plain
		case "function_id":
			f.FunctionID, plain = plainString(value)
			return plain
		case "traceparent":
			f.Traceparent, plain = plainString(value)
			return plain || string(value) == "null"
		case "baggage":
			f.Baggage, plain = plainString(value)
			return plain || string(value) == "null"
		case "trigger_id":
			f.TriggerID, plain = plainString(value)
			return plain || string(value) == "null"
		case "data":
			f.Data = json.RawMessage(value)
		case "metadata":
			if string(value) != "null" {
				f.Metadata = json.RawMessage(value)
			}
		case "action":
			if string(value) != "null" {
				f.Action = &Action{}
				return json.Unmarshal(value, f.Action) == nil
			}
		}
		return true
	})
	return f, scanned && isInvoke && f.FunctionID != ""
}

// ScanObject calls member with each top-level key (without its quotes) and
// value of the object data, in order, until member returns false. It
// reports whether the whole object scanned and every member call returned
// true; a key with escapes fails the scan. Values are located, not
// validated: call it on JSON already known to be valid (json.Valid) when
// the values matter, as the engine does for its built-ins' inputs.
func ScanObject(data []byte, member func(key, value []byte) bool) bool {
	return scanObject(data, member)
}

// PlainString returns the content of the JSON string literal value when it
// holds no escapes; ok is false for anything else.
func PlainString(value []byte) (s string, ok bool) {
	return plainString(value)
}

// scanObject is ScanObject.
func scanObject(data []byte, member func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	for {
		i = skipSpace(data, i+1)
		keyEnd := stringEnd(data, i)
		if keyEnd < 0 {
			return false
		}
		key := data[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		end := valueEnd(data, i)
		if end < 0 || !member(key, data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}
