package engine

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// conn is one worker connection on "/".
type conn struct {
	e           *Engine
	id          string // worker_id sent in workerregistered
	token       string // reattach_token
	ws          *websocket.Conn
	bc          *batchConn
	remoteIP    string
	connectedAt time.Time
	scope       *ScopedToken // the scoped token it presented; nil: full access
	// local marks an in-process connection (DialContext): the worker that
	// runs inside the engine's process (the standalone registry). It is
	// never disconnected for its backlog, and what it registers is
	// reserved for in-process connections (reserve.go).
	local bool
	stamp json.RawMessage // callerMetadata(c), stamped on the invocations it makes

	// Outbound queue: producers append without blocking (so they may hold
	// engine locks and frames keep their order); the writer goroutine
	// drains it. qbytes counts every byte queued until it is written (the
	// batch being written included), so a writer stuck on a client that
	// does not read cannot make room for a second full queue. A worker
	// that passes maxQueuedFrames or Config.MaxConnOutboundBytes is
	// disconnected.
	qmu    sync.Mutex
	queue  [][]byte
	qbytes atomic.Int64
	big    int64 // bytes of the oversize frame queued or being written (at most one); guarded by qmu
	wake   chan struct{}

	done        chan struct{} // closed when the connection is finished
	closeOnce   sync.Once
	cleanupOnce sync.Once

	// Calls of this connection waiting for its window (dispatch.go).
	hmu  sync.Mutex
	held []heldCall
	sent int // calls dispatched in the window and not answered

	active    atomic.Int64 // invocations this worker is executing
	calls     atomic.Int64 // worker-routed invocations (and queued jobs) this worker made and is waiting on
	callBytes atomic.Int64 // their invocationSize, against Config.MaxCallerBytes

	// The budget of invocations delivered to this worker (gate.go),
	// guarded by gmu: what was sent and not answered, and the calls
	// waiting for room, in arrival order.
	gmu       sync.Mutex
	loadBytes int64
	loadCalls int
	gate      []gatedCall
	gateBytes int64 // of the gated calls over smallCall bytes

	info *workerInfo // set by engine::workers::register; guarded by e.mu
	dead bool        // cleanup has started; guarded by e.pmu
}

// workerInfo is what a worker told engine::workers::register.
type workerInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Runtime     string          `json:"runtime"`
	Version     string          `json:"version"`
	OS          string          `json:"os"`
	PID         *uint32         `json:"pid"`
	Isolation   string          `json:"isolation"`
	Telemetry   *workerTelemtry `json:"telemetry"`
}

type workerTelemtry struct {
	Language    string `json:"language,omitempty"`
	ProjectName string `json:"project_name,omitempty"`
	Framework   string `json:"framework,omitempty"`
}

// name is the worker's registered name, or "" if it has not registered.
// Callers hold e.mu.
func (c *conn) name() string {
	if c == nil || c.info == nil {
		return ""
	}
	return c.info.Name
}

