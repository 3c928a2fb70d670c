package engine

import "encoding/json"

// JSON Schemas of the built-in functions and the state trigger type, shown
// by engine::functions::list/info and engine::triggers::info so that agents
// and tools can call the built-ins without guessing.
var (
	schemaAny        = json.RawMessage(`{"description":"Any JSON value"}`)
	schemaEmptyInput = json.RawMessage(`{"type":"object","properties":{}}`)
	schemaSuccess    = json.RawMessage(`{"type":"object","properties":{"success":{"type":"boolean"}},"required":["success"]}`)

	schemaScope    = json.RawMessage(`{"type":"object","properties":{"scope":{"type":"string","minLength":1}},"required":["scope"]}`)
	schemaScopeKey = json.RawMessage(`{"type":"object","properties":{"scope":{"type":"string","minLength":1},"key":{"type":"string","minLength":1}},"required":["scope","key"]}`)

	schemaStateSetInput  = json.RawMessage(`{"type":"object","properties":{"scope":{"type":"string","minLength":1},"key":{"type":"string","minLength":1},"value":{"description":"Any JSON value (alias: data)"}},"required":["scope","key","value"]}`)
	schemaStateSetResult = json.RawMessage(`{"type":"object","properties":{"old_value":{"description":"Previous value or null"},"new_value":{"description":"Stored value"}},"required":["old_value","new_value"]}`)

	schemaStateUpdateInput = json.RawMessage(`{"type":"object","properties":{"scope":{"type":"string","minLength":1},"key":{"type":"string","minLength":1},"ops":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string","enum":["set","merge","increment","decrement","append","remove"]},"path":{"oneOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},"value":{},"by":{"type":"number"}},"required":["type"]}}},"required":["scope","key","ops"]}`)

	schemaStateUpdateResult = json.RawMessage(`{"type":"object","properties":{"old_value":{},"new_value":{},"errors":{"type":"array","items":{"type":"object","properties":{"op_index":{"type":"integer"},"code":{"type":"string"},"message":{"type":"string"}},"required":["op_index","code","message"]}}},"required":["old_value","new_value"]}`)

	schemaStateListResult       = json.RawMessage(`{"type":"array","description":"The values of the scope in insertion order"}`)
	schemaStateListGroupsResult = json.RawMessage(`{"type":"object","properties":{"groups":{"type":"array","items":{"type":"string"}}},"required":["groups"]}`)

	schemaWorkersRegister = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"description":{"type":"string"},"runtime":{"type":"string"},"version":{"type":"string"},"os":{"type":"string"},"pid":{"type":"integer","minimum":0},"isolation":{"type":"string"},"namespace":{"type":"string"},"telemetry":{"type":"object","properties":{"language":{"type":"string"},"project_name":{"type":"string"},"framework":{"type":"string"}}}}}`)

	schemaWorkersIdentityInput = json.RawMessage(`{"type":"object","properties":{"worker_id":{"type":"string","description":"Another connection's worker_id; omit for the caller's own identity"}}}`)
	schemaWorkersIdentity      = json.RawMessage(`{"type":"object","properties":{"worker_id":{"type":"string"},"token":{"type":"string","description":"Name of the scoped token the connection presented; empty for full access"},"namespaces":{"type":"array","items":{"type":"string"}},"connected":{"type":"boolean"}},"required":["worker_id","token","connected"]}`)

	schemaWorkersListInput = json.RawMessage(`{"type":"object","properties":{"search":{"type":"string"},"runtime":{"type":"string"},"status":{"type":"string"}}}`)
	schemaWorkersList      = json.RawMessage(`{"type":"object","properties":{"workers":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},"description":{"type":["string","null"]},"runtime":{"type":"string"},"version":{"type":["string","null"]},"os":{"type":["string","null"]},"pid":{"type":"integer"},"status":{"type":"string"},"function_count":{"type":"integer"},"connected_at_ms":{"type":"integer"},"active_invocations":{"type":"integer"},"namespace":{"type":"string"},"isolation":{"type":["string","null"]},"ip_address":{"type":"string"}}}}},"required":["workers"]}`)

	schemaFunctionsListInput = json.RawMessage(`{"type":"object","properties":{"search":{"type":"string"},"prefix":{"type":"string"},"worker":{"type":"string"},"workers":{"type":"array","items":{"type":"string"}},"include_internal":{"type":"boolean"}}}`)
	schemaFunctionsList      = json.RawMessage(`{"type":"object","properties":{"functions":{"type":"array","items":{"type":"object","properties":{"function_id":{"type":"string"},"namespace":{"type":"string"},"worker_name":{"type":"string"},"description":{"type":"string"},"request_format":{},"response_format":{},"metadata":{}},"required":["function_id","namespace","worker_name"]}}},"required":["functions"]}`)
	schemaFunctionsInfoInput = json.RawMessage(`{"type":"object","properties":{"function_id":{"type":"string"},"function_ids":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":32},"namespace":{"type":"string"}}}`)
	schemaFunctionDetail     = json.RawMessage(`{"type":"object","properties":{"function_id":{"type":"string"},"namespace":{"type":"string"},"worker_name":{"type":"string"},"description":{"type":"string"},"request_schema":{},"response_schema":{},"metadata":{},"registered_triggers":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"trigger_type":{"type":"string"},"config":{}}}},"functions":{"type":"array","description":"Batch form (function_ids)"}}}`)

	schemaTriggersListInput = json.RawMessage(`{"type":"object","properties":{"search":{"type":"string"},"prefix":{"type":"string"},"worker":{"type":"string"},"include_internal":{"type":"boolean"}}}`)
	schemaTriggersList      = json.RawMessage(`{"type":"object","properties":{"triggers":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"namespace":{"type":"string"},"worker_name":{"type":"string"},"description":{"type":"string"}}}}},"required":["triggers"]}`)
	schemaTriggersInfoInput = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"namespace":{"type":"string"}},"required":["id"]}`)
	schemaTriggerTypeDetail = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"namespace":{"type":"string"},"worker_name":{"type":"string"},"description":{"type":"string"},"configuration_schema":{},"request_schema":{},"instance_count":{"type":"integer"}}}`)

	schemaRegisteredTriggersListInput = json.RawMessage(`{"type":"object","properties":{"search":{"type":"string"},"trigger_type":{"type":"string"},"function_id":{"type":"string"},"worker":{"type":"string"},"include_internal":{"type":"boolean"}}}`)
	schemaRegisteredTriggersList      = json.RawMessage(`{"type":"object","properties":{"registered_triggers":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"trigger_type":{"type":"string"},"function_id":{"type":"string"},"worker_name":{"type":"string"},"config":{},"config_summary":{"type":"string"}}}}},"required":["registered_triggers"]}`)

	stateTriggerConfigSchema  = json.RawMessage(`{"type":"object","properties":{"scope":{"type":"string","description":"Only changes in this scope (absent: all)"},"key":{"type":"string","description":"Only changes of this key (absent: all)"},"condition_function_id":{"type":"string","description":"Called first with the event; a false result skips the target"}}}`)
	stateTriggerPayloadSchema = json.RawMessage(`{"type":"object","properties":{"type":{"const":"state"},"event_type":{"type":"string","enum":["state:created","state:updated","state:deleted"]},"scope":{"type":"string"},"key":{"type":"string"},"old_value":{},"new_value":{}},"required":["type","event_type","scope","key","old_value","new_value"]}`)
)
