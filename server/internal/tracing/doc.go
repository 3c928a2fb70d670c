// Package tracing is the registry's OpenTelemetry traces: a span per
// function call on each surface, continuing the W3C trace context the
// caller sent, exported over OTLP to whatever receiver the operator runs
// (an OpenTelemetry Collector, Jaeger, Tempo, …). Off by default.
//
// # Joining the caller's trace
//
// The official iii SDKs (Node, Python, Go) send a traceparent, and
// baggage, with every invocation: fields of the invokefunction frame that
// the engine passes on and the iii client puts in the handler's ctx
// (FromInvocation). HTTP surfaces get them as headers (FromHeaders).
// StartCall extracts that context and starts the call's span as its child,
// so a publisher's trace and the registry's spans are one trace. Calls the
// registry makes while serving one (a section read calling the function
// behind it) carry Outgoing(ctx): the call's span as parent. With tracing
// off nothing is recorded, and Outgoing still hands the caller's context
// on unchanged.
//
// # Export and bounds
//
// Config.Endpoint turns it on: http/protobuf (POST <endpoint>/v1/traces,
// the default) or grpc, TLS for an https endpoint, Config.Headers with
// every export (the OTEL_EXPORTER_OTLP_HEADERS environment variable applies
// when none are configured). New traces are sampled at SampleRatio (1 by
// default); a continued trace follows its caller's sampled flag. Spans are
// exported in batches every 5 s; at most 2048 wait, past that new ones
// are dropped: a slow or unreachable receiver never slows a call.
// Attributes are the function id, the surface and the refusal code; a
// caller adds its own through Call.Span.
//
// The Tracer is private to the registry: the process-wide OpenTelemetry
// globals are left alone.
package tracing
