package sections

// The section nesting seen through the W3C trace id. The official Python
// client passes neither a handler's invocation metadata nor its baggage on
// to the calls it makes (its handler span is attached over the current
// context, which drops the extracted baggage), but with OpenTelemetry on it
// does keep the trace: the calls carry a traceparent with the trace id of
// the invocation. The registry sends every section read with a traceparent
// (the one of the call it serves, so the section's span is a child of the
// registry's own when tracing is on, or a new trace), and counts the reads of each section
// function in flight per trace. A read that arrives with a trace id but no
// chain, while reads of the same function in the same trace are in flight,
// is one level deeper than they are: a handler that fetches its own URI is
// stopped at depth 8 instead of 256. Reads of one function in one trace
// that are truly concurrent (a caller fetching it 9 times at once inside
// one trace) would be refused too; that is the price of counting by trace,
// and it applies only to callers that carry no chain.

import (
	"crypto/rand"
	"encoding/hex"
)

// traceRead is one section function read within one trace.
type traceRead struct{ trace, functionID string }

// traceIDOf returns the trace id of a W3C traceparent
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"), "" when it is
// not one (or its trace id is all zeros, which W3C says is invalid).
func traceIDOf(traceparent string) string {
	if len(traceparent) < 55 || traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-' {
		return ""
	}
	if traceparent[:2] == "ff" || !isLowerHex(traceparent[:2]) || !isLowerHex(traceparent[53:55]) || !isLowerHex(traceparent[36:52]) {
		return ""
	}
	if traceparent[:2] == "00" && len(traceparent) != 55 {
		return ""
	}
	id := traceparent[3:35]
	if !isLowerHex(id) || id == "00000000000000000000000000000000" {
		return ""
	}
	return id
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// newTraceID is a random W3C trace id.
func newTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// childTraceparent is a traceparent in trace with a fresh parent id,
// sampled.
func childTraceparent(trace string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "00-" + trace + "-" + hex.EncodeToString(b[:]) + "-01"
}
