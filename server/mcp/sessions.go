package mcp

import (
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultIdleSessionTimeout is how long a 2025-11-25 session may sit with no
// request in flight and no open stream before it is closed.
const DefaultIdleSessionTimeout = time.Hour

// sessionHeader carries the session id of stateful (2025-11-25) requests.
const sessionHeader = "Mcp-Session-Id"

// idleSessions closes stateful sessions whose client went away without a
// DELETE (a crash, a closed laptop): without it each one keeps its state and
// its notification subscriptions forever. go-sdk's own SessionTimeout is not
// used because it counts a long-lived GET stream, the way clients wait for
// list_changed, as idleness.
//
// Sweeps ride on incoming requests instead of a goroutine: sessions are only
// created by requests, so stale ones cannot pile up between two sweeps.
type idleSessions struct {
	server  *sdk.Server
	timeout time.Duration
	every   time.Duration

	mu        sync.Mutex
	inFlight  map[string]int       // requests (GET streams included) per session id
	lastSeen  map[string]time.Time // when a session was last active
	lastSweep time.Time
}

func newIdleSessions(server *sdk.Server, timeout time.Duration) *idleSessions {
	return &idleSessions{
		server:   server,
		timeout:  timeout,
		every:    min(timeout/4, time.Minute),
		inFlight: make(map[string]int),
		lastSeen: make(map[string]time.Time),
	}
}

// wrap tracks the requests of every session and sweeps now and then.
func (s *idleSessions) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.sweep(time.Now())
		id := r.Header.Get(sessionHeader)
		if id == "" {
			next.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		s.inFlight[id]++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if s.inFlight[id]--; s.inFlight[id] == 0 {
				delete(s.inFlight, id)
			}
			s.lastSeen[id] = time.Now()
			s.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// sweep closes the sessions idle for longer than the timeout. A session not
// seen before (just initialized) starts its idle time now.
func (s *idleSessions) sweep(now time.Time) {
	s.mu.Lock()
	if now.Sub(s.lastSweep) < s.every {
		s.mu.Unlock()
		return
	}
	s.lastSweep = now
	live := make(map[string]bool)
	var idle []*sdk.ServerSession
	for ss := range s.server.Sessions() {
		id := ss.ID()
		if id == "" {
			continue
		}
		live[id] = true
		seen, ok := s.lastSeen[id]
		switch {
		case s.inFlight[id] > 0:
		case !ok:
			s.lastSeen[id] = now
		case now.Sub(seen) > s.timeout:
			idle = append(idle, ss)
			delete(s.lastSeen, id)
		}
	}
	for id := range s.lastSeen {
		if !live[id] {
			delete(s.lastSeen, id) // closed by DELETE or by the client
		}
	}
	s.mu.Unlock()
	for _, ss := range idle {
		_ = ss.Close()
	}
}
