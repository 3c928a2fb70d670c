package iii

// Ids of the engine's built-in functions and trigger types, named as the
// official iii SDKs name them (EngineFunctions.LIST_FUNCTIONS …,
// EngineTriggers.FUNCTIONS_AVAILABLE), so every package of this repo
// writes them once, here.
const (
	FnListFunctions          = "engine::functions::list"
	FnInfoFunctions          = "engine::functions::info"
	FnListWorkers            = "engine::workers::list"
	FnInfoWorkers            = "engine::workers::info"
	FnListTriggers           = "engine::triggers::list"
	FnInfoTriggers           = "engine::triggers::info"
	FnListRegisteredTriggers = "engine::registered-triggers::list"
	FnInfoRegisteredTriggers = "engine::registered-triggers::info"
	FnRegisterWorker         = "engine::workers::register"

	// FnWorkerIdentity is ours (not in the official SDKs): the calling
	// connection's identity, or whether another connection is alive.
	FnWorkerIdentity = "engine::workers::identity"
)

// Trigger types the engine itself fires.
const (
	TriggerFunctionsAvailable = "engine::functions-available"
	// TriggerWorkersAvailable fires when a worker connects, changes its
	// metadata or leaves.
	TriggerWorkersAvailable = "engine::workers-available"
)

// The iii-bridge engine worker (iii 0.23, engine/src/workers/bridge_client):
// an engine whose config lists it connects, as a worker named
// "iii-bridge-client", to one other engine, and FnBridgeInvoke
// {function_id, data, timeout_ms} calls function_id there. Its functions
// belong to the in-process worker BridgeWorkerName.
const (
	FnBridgeInvoke   = "bridge.invoke"
	BridgeWorkerName = "iii-bridge"
)

// Ids of the engine's state functions.
const (
	StateGet    = "state::get"
	StateSet    = "state::set"
	StateDelete = "state::delete"
	StateUpdate = "state::update"
	StateList   = "state::list"
	// StateListGroups lists the scopes that hold values.
	StateListGroups = "state::list_groups"
)

// The pubsub worker's function and trigger type (iii-pubsub; the embedded
// engine has them too): Publish sends {topic, data} to every binding of
// the Subscribe trigger type with config {topic}, on every engine sharing
// the pubsub adapter.
const (
	Publish   = "publish"
	Subscribe = "subscribe"
)
