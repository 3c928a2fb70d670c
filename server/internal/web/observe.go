package web

import (
	"net/http"
	"strings"

	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
)

// Routes are the page's routes as metrics name them (the function label of
// a call on the web surface is its route pattern).
var Routes = []string{"GET /{$}", "GET /skill/{id...}", "GET /prompts", "POST /prompts/render", "GET /diagnostics",
	"GET /workers", "GET /prompt/{name...}", "POST /actions/unregister", "POST /actions/label", "POST /actions/rollback",
	"GET /signin", "POST /signin", "GET /usage", "GET /usage/chart/{id...}", "GET /webhooks", "POST /actions/resend-webhook", "/"}

// webClient is the client a skill page read counts as.
const webClient = "web"

// serveObserved routes r, counted and traced under its route, and counts
// a read of the skill a skill page shows. Assets and event streams are
// not calls of the registry.
func (s *Server) serveObserved(w http.ResponseWriter, r *http.Request) {
	o := s.opts.Observer
	if o == nil || strings.HasPrefix(r.URL.Path, "/assets/") || r.URL.Path == "/events" {
		s.mux.ServeHTTP(w, r)
		return
	}
	ctx, call := o.Start(r.Context(), "", surface.Web, tracing.FromHeaders(r.Header))
	ctx = observe.WithReader(ctx, surface.Web, webClient)
	sw := observe.NewStatusWriter(w)
	r = r.WithContext(ctx)
	s.mux.ServeHTTP(sw, r)
	// The mux set the route on r.
	call.Rename(r.Pattern)
	call.End(observe.HTTPCode(sw.Status), nil)
	if r.Pattern == "GET /skill/{id...}" && sw.Status == http.StatusOK && r.URL.Query().Get("file") == "" {
		o.ReadSkill(ctx, r.PathValue("id"), r.URL.Query().Get("version"))
	}
}

// StreamCount is how many live-update streams are open (metrics:
// connections of kind web_stream).
func (s *Server) StreamCount() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.subs)
}
