package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// In-process connections. A worker that runs in the engine's own process
// (skills --standalone) can dial the engine through DialContext instead of
// a loopback socket: the frames are the same, read and written by the same
// client and engine code, and the HTTP upgrade goes through the same server;
// only the kernel's TCP stack (two syscalls and a wake-up per frame and
// side) is left out.

// DialContext returns a new in-process connection to the engine, for a
// client's dialer (iii.WithNetDialer). network and addr are ignored. It
// fails once the engine is closed or before it was started.
func (e *Engine) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	e.startMu.Lock()
	ln := e.memLn
	e.startMu.Unlock()
	if ln == nil {
		return nil, errors.New("engine: not started")
	}
	return ln.dial(ctx)
}

// memListener accepts in-process connections for the engine's HTTP server.
type memListener struct {
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := memPipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

// isInProcess reports whether r arrived over an in-process connection
// (DialContext): the worker running inside the engine's own process.
func isInProcess(r *http.Request) bool {
	_, ok := r.Context().Value(http.LocalAddrContextKey).(memAddr)
	return ok
}

// memAddr is the address of both ends of an in-process connection: the
// engine reports the worker as local.
type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "127.0.0.1:0" }

// memPipe returns the two ends of a buffered in-memory connection. Unlike
// net.Pipe, a write never waits for the reader (each side's frames are
// read by a goroutine of its own, like a socket's receive buffer).
func memPipe() (net.Conn, net.Conn) {
	a, b := newMemBuffer(), newMemBuffer()
	return &memConn{in: a, out: b}, &memConn{in: b, out: a}
}

// memKeepBytes is the largest buffer a drained memBuffer keeps for reuse.
const memKeepBytes = 256 << 10

// memBuffer is one direction of a memPipe.
type memBuffer struct {
	mu       sync.Mutex
	buf      []byte // written frames; buf[off:] is still to be read
	off      int
	closed   bool
	wake     chan struct{} // closed and replaced when data, close or a deadline change arrives
	waiting  bool          // a reader waits on wake: data must signal (close and deadlines always do)
	deadline time.Time
}

func newMemBuffer() *memBuffer { return &memBuffer{wake: make(chan struct{})} }

// signal wakes the waiting reader. Callers hold b.mu.
func (b *memBuffer) signal() {
	close(b.wake)
	b.wake = make(chan struct{})
	b.waiting = false
}

func (b *memBuffer) read(p []byte) (int, error) {
	for {
		b.mu.Lock()
		if b.off < len(b.buf) {
			n := copy(p, b.buf[b.off:])
			b.off += n
			if b.off == len(b.buf) {
				// Drained: later frames reuse the array from its start
				// (appending behind a drained slice reallocated it for
				// every frame), unless a burst made it large.
				b.off = 0
				b.buf = b.buf[:0]
				if cap(b.buf) > memKeepBytes {
					b.buf = nil
				}
			}
			b.mu.Unlock()
			return n, nil
		}
		if b.closed {
			b.mu.Unlock()
			return 0, io.EOF
		}
		deadline, wake := b.deadline, b.wake
		b.waiting = true
		b.mu.Unlock()
		if deadline.IsZero() {
			<-wake
			continue
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return 0, os.ErrDeadlineExceeded
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (b *memBuffer) write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, net.ErrClosed
	}
	if b.off > 0 && len(b.buf)+len(p) > cap(b.buf) {
		// Move the unread rest to the front before the array grows.
		b.buf = b.buf[:copy(b.buf, b.buf[b.off:])]
		b.off = 0
	}
	b.buf = append(b.buf, p...)
	if b.waiting {
		b.signal()
	}
	return len(p), nil
}

func (b *memBuffer) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.signal()
	}
	b.mu.Unlock()
}

func (b *memBuffer) setDeadline(t time.Time) {
	b.mu.Lock()
	b.deadline = t
	b.signal()
	b.mu.Unlock()
}

// memConn is one end of a memPipe. Writes never block, so write deadlines
// have nothing to bound.
type memConn struct {
	in, out *memBuffer
}

func (c *memConn) Read(p []byte) (int, error)  { return c.in.read(p) }
func (c *memConn) Write(p []byte) (int, error) { return c.out.write(p) }

// Close ends both directions: the peer reads EOF after what was written.
func (c *memConn) Close() error {
	c.out.close()
	c.in.close()
	return nil
}

func (c *memConn) LocalAddr() net.Addr               { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr              { return memAddr{} }
func (c *memConn) SetDeadline(t time.Time) error     { c.in.setDeadline(t); return nil }
func (c *memConn) SetReadDeadline(t time.Time) error { c.in.setDeadline(t); return nil }
func (c *memConn) SetWriteDeadline(time.Time) error  { return nil }
