// Package sections calls the functions behind section URIs (iii://fn/a/b
// reads function a::b): publisher code that may itself read sections. A
// Guard bounds the nesting (the chain of section functions being read,
// carried in invocation metadata, in W3C baggage, or counted per W3C
// trace for clients that pass neither on), refuses cycles, bounds the
// reads of one function in flight, and caps the output served.
package sections
