package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// oversizeHead is how much of an oversize frame is kept to find out what it
// was (its type and invocation_id come first in every SDK's encoding).
const oversizeHead = 64 << 10

// readBuffers recycles read buffers up to maxPooledRead bytes.
var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledRead = 1 << 20

// oversizeFrame describes a frame larger than Config.MaxFrameBytes that was
// read and discarded.
type oversizeFrame struct {
	size int64  // bytes in the whole frame
	head []byte // its first bytes
}

// readFrame reads the next frame of ws. A frame larger than max is not an
// error that ends the connection (gorilla's read limit would close it with
// 1009 and drop every function of the worker): its remainder is read and
// discarded, and only its head is returned in big.
func readFrame(ws *websocket.Conn, max int64) (mt int, data []byte, big *oversizeFrame, err error) {
	mt, r, err := ws.NextReader()
	if err != nil {
		return mt, nil, nil, err
	}
	buf := readBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledRead {
			readBuffers.Put(buf)
		}
	}()
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return mt, nil, nil, err
	}
	if n <= max {
		// An exact-size copy: frames are kept (queued, forwarded) and the
		// pooled buffer is reused.
		return mt, append(make([]byte, 0, n), buf.Bytes()...), nil, nil
	}
	head := append([]byte(nil), buf.Bytes()[:min(int64(oversizeHead), n)]...)
	rest, err := io.Copy(io.Discard, r)
	if err != nil {
		return mt, nil, nil, err
	}
	return mt, nil, &oversizeFrame{size: n + rest, head: head}, nil
}

// frameHead extracts type and invocation_id from the head of a JSON object
// frame, reading top-level keys until the head runs out.
func frameHead(head []byte) (typ, invocationID string) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return typ, invocationID
		}
		key, _ := k.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return typ, invocationID
		}
		switch key {
		case "type":
			_ = json.Unmarshal(v, &typ)
		case "invocation_id":
			_ = json.Unmarshal(v, &invocationID)
		}
		if typ != "" && invocationID != "" {
			return typ, invocationID
		}
	}
	return typ, invocationID
}

// CodeResultTooLarge is the error code a caller gets when the function's
// result frame was larger than the engine's MaxFrameBytes.
const CodeResultTooLarge = "result_too_large"

// ResultTooLargeMessage is the message of CodeResultTooLarge; the registry
// parses the size back from it.
const ResultTooLargeMessage = "invocation result too large (%d bytes; max %d)"

// handleOversize deals with a frame that was too large to keep. A result
// for an invocation c was executing fails that invocation with
// result_too_large; anything else is logged and dropped. The connection
// stays up either way.
func (e *Engine) handleOversize(c *conn, big *oversizeFrame) {
	typ, id := frameHead(big.head)
	e.log.Warn("dropping frame larger than MaxFrameBytes; the connection stays open",
		"worker_id", c.id, "remote", c.remoteIP, "type", typ, "invocation_id", id,
		"bytes", big.size, "max_frame_bytes", e.cfg.MaxFrameBytes)
	// Encoders that sort keys put "type" after a huge "result"; a frame
	// whose head names an invocation this connection is executing and no
	// other type is its result.
	if (typ != string(wire.TypeInvocationResult) && typ != "") || !validUUID(id) {
		return
	}
	e.pmu.Lock()
	p := e.pending[id]
	e.pmu.Unlock()
	if p == nil || p.owner != c {
		return
	}
	msg := fmt.Sprintf(ResultTooLargeMessage, big.size, e.cfg.MaxFrameBytes)
	m := wire.Message{Type: wire.TypeInvocationResult, InvocationID: id, FunctionID: p.functionID,
		Error: &wire.ErrorBody{Code: CodeResultTooLarge, Message: msg}}
	e.handleResult(c, &m, encodeError(id, p.functionID, CodeResultTooLarge, msg))
}
