package iii

import (
	"context"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writeWait bounds every single socket write; a peer that does not drain its
// socket for this long is treated as dead.
const writeWait = 10 * time.Second

// wsConn is one live WebSocket connection. gorilla/websocket allows a single
// concurrent writer, so every data frame goes through an unbounded FIFO that
// one writer goroutine drains. Enqueueing never blocks, which lets the client
// put the whole registration replay on the queue while holding its lock and so
// guarantee frame order. Control frames (ping, close) use WriteControl, which
// gorilla allows concurrently with everything else.
type wsConn struct {
	ws *websocket.Conn

	// ctx is cancelled when the connection ends; handlers started for
	// frames of this connection run under it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	queue  [][]byte
	closed bool
	// resends are the result copies waiting to go (WithResultResend), by
	// invocation_id; guarded by mu.
	resends map[string]*time.Timer
	wake    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newWSConn(parent context.Context, ws *websocket.Conn) *wsConn {
	ctx, cancel := context.WithCancel(parent)
	return &wsConn{ws: ws, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// send queues one text frame. It reports false if the connection is closed.
func (c *wsConn) send(frame []byte) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, frame)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// close tears the connection down; safe to call many times from anywhere.
func (c *wsConn) close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.queue = nil
		c.mu.Unlock()
		close(c.done)
		c.cancel()
		_ = c.ws.Close()
	})
}

// closeGracefully sends a normal-closure close frame, then closes.
func (c *wsConn) closeGracefully() {
	_ = c.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, "client closed"),
		time.Now().Add(time.Second))
	c.close()
}

// writeLoop drains the frame queue and sends a WebSocket ping every
// pingInterval. It returns (and closes the connection) on the first write
// error or when the connection is closed.
func (c *wsConn) writeLoop(pingInterval time.Duration) {
	defer c.close()
	ticker := time.NewTicker(pingInterval)
	defer ticker.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ticker.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				return
			}
		case <-c.wake:
			for {
				c.mu.Lock()
				batch := c.queue
				c.queue = nil
				c.mu.Unlock()
				if len(batch) == 0 {
					break
				}
				for _, frame := range batch {
					_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
					if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
						return
					}
				}
			}
		}
	}
}

// resendLater sends frame (the result of invocation id) again after d,
// unless cancelResend(id) runs first: a new invocation under the same id
// must not be answered with this copy. A closed connection drops it.
func (c *wsConn) resendLater(id string, frame []byte, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.resends == nil {
		c.resends = make(map[string]*time.Timer)
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		c.mu.Lock()
		mine := c.resends[id] == t
		if mine {
			delete(c.resends, id)
		}
		c.mu.Unlock()
		if mine {
			c.send(frame)
		}
	})
	if old := c.resends[id]; old != nil {
		old.Stop()
	}
	c.resends[id] = t
}

// cancelResend drops the copy of id's result that has not left yet.
func (c *wsConn) cancelResend(id string) {
	c.mu.Lock()
	if t := c.resends[id]; t != nil {
		t.Stop()
		delete(c.resends, id)
	}
	c.mu.Unlock()
}
