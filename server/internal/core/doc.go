// Package core is the skills registry itself, behind one interface.
//
// [Registry] is what every surface calls: the iii adapter (package worker),
// MCP, the web page, /rpc and search in the skills process, and tools in
// another process. [Local] holds the rules and the state: reads and writes
// of skills and prompts (skills.go, prompts.go), versions, labels, pins,
// yanks and deprecation (versions.go, over package history), ownership of
// ids (ownership.go), signatures (signing.go), caps (caps.go), search
// (search.go), its scopes on shared state and their coherence across
// instances (scopes.go, statesync.go, over package cluster), and the
// changes it tells (observed.go). [Remote] is the same interface over iii,
// for a registry in another process.
//
// Who asks is a [Caller]: over iii what the engine stamped on the call; in
// this process [Operator] for a surface that checked the operator's
// credentials. Arguments of our own functions are decoded once here
// (decode.go), in one wording, whichever surface received them.
package core
