package mcp

import (
	"net/http"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultIdleSessionTimeout is how long a 2025-11-25 session may sit with no
// request in flight and no open stream before it is closed. Harnesses keep
// a GET stream open while they wait for list_changed, which counts as
// activity, so only clients that really left are swept.
const DefaultIdleSessionTimeout = 10 * time.Minute

// DefaultMaxSessions caps live 2025-11-25 sessions; when a new one would
// pass it, the session idle the longest is closed first.
const DefaultMaxSessions = 1000

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
	timeout time.Duration // <= 0: no idle sweep
	every   time.Duration
	max     int // <= 0: no cap

	mu        sync.Mutex
	inFlight  map[string]int       // requests (GET streams included) per session id
	lastSeen  map[string]time.Time // when a session was last active
	lastSweep time.Time
}

func newIdleSessions(server *sdk.Server, timeout time.Duration, max int) *idleSessions {
	every := time.Minute
	if timeout > 0 {
		every = min(timeout/4, time.Minute)
	}
	return &idleSessions{
		server:   server,
		timeout:  timeout,
		max:      max,
		every:    every,
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
			// Possibly an initialize: make room first, then start the new
			// session's idle clock from its first response.
			s.enforceCap()
			next.ServeHTTP(w, r)
			if nid := w.Header().Get(sessionHeader); nid != "" {
				s.mu.Lock()
				if _, ok := s.lastSeen[nid]; !ok {
					s.lastSeen[nid] = time.Now()
				}
				s.mu.Unlock()
			}
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
	if s.timeout <= 0 {
		return
	}
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

// enforceCap closes the sessions idle the longest (no request in flight)
// until a new one fits under max. Sessions with a request or stream open
// are never closed for room.
func (s *idleSessions) enforceCap() {
	if s.max <= 0 {
		return
	}
	now := time.Now()
	type cand struct {
		ss   *sdk.ServerSession
		seen time.Time
	}
	var idle []cand
	live := 0
	s.mu.Lock()
	for ss := range s.server.Sessions() {
		id := ss.ID()
		if id == "" {
			continue
		}
		live++
		if s.inFlight[id] > 0 {
			continue
		}
		seen, ok := s.lastSeen[id]
		if !ok {
			seen = now
			s.lastSeen[id] = now
		}
		idle = append(idle, cand{ss, seen})
	}
	excess := live - s.max + 1
	if excess <= 0 {
		s.mu.Unlock()
		return
	}
	slices.SortFunc(idle, func(a, b cand) int { return a.seen.Compare(b.seen) })
	idle = idle[:min(excess, len(idle))]
	for _, c := range idle {
		delete(s.lastSeen, c.ss.ID())
	}
	s.mu.Unlock()
	for _, c := range idle {
		_ = c.ss.Close()
	}
}
