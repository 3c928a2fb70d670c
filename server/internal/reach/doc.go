// Package reach knows where the functions behind prompts and sections
// live, and calls them there.
//
// A prompt's handler and an iii://fn/… section are functions of the
// publisher that registered them, and a function lives on the engine its
// publisher is connected to. With several engines on one Redis (one
// registry on each, docs/deploy.md) a prompt registered through node A is
// stored for every node, but node B's engine does not have its handler.
//
// A Follower keeps three sets in memory, so no listing costs an engine
// round trip:
//
//   - the functions of this registry's engine, re-listed
//     (engine::functions::list, internal ones included) whenever the
//     engine fires engine::functions-available, at every connect and
//     every Backstop;
//   - with several engines (Options.UseBridge) and when this engine runs
//     the iii-bridge worker (iii.FnBridgeInvoke, owned by
//     iii.BridgeWorkerName), the functions of the one engine the bridge
//     connects to, listed through the bridge;
//   - on shared state, which functions every other node's engine holds,
//     as each node's Follower writes it into the nodes scope (one row per
//     node, rewritten when its engine's set changes) and announces it to
//     the others through package cluster.
//
// Trigger calls a function where it is: on this engine, else through the
// bridge; a function neither has answers function_not_found with a
// message naming the nodes whose engines hold it and what is missing to
// reach them.
package reach
