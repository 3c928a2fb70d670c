// Package wire is the iii worker protocol on the wire, shared by the client
// ([github.com/iii-skills/skills/sdk-go/iii]) and the embedded engine
// (server/internal/engine): one definition of every frame, code and encoding, so the
// two sides cannot drift apart.
//
// # Frames
//
// Every frame is a JSON object sent as a WebSocket text frame and tagged by
// its "type" ([MessageType], constants Type…). [Message] is a flat struct
// that decodes any frame in one pass; each type uses the subset of fields the
// protocol lists for it. [ErrorBody] is the error object of
// invocationresult and triggerregistrationresult frames, [Action] the
// optional action of invokefunction (void or enqueue). The Code… constants
// are the wire error codes both sides write and compare.
//
// # Hot paths
//
// [EncodeMessage] writes a frame without re-validating its RawMessage fields
// (their bytes are copied verbatim, so callers must only put valid JSON in
// them) and always writes the keys a frame type requires. [AppendJSONString]
// is its string escaper, byte for byte what encoding/json writes.
// [ScanResultFrame] locates the fields of an invocationresult without
// decoding the result, so a megabyte result is forwarded, not parsed.
// [ReadMessage] reads a WebSocket message through a pooled buffer.
package wire
