// Package worker binds the skills registry (package
// github.com/iii-skills/skills/server/internal/registry, which decides everything
// without I/O) to an iii client: it is the upstream `skills` worker v0.2.2,
// function by function.
//
// # Use
//
//	client := iii.RegisterWorker(url, iii.WithName(worker.Name))
//	w := worker.New(client, worker.DefaultConfig(), worker.Options{})
//	if err := w.Register(); err != nil { … } // before Connect: replayed on every reconnect
//	if err := client.Connect(ctx); err != nil { … }
//	w.Start(ctx)
//
// [Worker.Register] declares the two trigger types (skills::on-change,
// prompts::on-change) and the 13 functions with upstream's descriptions and
// request/response schemas (api.json), plus one internal function of ours,
// skills::cache-sync. [Worker.Start] loads the skills scope into memory on
// every (re)connect. [LoadConfig] reads config.yaml ([Config]: the two state
// scopes and the state timeout); [ManifestJSON] is `skills --manifest`.
//
// # Search
//
// Register also declares skills::search and its public alias
// skill::search (search.go): ours, not upstream's, with their own
// descriptions and schemas. They rank what the registry serves with the
// index of package github.com/iii-skills/skills/server/internal/search, which
// follows the catalog's change events from Register on (Close stops it).
// A skill id that is not served but names a file of a served skill
// (iii://<skill>/<path>) reads that file (catalog.FileText).
//
// # Reads and writes
//
// State (the engine's state::* functions) is the source of truth: every
// write goes there first. The skills scope is also held in memory, so the
// index, listings and reads never re-list the scope (upstream re-lists and
// re-parses it on every read); until the first load succeeded, reads fall
// back to state exactly like upstream. Writes made by others straight into
// the scope arrive through the engine's `state` trigger, bound with
// "skip_own_writes" so our engine does not echo the worker's own writes (the
// real engine ignores the key; the echo is then recognised and dropped).
// Prompts are read from state on every call, as upstream does.
//
// # Several engines
//
// Registry instances on engines that share state (Redis) stay coherent
// through package cluster: each mutation bumps a generation counter in
// state and is published on cluster.Topic; the others re-read the key,
// update catalog and history, and fire on-change to their own
// subscribers; a periodic reconcile (one state::get) re-lists only when
// a change stays missed. The skills and prompts scopes plug into it
// (cluster.go), as do other parts of the server (AddClusterScope). On the
// embedded engine's store nothing is announced.
//
// # Errors
//
// Payloads are decoded once by the registry's decoders. Input the caller got
// wrong (a payload that does not decode, a value the rules refuse, a URI
// that does not parse) is answered with code INVALID_ARGUMENTS and the exact
// upstream message; everything else goes out as invocation_failed with the
// upstream message. Change notifications are fire-and-forget, like upstream.
package worker
