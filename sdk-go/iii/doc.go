// Package iii is a Go client of the iii engine's worker WebSocket protocol:
// it makes a Go program an iii worker that registers functions, calls other
// workers' functions, binds triggers and provides trigger types.
//
// # Connect
//
// [RegisterWorker] builds a client and starts connecting in the background,
// like registerWorker of the Node and Python SDKs; [New] builds one that
// waits for [Client.Connect]. Connect waits for the first connection; the
// client keeps reconnecting (exponential backoff, 1 s doubling to 30 s with
// 30% jitter by default, see [ReconnectConfig]) until [Client.Close]:
//
//	c := iii.RegisterWorker(iii.DefaultEngineURL, iii.WithName("skills"))
//	defer c.Close()
//
// On every connection the client sends, in order: reattach (with the previous
// worker_id and reattach token, after the first connection), the worker hello
// (engine::workers::register), every trigger type, every function, every
// trigger binding, then the [Client.Trigger] calls queued while
// disconnected. So registrations can be made before or after connecting and
// survive reconnects; [Client.OnConnect] hooks run after each replay.
//
// # Functions
//
// A [Handler] receives the raw invocation data and returns any JSON-encodable
// value. Returning an [*InvocationError] chooses the wire error code; any other
// error is sent as "invocation_failed"; a panic is recovered and reported the
// same way. Handlers run concurrently, one goroutine per invocation, with a
// context that carries the invocation metadata ([MetadataFromContext]) and is
// cancelled when the connection ends.
//
//	c.RegisterFunction("greet::hello", func(ctx context.Context, data json.RawMessage) (any, error) {
//		return map[string]string{"hello": "world"}, nil
//	}, iii.RegisterFunctionOptions{Description: "Says hello"})
//
// [RegisterFunctionTyped] decodes the data into a Go type, answers
// "invalid_request" when that fails, and publishes request/response JSON
// Schemas reflected from the types:
//
//	iii.RegisterFunctionTyped(c, "math::add", func(ctx context.Context, in AddIn) (AddOut, error) {
//		return AddOut{Sum: in.A + in.B}, nil
//	})
//
// # Calling functions
//
// [Client.Trigger] calls any function through the engine with raw JSON
// [TriggerRequest.Data] and waits for its result (default timeout 30 s, ctx
// honoured too). [VoidAction] makes it fire-and-forget; [EnqueueAction]
// hands the call to an engine queue:
//
//	res, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: "state::get",
//		Data: json.RawMessage(`{"scope":"skills","key":"x"}`)})
//	var ie *iii.InvocationError
//	if errors.As(err, &ie) { /* ie.Code, ie.Message */ }
//	if errors.Is(err, iii.ErrTimeout) { … }
//
// While disconnected, calls are queued ([WithOfflineQueueSize], default 1000;
// [ErrNotConnected] when full) and sent after the next replay unless their
// caller gave up meanwhile. A call already sent when the connection drops
// fails with an *InvocationError of code "invocation_stopped" that also
// matches ErrNotConnected; it is not re-sent, because the function may
// already have run.
//
// # Triggers
//
// [Client.RegisterTrigger] binds a function to a trigger type (for example
// the engine's "state" type) under a binding id. [Client.RegisterTriggerType]
// makes this worker the provider of a type: the engine then delivers each
// binding to the [TriggerHandler], whose outcome is answered with
// triggerregistrationresult. A provider fires its bindings with
// [TriggerTypeRef.Fire] (or [Client.FireTrigger] for one), which sends void
// invocations carrying each binding's metadata and naming the binding
// (trigger_id): the skills engine then runs each call as whoever
// registered the binding, never as the provider.
//
// # Errors and lifecycle
//
// Errors match [ErrTimeout], [ErrNotConnected], [ErrClosed] or
// [ErrNotRegistered] with errors.Is, or [*InvocationError] /
// [*RegistrationRejectedError] with errors.As. If the engine rejects the
// worker name (WORKER_NAMESPACE_CONFLICT) the client stops for good and
// [Client.FatalError] reports why;
// a rejected function (FUNCTION_NAMESPACE_CONFLICT) is logged and listed by
// [Client.RefusedFunctions] ([Client.RetryRefusedFunctions] asks again).
//
// The client sends a WebSocket ping every 20 s and re-dials when nothing has
// been heard for 60 s ([WithKeepalive]). All methods are safe for concurrent
// use. The frames themselves live in package
// [github.com/iii-skills/skills/sdk-go/wire], which the embedded engine
// shares.
package iii
