package engine

import (
	"encoding/json"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// encode writes a protocol frame; raw fields come from decoded frames or the
// engine itself, so they are valid JSON and are copied as is.
func encode(m *wire.Message) []byte { return wire.EncodeMessage(m) }

// encodeInvoke builds the engine → owner invokefunction frame by hand: it is
// the hottest frame and data/metadata are already valid JSON (they come from
// a decoded frame or from the engine itself), so they are spliced as is.
// A non-empty caller is injected into data as "_caller_worker_id" (see
// injectCaller) on the way.
func encodeInvoke(id, functionID string, data json.RawMessage, caller string, metadata json.RawMessage, traceparent, baggage string) []byte {
	b := make([]byte, 0, 120+len(id)+len(functionID)+len(data)+len(caller)+len(metadata)+len(traceparent)+len(baggage))
	b = append(b, `{"type":"invokefunction","invocation_id":`...)
	b = appendString(b, id)
	b = append(b, `,"function_id":`...)
	b = appendString(b, functionID)
	b = append(b, `,"data":`...)
	switch {
	case len(data) == 0:
		b = append(b, "null"...)
	case caller != "":
		b = appendCallerData(b, data, caller)
	default:
		b = append(b, data...)
	}
	if len(metadata) > 0 {
		b = append(b, `,"metadata":`...)
		b = append(b, metadata...)
	}
	if traceparent != "" {
		b = append(b, `,"traceparent":`...)
		b = appendString(b, traceparent)
	}
	if baggage != "" {
		b = append(b, `,"baggage":`...)
		b = appendString(b, baggage)
	}
	return append(b, '}')
}

// encodeResult builds a successful invocationresult. A nil result omits the
// "result" key, which is how the engine says "no value" (state::get of a
// missing key).
func encodeResult(id, functionID string, result json.RawMessage) []byte {
	b := make([]byte, 0, 80+len(id)+len(functionID)+len(result))
	b = append(b, `{"type":"invocationresult","invocation_id":`...)
	b = appendString(b, id)
	b = append(b, `,"function_id":`...)
	b = appendString(b, functionID)
	if result != nil {
		b = append(b, `,"result":`...)
		b = append(b, result...)
	}
	return append(b, '}')
}

// encodeError builds a failed invocationresult.
func encodeError(id, functionID, code, message string) []byte {
	return encode(&wire.Message{
		Type:         wire.TypeInvocationResult,
		InvocationID: id,
		FunctionID:   functionID,
		Error:        &wire.ErrorBody{Code: code, Message: message},
	})
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte { return wire.AppendJSONString(b, s) }

// mustJSON marshals a value the engine built itself.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("engine: marshal: " + err.Error())
	}
	return b
}
