// Package worker binds the skills registry (core.Local) to an iii client:
// the upstream `skills` worker v0.2.2's 13 functions and 2 trigger types,
// function by function, and ours (search, versions, the catalog as the
// MCP Skills extension serves it, for surfaces in other processes). Each
// function is a thin adapter: it decodes its arguments once (package
// registry's decoders and upstream's messages for upstream's functions,
// core's for ours), calls the registry with the caller the engine stamped,
// and returns the answer for the client to encode.
//
// # Use
//
//	client := iii.New(url, iii.WithName(worker.Name))
//	reg := core.New(client, core.DefaultConfig(), core.Options{State: kv.III(client, timeout)})
//	w := worker.New(client, reg, log)
//	if err := w.Register(); err != nil { … } // before Connect: replayed on every reconnect
//	if err := client.Connect(ctx); err != nil { … }
//	reg.Start(ctx)
//
// Register declares the trigger types and functions with upstream's
// descriptions and request/response schemas (api.json), binds the engine's
// `state` trigger of the skills scope (writes made straight into state
// reach the registry, core.Local.SyncKey) and the cluster subscription
// (package cluster), and fires the trigger types from the registry's
// changes (core.Local.Subscribe). [ManifestJSON] is `skills --manifest`.
//
// # Errors
//
// Input the caller got wrong (a payload that does not decode, a value the
// rules refuse, a URI that does not parse) is answered with code
// INVALID_ARGUMENTS and the exact upstream message; what the registry does
// not hold with NOT_FOUND; everything else goes out as invocation_failed
// with the upstream message. Change notifications are fire-and-forget,
// like upstream.
package worker
