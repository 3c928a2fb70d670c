// Package engine is an embedded iii engine: a WebSocket server that speaks
// the iii worker protocol well enough that our Go client and the official
// Node and Python iii-sdk clients connect to it unchanged.
//
// # Why it exists
//
// The real iii engine is a Rust binary that is not on any package registry.
// The skills registry must run on one machine with nothing installed by
// hand (`skills --standalone`), so it carries this engine, the way an
// application carries SQLite beside Postgres. A deployment that outgrows one
// machine points the same worker at a real engine instead; everything here
// follows the real engine's wire behaviour (docs/reference/engine-protocol.md) so
// that switching is invisible to workers.
//
// # What it does
//
//		e, err := engine.New(engine.Config{Addr: "127.0.0.1:49134", DataDir: "./data"})
//		err = e.Start()            // or e.Serve(ctx)
//		fmt.Println(e.URL())       // ws://127.0.0.1:49134
//		defer e.Close()
//
//	  - GET / is the worker socket. Every connection first receives
//	    workerregistered {worker_id, reattach_token}. GET /otel accepts the
//	    official SDKs' telemetry socket and discards what arrives on it.
//	  - invokefunction is routed to the function's owner with the caller's
//	    invocation_id (a fresh UUID for void calls), "_caller_worker_id" is
//	    added to object payloads, and the owner's invocationresult goes back
//	    to the caller unchanged. Unknown functions answer function_not_found;
//	    an owner that disconnects answers its callers invocation_stopped.
//	    The enqueue action runs jobs through a small in-process FIFO per queue
//	    name and answers {messageReceiptId}.
//	  - Trigger bindings are forwarded to the provider of their type, parked
//	    while the type has no provider (or the provider refused them) and
//	    delivered again when a provider registers the type.
//	  - Built-in functions are served in-process: engine::workers::register,
//	    engine::workers::list, engine::workers::identity (ours: the caller's
//	    worker_id and scoped token, or whether another connection is alive),
//	    engine::functions::list (which, unlike the real
//	    engine, includes request_format/response_format), engine::functions::info,
//	    engine::triggers::list/info, engine::registered-triggers::list,
//	    state::set/get/delete/update/list/list_groups and publish
//	    ({topic, data}, like iii-pubsub). State is durable when
//	    Config.DataDir is set (package store: every acknowledged write is
//	    fsync'd). Config.Store and Config.PubSub let several engines in one
//	    process share state and pubsub, like real engines on one Redis.
//	  - Built-in trigger types: subscribe ({topic}: each publish of the
//	    topic, data as published), state (state:created/updated/deleted),
//	    engine::functions-available (the function list, whenever the set of
//	    function ids changes; bursts are coalesced) and
//	    engine::workers-available (worker_connected / _metadata_updated /
//	    _disconnected). Each binding receives its events through its own
//	    FIFO, in order, one call at a time. A worker may register one of
//	    these type ids itself (a test stand-in, say): it then provides the
//	    type until it disconnects, and the engine serves the bindings again.
//	    A state binding whose config sets "skip_own_writes": true (our key;
//	    the real engine ignores it) does not get the writes made over its
//	    own connection: a worker that mirrors a scope has applied those
//	    already.
//	  - In-process connections: [Engine.DialContext] (for
//	    iii.WithNetDialer) connects a worker in the same process through
//	    the same HTTP upgrade and frame code, without the loopback socket;
//	    skills --standalone uses it for its own worker.
//
// # Trust
//
// The engine runs next to a web browser on the user's machine, so its door
// and its registries assume hostile neighbours:
//
//   - The worker socket (and /otel) refuses upgrades whose Origin is a
//     browser origin other than loopback ones or Config.AllowedOrigins, and
//     whose Host is not a loopback name or the listen address (DNS
//     rebinding). Clients that send no Origin (the official SDKs) pass.
//     With Config.Token set, a worker must present it as "Authorization:
//     Bearer <token>" or as ?token=<token> in the URL it dials, else 401.
//     Start warns loudly when it binds a non-loopback address without one.
//   - Function ids are first-owner-wins (iii 0.23): engine::*, state::* and
//     every built-in id cannot be registered by workers, and an id owned by
//     a live connection cannot be taken by another. The loser gets
//     registrationrejected (FUNCTION_NAMESPACE_CONFLICT, owner_worker_id
//     "" for reserved ids) and keeps its connection.
//   - Trigger types follow the same rule: the engine's own (state,
//     engine::functions-available, engine::workers-available) cannot be
//     provided by a worker, and a type provided by a live connection stays
//     with it; a second registration waits on standby and takes the type
//     over when the provider leaves (a provider that reconnects before its
//     old connection is cleaned up). registertriggertype has no reply
//     frame; refusals are logged.
//   - An invocationresult is accepted only from the connection the
//     invocation was sent to; others are logged and dropped.
//   - With Config.HoldSockets, Start serves only in-process connections
//     until AcceptSockets: the standalone registry registers its function
//     ids before any socket can race it for them. Every function id,
//     trigger type and worker name an in-process connection registers is
//     then reserved for in-process connections for the engine's life
//     (reserve.go; names by their confusable skeleton): a socket is
//     refused them even while the registry reconnects.
//   - The in-process connection is never disconnected for its backlog.
//     Instead every worker has a budget (gate.go): the invocations
//     delivered to it and not answered carry at most
//     Config.MaxWorkerBytes, the rest wait at its gate in arrival order;
//     and one caller's calls and queued jobs carry at most
//     Config.MaxCallerBytes. A flood is served at the worker's pace and
//     never disconnects it.
//   - A trigger fire runs as whoever registered the binding: the engine's
//     own fires and a provider's invokefunction naming the binding
//     (trigger_id) are stamped with the registrant, never the provider,
//     so a provider (the registry) cannot be made to act as itself.
//   - Config.PrivateScopes are written only by in-process connections.
//   - One client (a scoped token, else a remote address) holds at most
//     Config.MaxConnectionsPerClient sockets.
//   - Every delivered invocation carries the caller in its metadata
//     (CallerKey "iii_caller": worker_id, scoped token name), replacing
//     whatever the client sent under that key; engine::workers::identity
//     tells a worker it runs on an engine that does this, and whether
//     another connection is alive. Only a trigger's owner replaces or
//     removes it while it is connected.
//   - Config.ScopedTokens (identity.go) are per-publisher tokens: function
//     and trigger type ids only in their namespaces, triggers only to
//     their own functions and never of type state, no state::* calls.
//   - Outbound bytes are counted per connection until written (the batch
//     being written included) and for the whole engine; a client past
//     Config.MaxConnOutboundBytes, or the largest backlog once
//     Config.MaxOutboundBytes is reached, is disconnected with a log line
//     naming it.
//   - A frame over Config.MaxFrameBytes is read and discarded without
//     closing the connection; if it was a result, the caller gets
//     result_too_large "invocation result too large (N bytes; max M)".
//
// # Design choices
//
// Robustness over strictness. A frame that is not JSON, has an unknown type
// or lacks a required field is logged with the reason and dropped; the
// connection stays up, as in the real engine. Panics in any handler are
// recovered. As in the real engine, an invokefunction without a "data" key
// is not routed (the caller gets invalid_request naming the key when it
// sent an invocation_id) and an invocation_id that is not a UUID makes its
// frame dropped (docs/reference/engine-protocol.md §2.3, §10.13–14). A registertrigger without
// "config" is taken as {}, because the Python and Node SDKs omit empty keys.
//
// Functions live in one namespace ("default"), and only the current
// owner's unregister or disconnect removes a function.
//
// Ordering and back-pressure. Each connection has one writer goroutine fed
// by a queue that never blocks its producers, so handlers may send while
// holding the registry lock and frames to one worker keep their order. A
// worker that stops reading is disconnected when its backlog passes a bound
// (or a write takes longer than 30 s) rather than stalling the engine.
// Each connection's frames are processed in order by its read loop;
// forwarding an invocation is a non-blocking enqueue, and built-ins run on
// their own goroutine, so a slow handler (or an fsync) never blocks a read
// loop.
//
// Hot path. The engine → owner invokefunction and built-in results are
// encoded by hand (payloads are spliced, not re-encoded), the owner's
// result frame is forwarded to the caller byte for byte, and
// "_caller_worker_id" is injected by splicing the payload's bytes. A
// state value is compacted only when it holds whitespace outside its
// strings.
package engine
