package wire

import "encoding/json"

// MessageType is the value of the "type" key that discriminates every frame of
// the iii worker protocol. Frames are JSON objects sent as WebSocket text frames.
type MessageType string

// Frame types known to the iii engine (engine/src/protocol.rs) plus the one the
// official Node/Python SDKs send that the engine drops (unregistertriggertype).
const (
	TypeRegisterFunction          MessageType = "registerfunction"
	TypeUnregisterFunction        MessageType = "unregisterfunction"
	TypeInvokeFunction            MessageType = "invokefunction"
	TypeInvocationResult          MessageType = "invocationresult"
	TypeRegisterTriggerType       MessageType = "registertriggertype"
	TypeUnregisterTriggerType     MessageType = "unregistertriggertype"
	TypeRegisterTrigger           MessageType = "registertrigger"
	TypeUnregisterTrigger         MessageType = "unregistertrigger"
	TypeTriggerRegistrationResult MessageType = "triggerregistrationresult"
	TypeRegisterService           MessageType = "registerservice"
	TypePing                      MessageType = "ping"
	TypePong                      MessageType = "pong"
	TypeReattach                  MessageType = "reattach"
	TypeWorkerRegistered          MessageType = "workerregistered"
	TypeRegistrationRejected      MessageType = "registrationrejected"
)

// Message is one protocol frame. The protocol is a tagged union; a single flat
// struct decodes any frame in one pass and each type uses the subset of fields
// the reference (docs/reference/engine-protocol.md §2) lists for it. Fields that the protocol
// requires to be present even when empty (invokefunction.data,
// registertrigger.config) are RawMessage values that senders always fill.
type Message struct {
	Type MessageType `json:"type"`

	// Shared identifiers.
	ID           string `json:"id,omitempty"`
	InvocationID string `json:"invocation_id,omitempty"`
	FunctionID   string `json:"function_id,omitempty"`
	TriggerType  string `json:"trigger_type,omitempty"`
	Description  string `json:"description,omitempty"`

	// registerfunction
	RequestFormat  json.RawMessage `json:"request_format,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Invocation     json.RawMessage `json:"invocation,omitempty"`

	// registertriggertype
	TriggerRequestFormat json.RawMessage `json:"trigger_request_format,omitempty"`
	CallRequestFormat    json.RawMessage `json:"call_request_format,omitempty"`

	// invokefunction / invocationresult
	Data        json.RawMessage `json:"data,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       *ErrorBody      `json:"error,omitempty"`
	Action      *Action         `json:"action,omitempty"`
	Traceparent string          `json:"traceparent,omitempty"`
	Baggage     string          `json:"baggage,omitempty"`
	// TriggerID is our addition to invokefunction: the binding a trigger
	// provider fires (iii.Client.FireTrigger sets it). Our engine then
	// stamps the binding's registrant as the caller, never the provider;
	// other engines ignore the key.
	TriggerID string `json:"trigger_id,omitempty"`

	// registertrigger and registerfunction/invokefunction metadata.
	Config           json.RawMessage `json:"config,omitempty"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Namespace        string          `json:"namespace,omitempty"`
	TriggerNamespace string          `json:"trigger_namespace,omitempty"`

	// registerservice
	Name            string `json:"name,omitempty"`
	ParentServiceID string `json:"parent_service_id,omitempty"`

	// workerregistered / reattach
	WorkerID         string `json:"worker_id,omitempty"`
	PreviousWorkerID string `json:"previous_worker_id,omitempty"`
	ReattachToken    string `json:"reattach_token,omitempty"`

	// registrationrejected
	Code          string `json:"code,omitempty"`
	WorkerName    string `json:"worker_name,omitempty"`
	OwnerWorkerID string `json:"owner_worker_id,omitempty"`
}

// ErrorBody is the error object of invocationresult and
// triggerregistrationresult frames.
type ErrorBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Stacktrace string `json:"stacktrace,omitempty"`
}

// ActionType names how the engine should run an invocation.
type ActionType string

// Invocation actions. An absent action means "call and wait for the result".
const (
	ActionVoid    ActionType = "void"
	ActionEnqueue ActionType = "enqueue"
)

// Action is the optional "action" of an invokefunction frame.
type Action struct {
	Type  ActionType `json:"type"`
	Queue string     `json:"queue,omitempty"`
}

// Wire error codes shared by the engine and SDKs (docs/reference/engine-protocol.md §3.3).
const (
	CodeFunctionNotFound       = "function_not_found"
	CodeInvocationStopped      = "invocation_stopped"
	CodeInvocationFailed       = "invocation_failed"
	CodeInvalidRequest         = "invalid_request"
	CodeTriggerTypeNotFound    = "trigger_type_not_found"
	CodeTriggerRegistration    = "trigger_registration_failed"
	CodeChannelSendFailed      = "channel_send_failed"
	CodeDeserializationError   = "deserialization_error"
	CodeEnqueueError           = "enqueue_error"
	CodeWorkerNamespaceClash   = "WORKER_NAMESPACE_CONFLICT"
	CodeFunctionNamespaceClash = "FUNCTION_NAMESPACE_CONFLICT"
)
