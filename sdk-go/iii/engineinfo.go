package iii

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// The answers of the engine's built-in listings (engine::functions::list /
// ::info, engine::workers::list, engine::triggers::list / ::info,
// engine::registered-triggers::list), declared once: the embedded engine
// encodes them and every consumer decodes them with these types, so the
// two sides cannot drift. Names follow the official iii SDKs (FunctionInfo,
// WorkerInfo, TriggerTypeInfo, TriggerInfo); the JSON is the embedded
// engine's, byte for byte (server/internal/engine/listings_test.go pins it).
//
// Values a consumer re-serves unchanged, and that engines may send with
// another type or leave out, are json.RawMessage, so passing them on does
// not turn a missing value into a zero or fail a whole list on one odd row.

// FunctionInfo is one row of engine::functions::list ({"functions": [...]}).
// Missing formats are listed as null; an empty description and absent
// metadata are left out.
type FunctionInfo struct {
	FunctionID     string          `json:"function_id"`
	Namespace      string          `json:"namespace"`
	WorkerName     string          `json:"worker_name"`
	Description    string          `json:"description,omitempty"`
	RequestFormat  json.RawMessage `json:"request_format"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
}

// Internal reports metadata.internal == true: a function kept out of
// listings that do not ask for internal ones.
func (f FunctionInfo) Internal() bool { return MetadataInternal(f.Metadata) }

// InternalMetadata is the function metadata that keeps a function out of
// engine::functions::list unless include_internal is asked (and out of
// every MCP tool listing): RegisterFunctionOptions{Metadata:
// iii.InternalMetadata}. Do not modify it.
var InternalMetadata = json.RawMessage(`{"internal":true}`)

// MetadataInternal reports whether function metadata holds
// "internal": true.
func MetadataInternal(md json.RawMessage) bool {
	if len(md) == 0 {
		return false
	}
	var v struct {
		Internal bool `json:"internal"`
	}
	return json.Unmarshal(md, &v) == nil && v.Internal
}

// FunctionDetail is the answer of engine::functions::info for one
// function_id, and one entry of its {"functions": [...]} answer for
// function_ids (an id not found is {"function_id", "error":"not_found"}
// there, which decodes with only FunctionID set). Unlike the list row it
// names the formats request_schema / response_schema and leaves out the
// missing ones.
type FunctionDetail struct {
	FunctionID         string          `json:"function_id"`
	Namespace          string          `json:"namespace"`
	WorkerName         string          `json:"worker_name"`
	Description        string          `json:"description,omitempty"`
	RequestSchema      json.RawMessage `json:"request_schema,omitempty"`
	ResponseSchema     json.RawMessage `json:"response_schema,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	RegisteredTriggers []BoundTrigger  `json:"registered_triggers"`
}

// BoundTrigger is a trigger bound to a function, as FunctionDetail lists
// it; Config is {} when the binding gave none.
type BoundTrigger struct {
	ID          string          `json:"id"`
	TriggerType string          `json:"trigger_type"`
	Config      json.RawMessage `json:"config"`
}

// WorkerInfo is one row of engine::workers::list ({"workers": [...]}); the
// engine lists only workers that registered a pid. Missing optional texts
// are null. ID and the counters are raw because the iii-directory surface
// re-serves them as the engine sent them; [WorkerInfo.StringID] and
// [WorkerInfo.StringName] read the two most consumers need.
type WorkerInfo struct {
	ID                json.RawMessage `json:"id"`
	Name              *string         `json:"name"`
	Description       *string         `json:"description"`
	Runtime           string          `json:"runtime"`
	Version           json.RawMessage `json:"version"`
	OS                json.RawMessage `json:"os"`
	PID               uint32          `json:"pid"`
	Status            string          `json:"status"`
	FunctionCount     json.RawMessage `json:"function_count"`
	ConnectedAtMs     json.RawMessage `json:"connected_at_ms"`
	ActiveInvocations json.RawMessage `json:"active_invocations"`
	Namespace         string          `json:"namespace"`
	Isolation         json.RawMessage `json:"isolation"`
	IPAddress         json.RawMessage `json:"ip_address"`
}

// StringID is the worker's id, "" when the row has none or it is not a
// string.
func (w WorkerInfo) StringID() string { return RawText(w.ID) }

// StringName is the worker's name, "" when it has none.
func (w WorkerInfo) StringName() string {
	if w.Name == nil {
		return ""
	}
	return *w.Name
}

// MaxNameRunes is how much of a worker's self-given name ShowName keeps.
const MaxNameRunes = 64

// ShowName makes a name a worker gave itself (or another text it chose: an
// id, a token name) safe to show as text, in a page or in a message: control
// and formatting characters (bidi overrides could disguise it) become '?',
// and it is cut to MaxNameRunes with "…". The registry's web page and its
// ownership refusals show worker names this way, so both show the same.
func ShowName(name string) string {
	var b strings.Builder
	n := 0
	for _, r := range name {
		if n == MaxNameRunes {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// RawText shows a raw JSON scalar as text: a string unquoted, a number or
// boolean as written, absent or null (or an object or array) as "".
func RawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return s
	case 'n', '{', '[':
		return ""
	}
	return string(raw)
}

// TriggerTypeInfo is one row of engine::triggers::list ({"triggers":
// [...]}), and the first fields of [TriggerTypeDetail]. The embedded engine
// lists the schemas only in the detail, as configuration_schema /
// request_schema; the official engine names them trigger_request_format /
// call_request_format. Absent schemas are left out.
type TriggerTypeInfo struct {
	ID                   string          `json:"id"`
	Namespace            string          `json:"namespace"`
	WorkerName           string          `json:"worker_name"`
	Description          string          `json:"description"`
	TriggerRequestFormat json.RawMessage `json:"trigger_request_format,omitempty"`
	CallRequestFormat    json.RawMessage `json:"call_request_format,omitempty"`
	ConfigurationSchema  json.RawMessage `json:"configuration_schema,omitempty"`
	RequestSchema        json.RawMessage `json:"request_schema,omitempty"`
}

// TriggerTypeDetail is the answer of engine::triggers::info.
type TriggerTypeDetail struct {
	TriggerTypeInfo
	// InstanceCount is how many triggers are bound to the type.
	InstanceCount int `json:"instance_count"`
	// ProviderWorkerID is the embedded engine's own: the worker id of the
	// connection providing the type ("" for the engine's own types), so a
	// worker can tell that it provides its types. nil when the answering
	// engine does not say.
	ProviderWorkerID *string `json:"provider_worker_id"`
}

// TriggerInfo is one row of engine::registered-triggers::list
// ({"registered_triggers": [...]}): a trigger bound to a function. Config
// is {} when the binding gave none; ConfigSummary is it as one compact line
// of at most 120 runes. Metadata is the official engine's; the embedded
// engine leaves it out.
type TriggerInfo struct {
	ID            string          `json:"id"`
	TriggerType   string          `json:"trigger_type"`
	FunctionID    string          `json:"function_id"`
	WorkerName    string          `json:"worker_name"`
	Config        json.RawMessage `json:"config"`
	ConfigSummary string          `json:"config_summary"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}
