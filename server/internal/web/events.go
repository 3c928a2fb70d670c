package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/surface"
)

// event is what an open page learns of a change: enough to decide whether
// the region it shows is affected.
type event struct {
	ID         string `json:"id"`
	Op         string `json:"op"`
	Kind       string `json:"kind,omitempty"` // versions events: skill or prompt
	Generation uint64 `json:"generation"`
	versions   bool   // sent as a "versions" event, not a "change"
}

// hub fans the catalog's change stream out to every open event stream.
// Each stream has a small buffer; a stream that falls behind gets one
// "resync" instead of the changes it missed (the page then re-reads its
// region, which shows the current state anyway).
type hub struct {
	cancel func()
	mu     sync.Mutex
	subs   map[*stream]struct{}
	closed bool
}

type stream struct {
	ch     chan event
	resync bool // set under hub.mu when ch was full
	done   chan struct{}
}

const streamBuffer = 64

func newHub(cat *catalog.Catalog) *hub {
	h := &hub{subs: map[*stream]struct{}{}}
	h.cancel = cat.Subscribe(func(c catalog.Change) {
		h.broadcast(event{ID: c.ID, Op: string(c.Op), Generation: c.Generation})
	})
	return h
}

// versionChanged tells the pages of a change of kind id's versions or
// labels: a label move that changes nothing served is no catalog change.
// No catalog generation: this runs under the id's history lock, and the
// catalog's lock is not needed to say which id changed.
func (h *hub) versionChanged(kind core.Kind, id string) {
	h.broadcast(event{ID: id, Op: "versions", Kind: string(kind), versions: true})
}

func (h *hub) broadcast(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			s.resync = true
		}
	}
}

// add opens a stream, or returns nil when max are open.
func (h *hub) add(max int) *stream {
	s := &stream{ch: make(chan event, streamBuffer), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) >= max {
		return nil
	}
	if h.closed {
		close(s.done)
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

func (h *hub) remove(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// takeResync reports and clears a stream's missed-changes flag.
func (h *hub) takeResync(s *stream) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := s.resync
	s.resync = false
	return r
}

func (h *hub) close() {
	h.cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		close(s.done)
	}
	h.subs = nil
}

// keepAlive is how often an idle stream gets a comment line, so proxies
// and the browser keep the connection open.
const keepAlive = 25 * time.Second

// events serves text/event-stream: "change" events {id, op, generation}
// of the catalog, "versions" events {id, kind} of the registry's history
// and "resync" when changes were missed.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "event streams are not supported by this connection", http.StatusInternalServerError)
		return
	}
	// A share per client address: one client's pages cannot take every
	// stream from the others.
	slot, err := s.streams.TryAcquire(budget.ClientOf(r), 1)
	if err != nil {
		w.Header().Set("Retry-After", "30")
		http.Error(w, fmt.Sprintf("too many open pages: %v; this page works without live updates", err), http.StatusServiceUnavailable)
		return
	}
	defer slot.Release()
	st := s.hub.add(s.opts.MaxStreams)
	if st == nil {
		http.Error(w, fmt.Sprintf("too many open pages (%d live-update streams); this page works without live updates", s.opts.MaxStreams),
			http.StatusServiceUnavailable)
		return
	}
	defer s.hub.remove(st)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	// The generation at connect lets the page notice changes made between
	// its render and this stream's start.
	fmt.Fprintf(w, "retry: 1000\nevent: hello\ndata: {\"generation\":%d}\n\n", s.cat.Generation())
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-st.done:
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case ev := <-st.ch:
			b, _ := json.Marshal(ev)
			name := "change"
			if ev.versions {
				name = "versions"
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			s.opts.Observer.Notified(surface.Web, 1)
			if s.hub.takeResync(st) {
				fmt.Fprintf(w, "event: resync\ndata: {\"generation\":%d}\n\n", s.cat.Generation())
			}
		}
		flusher.Flush()
	}
}
