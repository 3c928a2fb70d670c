package engine

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
)

// batchConn wraps a worker's TCP connection so that the writer goroutine
// can hand several WebSocket frames to the kernel in one write: between
// begin and flush every Write is appended to a buffer. Outside a batch
// (the handshake, pongs and close frames that gorilla writes from other
// goroutines) writes go straight through.
type batchConn struct {
	net.Conn
	mu       sync.Mutex
	batching bool
	buf      []byte
}

// maxKeptBatchBuffer is the largest batch buffer kept for reuse.
const maxKeptBatchBuffer = 1 << 20

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.batching {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	return b.Conn.Write(p)
}

// buffered is how many bytes the current batch holds.
func (b *batchConn) buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

func (b *batchConn) begin() {
	b.mu.Lock()
	b.batching = true
	b.mu.Unlock()
}

// flush ends the batch and writes what it collected.
func (b *batchConn) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batching = false
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.Conn.Write(b.buf)
	if cap(b.buf) > maxKeptBatchBuffer {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
	return err
}

// hijackCapture is handed to the upgrader so that the hijacked connection
// is wrapped in a batchConn.
type hijackCapture struct {
	http.ResponseWriter
	conn *batchConn
}

func (h *hijackCapture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("engine: response writer cannot be hijacked")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &batchConn{Conn: c}
	return h.conn, brw, nil
}
