package iii

// Ids of the engine's built-in functions and trigger types, named as the
// official iii SDKs name them (EngineFunctions.LIST_FUNCTIONS …,
// EngineTriggers.FUNCTIONS_AVAILABLE), so every package of this repo
// writes them once, here.
const (
	EngineListFunctions          = "engine::functions::list"
	EngineInfoFunctions          = "engine::functions::info"
	EngineListWorkers            = "engine::workers::list"
	EngineInfoWorkers            = "engine::workers::info"
	EngineListTriggers           = "engine::triggers::list"
	EngineInfoTriggers           = "engine::triggers::info"
	EngineListRegisteredTriggers = "engine::registered-triggers::list"
	EngineInfoRegisteredTriggers = "engine::registered-triggers::info"
	EngineRegisterWorker         = "engine::workers::register"

	// EngineWorkerIdentity is ours (not in the official SDKs): the calling
	// connection's identity, or whether another connection is alive.
	EngineWorkerIdentity = "engine::workers::identity"
)

// Trigger types the engine itself fires.
const (
	EngineFunctionsAvailable = "engine::functions-available"
	// EngineWorkersAvailable fires when a worker connects, changes its
	// metadata or leaves.
	EngineWorkersAvailable = "engine::workers-available"
)

// Ids of the engine's state functions.
const (
	StateGet    = "state::get"
	StateSet    = "state::set"
	StateDelete = "state::delete"
	StateUpdate = "state::update"
	StateList   = "state::list"
)

// The pubsub worker's function and trigger type (iii-pubsub; the embedded
// engine has them too): Publish sends {topic, data} to every binding of
// the Subscribe trigger type with config {topic}, on every engine sharing
// the pubsub adapter.
const (
	Publish   = "publish"
	Subscribe = "subscribe"
)
