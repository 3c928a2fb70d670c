package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// EncodeMessage encodes a frame for the wire. It differs from json.Marshal in
// two ways that matter on the hot path:
//
//   - RawMessage fields (data, result, formats, metadata, config) are copied
//     verbatim. json.Marshal re-validates and compacts every RawMessage, which
//     for large payloads (a skill body, the iii://skills index) costs more
//     than everything else a call does. Callers must only put valid JSON in
//     them: values they marshalled themselves or received in a decoded frame.
//   - Keys a frame type requires are always written, even when empty:
//     function_id on invocationresult; id, trigger_type and function_id on
//     triggerregistrationresult; description on registertriggertype;
//     data on invokefunction and config on registertrigger (as {} when unset).
func EncodeMessage(m *Message) []byte {
	b := make([]byte, 0, 128+len(m.Data)+len(m.Result)+len(m.RequestFormat)+len(m.ResponseFormat)+len(m.Config)+len(m.Metadata))
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, string(m.Type))

	always := func(key string) bool {
		switch m.Type {
		case TypeInvocationResult:
			return key == "function_id"
		case TypeTriggerRegistrationResult:
			return key == "id" || key == "trigger_type" || key == "function_id"
		case TypeRegisterTriggerType:
			return key == "description"
		}
		return false
	}
	str := func(key, v string) {
		if v == "" && !always(key) {
			return
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = AppendJSONString(b, v)
	}
	raw := func(key string, v json.RawMessage, def string) {
		if len(v) == 0 {
			if def == "" {
				return
			}
			v = json.RawMessage(def)
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = append(b, v...)
	}
	str("id", m.ID)
	str("invocation_id", m.InvocationID)
	str("function_id", m.FunctionID)
	str("trigger_type", m.TriggerType)
	str("description", m.Description)
	raw("request_format", m.RequestFormat, "")
	raw("response_format", m.ResponseFormat, "")
	raw("invocation", m.Invocation, "")
	raw("trigger_request_format", m.TriggerRequestFormat, "")
	raw("call_request_format", m.CallRequestFormat, "")
	dataDefault := ""
	if m.Type == TypeInvokeFunction {
		dataDefault = "{}"
	}
	raw("data", m.Data, dataDefault)
	raw("result", m.Result, "")
	if m.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = AppendJSONString(b, m.Error.Code)
		b = append(b, `,"message":`...)
		b = AppendJSONString(b, m.Error.Message)
		if m.Error.Stacktrace != "" {
			b = append(b, `,"stacktrace":`...)
			b = AppendJSONString(b, m.Error.Stacktrace)
		}
		b = append(b, '}')
	}
	if m.Action != nil {
		b = append(b, `,"action":{"type":`...)
		b = AppendJSONString(b, string(m.Action.Type))
		if m.Action.Queue != "" {
			b = append(b, `,"queue":`...)
			b = AppendJSONString(b, m.Action.Queue)
		}
		b = append(b, '}')
	}
	str("traceparent", m.Traceparent)
	str("baggage", m.Baggage)
	str("trigger_id", m.TriggerID)
	configDefault := ""
	if m.Type == TypeRegisterTrigger {
		configDefault = "{}"
	}
	raw("config", m.Config, configDefault)
	raw("metadata", m.Metadata, "")
	str("namespace", m.Namespace)
	str("trigger_namespace", m.TriggerNamespace)
	str("name", m.Name)
	str("parent_service_id", m.ParentServiceID)
	str("worker_id", m.WorkerID)
	str("previous_worker_id", m.PreviousWorkerID)
	str("reattach_token", m.ReattachToken)
	str("code", m.Code)
	str("worker_name", m.WorkerName)
	str("owner_worker_id", m.OwnerWorkerID)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Control characters, quotes and
// backslashes are escaped, U+2028/U+2029 too (JavaScript line terminators),
// and invalid UTF-8 becomes U+FFFD, as encoding/json does.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