func (e *Engine) handleWorker(w http.ResponseWriter, r *http.Request) {
	if e.isClosing() {
		http.Error(w, "iii engine is shutting down", http.StatusServiceUnavailable)
		return
	}
	hc := &hijackCapture{ResponseWriter: w}
	ws, err := e.upgrader.Upgrade(hc, r, nil)
	if err != nil {
		e.log.Debug("worker upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	c := &conn{
		e:           e,
		id:          uuid.NewString(),
		token:       uuid.NewString(),
		ws:          ws,
		bc:          hc.conn,
		remoteIP:    ip,
		connectedAt: time.Now(),
		scope:       scopeOf(r),
		local:       isInProcess(r),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	c.stamp = callerMetadata(c)
	// No gorilla read limit: readFrame enforces MaxFrameBytes without
	// closing the connection.

	if !e.track(c) {
		_ = ws.Close()
		return
	}
	defer e.connWG.Done()
	e.out.add(c)

	c.send(encode(&wire.Message{Type: wire.TypeWorkerRegistered, WorkerID: c.id, ReattachToken: c.token}))
	go c.writeLoop()
	e.log.Debug("worker connected", "worker_id", c.id, "remote", r.RemoteAddr)
	e.workersEvent(eventWorkerConnected, c.id)

	c.readLoop()
	c.close()
	e.cleanup(c)
	e.mu.Lock()
	info := c.info
	e.mu.Unlock()
	if info != nil {
		e.log.Info("worker left", "name", info.Name, "worker_id", c.id)
	} else {
		e.log.Debug("worker disconnected", "worker_id", c.id)
	}
}

func (c *conn) readLoop() {
	log := c.e.log
	for {
		mt, data, big, err := readFrame(c.ws, c.e.cfg.MaxFrameBytes)
		if err != nil {
			switch {
			case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived):
			default:
				select {
				case <-c.done:
				default:
					log.Debug("worker read failed", "worker_id", c.id, "err", err)
				}
			}
			return
		}
		if big != nil {
			c.e.handleOversize(c, big)
			continue
		}
		c.e.handleFrame(c, mt, data)
	}
}

// send queues one frame for the writer. It never blocks. It reports false
// when the connection is gone or has just been closed for being too slow.
func (c *conn) send(frame []byte) bool {
	if len(frame) > pythonFrameLimit {
		c.e.log.Warn("sending a frame larger than 1 MiB; the official Python client closes its socket on such frames",
			"worker_id", c.id, "bytes", len(frame))
	}
	c.qmu.Lock()
	select {
	case <-c.done:
		c.qmu.Unlock()
		return false
	default:
	}
	// The cap bounds a backlog: one frame larger than the cap (a state::list
	// of a big scope, say) still goes to a client that has read everything
	// before it; only a client that leaves frames unread is disconnected.
	// The frames behind one oversize frame are a backlog of their own (the
	// calls a registry gets during its cold load); a second oversize frame
	// still disconnects, so a client that asks without reading cannot pile
	// them up.
	//
	// The in-process connection is exempt: its writes never block (they
	// land in its memPipe), so a backlog there is the engine's own burst,
	// never a client that stopped reading, and dropping it would hand the
	// registry's ids to whoever asks next. What reaches it is bounded
	// upstream instead: each worker gets at most Config.MaxWorkerBytes of
	// invocations at a time (gate.go).
	limit, size := c.e.cfg.MaxConnOutboundBytes, int64(len(frame))
	queued := c.qbytes.Load()
	if size <= limit {
		queued -= c.big
	}
	if !c.local && (len(c.queue) >= maxQueuedFrames || queued > 0 && queued+size > limit) {
		n, b := len(c.queue), c.qbytes.Load()
		c.qmu.Unlock()
		c.e.log.Error("closing worker connection: it is not reading its frames",
			"worker_id", c.id, "remote", c.remoteIP, "queued_frames", n, "queued_bytes", b,
			"max_conn_outbound_bytes", c.e.cfg.MaxConnOutboundBytes)
		// No close frame: the client is not reading, and writing one could
		// block the producer (which may hold engine locks).
		c.close()
		return false
	}
	c.queue = append(c.queue, frame)
	c.qbytes.Add(size)
	if size > limit {
		c.big += size
	}
	total := c.e.out.total.Add(int64(len(frame)))
	c.qmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if total > c.e.cfg.MaxOutboundBytes {
		c.e.shedGlobal()
	}
	return true
}

func (c *conn) writeLoop() {
	defer func() {
		if r := recover(); r != nil {
			c.e.log.Error("panic in connection writer", "worker_id", c.id, "panic", r)
			c.close()
		}
	}()
	var batch [][]byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.qmu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.qmu.Unlock()
		var n, big int64
		for _, f := range batch {
			n += int64(len(f))
			if int64(len(f)) > c.e.cfg.MaxConnOutboundBytes {
				big += int64(len(f))
			}
		}
		err := c.writeBatch(batch)
		c.qmu.Lock()
		c.big -= big
		c.qmu.Unlock()
		c.release(n)
		c.releaseHeld() // calls held while this backlog was large
		if err != nil {
			select {
			case <-c.done:
			default:
				c.e.log.Debug("worker write failed; closing", "worker_id", c.id, "err", err)
			}
			c.close()
			return
		}
		clear(batch)
	}
}

