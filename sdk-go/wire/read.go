package wire

import (
	"bytes"
	"sync"

	"github.com/gorilla/websocket"
)

// maxPooledRead bounds the read buffers kept for reuse; rarer, larger
// messages get a buffer of their own.
const maxPooledRead = 1 << 20

var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ReadMessage reads the next message of ws like (*websocket.Conn).ReadMessage,
// through a pooled buffer: ReadMessage grows a fresh slice step by step for
// every message (about 8 KiB allocated for a 2 KiB one), which made up half
// of all bytes allocated on a skill::fetch round trip. The returned slice
// belongs to the caller and has the message's exact size.
func ReadMessage(ws *websocket.Conn) (messageType int, data []byte, err error) {
	mt, r, err := ws.NextReader()
	if err != nil {
		return mt, nil, err
	}
	buf := readBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if _, err = buf.ReadFrom(r); err == nil {
		data = append(make([]byte, 0, buf.Len()), buf.Bytes()...)
	}
	if buf.Cap() <= maxPooledRead {
		readBuffers.Put(buf)
	}
	return mt, data, err
}
