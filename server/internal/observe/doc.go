// Package observe is the one seam through which the registry's surfaces
// report what they serve: each call (skills_calls_total and its latency in
// package metrics, a span continuing the caller's trace in package
// tracing) and each read of a skill with who made it (the surface and the
// client, counted per skill and version by package usage).
//
// Every surface does the same two things:
//
//	ctx, call := obs.Start(ctx, function, surface.MCP, tracing.FromHeaders(r.Header))
//	ctx = observe.WithReader(ctx, surface.MCP, clientName) // for reads
//	… serve …
//	call.End(code, err)
//
// and the registry core counts a read where it serves one
// (core.ReadCounter, which Observer implements): with the reader the
// surface put in ctx, or none (an internal read, not counted). On iii the
// client is the name of the calling worker: the caller the engine stamped
// (or the _caller_worker_id of an engine that does not stamp), named
// through engine::workers::list. The list is read off the read path: a
// read by a worker not named yet waits in a bounded queue (1 024 reads;
// past it the read counts as by "unknown") until one read of the list names
// it, at most one read of the list a second.
//
// Start also hands the call's trace context on to the calls the registry
// makes while serving it (section functions, prompt handlers): the call's
// span as their parent with tracing on, the caller's context as it came
// with tracing off.
//
// A nil *Observer records nothing: surfaces work without one.
package observe