// writeBatch writes frames with as few syscalls as possible: gorilla
// encodes each frame into the batchConn buffer, and one flush sends them.
func (c *conn) writeBatch(frames [][]byte) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	if len(frames) == 1 || c.bc == nil {
		for _, f := range frames {
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				return err
			}
		}
		return nil
	}
	c.bc.begin()
	for _, f := range frames {
		if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
			_ = c.bc.flush()
			return err
		}
		// Flush every MiB: a batch for a slow reader must not copy its
		// whole backlog into a second buffer.
		if c.bc.buffered() >= maxKeptBatchBuffer {
			if err := c.bc.flush(); err != nil {
				return err
			}
			c.bc.begin()
		}
	}
	return c.bc.flush()
}

// isDone reports whether the connection has been closed.
func (c *conn) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// close ends the connection without a close frame.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.qmu.Lock()
		close(c.done)
		var n int64
		for _, f := range c.queue {
			n += int64(len(f))
		}
		c.queue = nil
		c.qmu.Unlock()
		c.release(n)
		c.e.out.remove(c)
		_ = c.ws.Close()
	})
}

// closeWith sends a close frame with code and reason, then closes.
func (c *conn) closeWith(code int, reason string) {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason),
		time.Now().Add(time.Second))
	c.close()
}

// isTelemetry reports whether a binary frame carries OTLP telemetry, which
// the official SDKs may send on the worker socket.
func isTelemetry(b []byte) bool {
	return bytes.HasPrefix(b, []byte("OTLP")) || bytes.HasPrefix(b, []byte("MTRC")) || bytes.HasPrefix(b, []byte("LOGS"))
}

// reattach evicts the connection a reconnecting worker had before, so that
// its cleanup finishes before this connection's registrations are replayed.
func (e *Engine) reattach(c *conn, m *wire.Message) {
	e.mu.RLock()
	old := e.conns[m.PreviousWorkerID]
	e.mu.RUnlock()
	switch {
	case old == nil:
		e.log.Debug("reattach ignored: previous worker is not connected", "worker_id", c.id,
			"previous_worker_id", m.PreviousWorkerID)
		return
	case old == c:
		return
	case old.token != m.ReattachToken:
		e.log.Warn("reattach ignored: reattach_token does not match", "worker_id", c.id,
			"previous_worker_id", m.PreviousWorkerID)
		return
	}
	e.log.Info("worker reattached; evicting its previous connection", "worker_id", c.id,
		"previous_worker_id", old.id)
	old.closeWith(websocket.CloseNormalClosure, "replaced by a reattached connection")
	e.cleanup(old)
}

// cleanup removes everything a finished connection owned
// (docs/reference/engine-protocol.md §1.8). It runs once per connection;
// concurrent callers wait for it.
func (e *Engine) cleanup(c *conn) {
	c.cleanupOnce.Do(func() {
		// Functions go first, so that once a caller has been told
		// invocation_stopped, a retry gets function_not_found.
		e.mu.Lock()
		delete(e.conns, c.id)
		removed := false
		for id, f := range e.functions {
			if f.owner == c {
				delete(e.functions, id)
				removed = true
			}
		}
		e.dropTriggersLocked(c)
		e.mu.Unlock()
		e.dropHeld(c)
		e.haltInvocations(c)
		e.dropGate(c)
		if removed {
			e.functionsChanged()
		}
		e.workersEvent(eventWorkerDisconnected, c.id)
	})
}
