package xproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
)

// Roles of this test binary when it is started again by a benchmark.
const (
	roleEnv   = "XPROC_ROLE"
	roleEcho  = "echo"  // the echo server
	roleRelay = "relay" // the relay; XPROC_UPSTREAM is the echo server's URL
	upEnv     = "XPROC_UPSTREAM"
	// answerBytes is the size of every echo answer (a 2 KiB skill).
	answerBytes = 2048
)

var upgrader = websocket.Upgrader{ReadBufferSize: 8192, WriteBufferSize: 8192}

// runRole serves one role until the parent kills the process. It prints
// "ws://ADDR" on stdout once listening.
func runRole(role string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var h http.HandlerFunc
	switch role {
	case roleEcho:
		h = serveEcho
	case roleRelay:
		r, err := newRelay(os.Getenv(upEnv))
		if err != nil {
			return err
		}
		h = r.serve
	case roleBareMCP:
		return serveBareMCP(ln)
	case roleStaticHTML:
		return serveStaticHTML(ln)
	case rolePromptPublisher:
		return publishPrompt(os.Getenv(upEnv))
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	fmt.Printf("ws://%s\n", ln.Addr())
	return http.Serve(ln, h)
}

// serveEcho answers every frame [id:4][request] with [id:4][2 KiB].
func serveEcho(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	answer := make([]byte, 4+answerBytes)
	copy(answer[4:], strings.Repeat("x", answerBytes))
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil || len(msg) < 4 {
			return
		}
		copy(answer[:4], msg[:4])
		if err := ws.WriteMessage(websocket.BinaryMessage, answer); err != nil {
			return
		}
	}
}

// relay forwards each caller's frames to the echo server over one shared
// connection, tagged with the caller's id, and routes the answers back.
type relay struct {
	upMu sync.Mutex
	up   *websocket.Conn

	mu      sync.Mutex
	callers map[uint32]*caller
	nextID  uint32
}

type caller struct {
	mu sync.Mutex
	ws *websocket.Conn
}

func newRelay(upstream string) (*relay, error) {
	up, _, err := websocket.DefaultDialer.Dial(upstream, nil)
	if err != nil {
		return nil, fmt.Errorf("dial echo server: %w", err)
	}
	r := &relay{up: up, callers: map[uint32]*caller{}}
	go r.answers()
	return r, nil
}

func (r *relay) answers() {
	for {
		_, msg, err := r.up.ReadMessage()
		if err != nil || len(msg) < 4 {
			os.Exit(1) // the echo server is gone: nothing left to measure
		}
		r.mu.Lock()
		c := r.callers[binary.BigEndian.Uint32(msg)]
		r.mu.Unlock()
		if c == nil {
			continue
		}
		c.mu.Lock()
		_ = c.ws.WriteMessage(websocket.BinaryMessage, msg[4:])
		c.mu.Unlock()
	}
}

func (r *relay) serve(w http.ResponseWriter, req *http.Request) {
	ws, err := upgrader.Upgrade(w, req, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	r.callers[id] = &caller{ws: ws}
	r.mu.Unlock()
	defer func() { r.mu.Lock(); delete(r.callers, id); r.mu.Unlock() }()
	buf := make([]byte, 4, 256)
	binary.BigEndian.PutUint32(buf, id)
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return
		}
		buf = append(buf[:4], msg...)
		r.upMu.Lock()
		err = r.up.WriteMessage(websocket.BinaryMessage, buf)
		r.upMu.Unlock()
		if err != nil {
			return
		}
	}
}

// floorClient is one caller of the floor: one connection, one call at a time.
type floorClient struct{ ws *websocket.Conn }

var request = []byte(`{"uri":"iii://bench/one"}`)

func (c floorClient) call() error {
	if err := c.ws.WriteMessage(websocket.BinaryMessage, request); err != nil {
		return err
	}
	_, msg, err := c.ws.ReadMessage()
	if err != nil {
		return err
	}
	if len(msg) != answerBytes {
		return errors.New("floor: short answer")
	}
	return nil
}
