package web

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/directory"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/observe"
)

// Folders is the skills folders' side of the page (*directory.Directory):
// folder prompts and diagnostics, read in-process.
type Folders interface {
	FolderPrompts() []directory.FolderPrompt
	FolderPromptNamed(name string) (directory.FolderPromptBody, error)
	Diagnostics() directory.Diagnostics
}

// Options configure the page.
type Options struct {
	// Catalog is what the page shows (required).
	Catalog *catalog.Catalog
	// Registry is the registry the page shows and changes (core.Local of
	// this process: no engine hop). Nil: prompts and versions say they are
	// unavailable.
	Registry core.Registry
	// Folders are the skills folders (nil: none are served).
	Folders Folders
	// Engine reaches the engine's own listings (the workers page and the
	// names of publishers: engine::workers::list). Nil: unavailable.
	Engine invoke.Trigger
	// Searcher ranks search results; nil uses FilterSearcher on Catalog.
	Searcher Searcher
	// Guard is the listener's Host / Origin / token policy. Its Token
	// protects every page and is required by every action.
	Guard httpguard.Policy
	// TokenSetting names where the operator sets the token, for messages
	// ("--mcp-token").
	TokenSetting string
	// PublicOrigin is the origin browsers reach the page at through a
	// reverse proxy that terminates TLS ("https://skills.example.com", from
	// --public-url, checked by httpguard.PublicOrigin). Behind such a proxy
	// the listener sees plain HTTP, so the page cannot tell its origin
	// from the request; with this set it accepts form posts from that
	// origin and, when it is https, marks its cookies Secure on requests
	// for that host. Forwarded headers are never trusted for either.
	// Empty: the page's origin is the request's own (https only when this
	// listener serves TLS itself).
	PublicOrigin string
	// PageSize is how many skills one catalog page lists (default 100).
	PageSize int
	// CallTimeout bounds each registry or engine call (default 10 s).
	CallTimeout time.Duration
	// MaxStreams bounds the open live-update streams, one per open page
	// (default 256), and MaxStreamsPerClient those of one client address
	// (default an eighth of them): more get 503 and their pages work
	// without live updates.
	MaxStreams          int
	MaxStreamsPerClient int
	// VersionChanges, when set, subscribes to changes of the registry's
	// versions and labels (core.Local.SubscribeVersions: kind skill or
	// prompt, and the id), so open pages refresh their versions lists,
	// label moves that change nothing served included.
	VersionChanges func(fn func(kind core.Kind, id string)) (cancel func())
	// ServeLabel is the registry's serve label (--serve-label), to mark
	// the version reads without a selector serve.
	ServeLabel string
	// ProtectedLabels are the labels that move only with the admin token.
	ProtectedLabels []string
	// ActionTokens resolves the token an action's form carries to who
	// acts (actions.go): the registry's admin token acts as the operator,
	// a team's engine token (engine_tokens) as that team, within its
	// namespaces. Guard.Token, which lets a reader see the page, changes
	// nothing. Nil: no token acts, and the page changes nothing.
	ActionTokens func(token string) (Actor, bool)
	// AdminToken is passed as admin_token on label moves a team makes
	// from the page. Empty (the default): protected labels move only with
	// the admin token itself. Set only when the operator chose so
	// (--web-admin-labels): a team token then moves them on its own ids.
	AdminToken string
	// Observer counts and traces each request and the skill pages read
	// (observe.go; nil: none). Usage answers the usage views (nil: usage
	// counting is off) and Webhooks the webhook deliveries (nil: none
	// configured).
	Observer *observe.Observer
	Usage    UsageSource
	Webhooks WebhookAdmin
	// Publishers says which worker published a skill or prompt
	// (core.Local); the page names it through engine::workers::list.
	// Nil: published skills say only that a worker published them.
	Publishers Publishers
	Logger     *slog.Logger
}

// Server is the web page; it is an http.Handler.
type Server struct {
	opts   Options
	cat    *catalog.Catalog
	search Searcher
	mux    *http.ServeMux
	tmpl   *template.Template
	hub    *hub
	pages  *pageCache
	csp    string
	tree   atomic.Pointer[treeCache]
	names  workerNames
	// unsubNames ends the subscriptions that mark the names stale.
	unsubNames func()
	// publicHost is PublicOrigin's host, and publicTLS whether it is https.
	publicHost string
	publicTLS  bool

	// streams are the live-update streams, a share per client address.
	streams *budget.Pool
}

//go:embed assets templates
var files embed.FS

// Cookie names: the signed-in token and the CSRF double-submit value.
const (
	tokenCookie = "skills_web_token"
	csrfCookie  = "skills_web_csrf"
	csrfField   = "csrf"
)

// contentSecurityPolicy allows only this origin's script, style and
// images, fetches and event streams to this origin, and nothing else: no
// inline script, no objects, no frames, no <base>, no image from another
// host (markdown images are rendered as links, markdown.go).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// New builds the page and subscribes to the catalog; Close unsubscribes.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 10 * time.Second
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = 256
	}
	if opts.MaxStreamsPerClient <= 0 {
		opts.MaxStreamsPerClient = max(1, opts.MaxStreams/8)
	}
	if opts.TokenSetting == "" {
		opts.TokenSetting = "--mcp-token"
	}
	s := &Server{opts: opts, cat: opts.Catalog, search: opts.Searcher, csp: contentSecurityPolicy}
	if u, err := url.Parse(opts.PublicOrigin); err == nil && opts.PublicOrigin != "" {
		s.publicHost, s.publicTLS = u.Hostname(), u.Scheme == "https"
	}
	if s.search == nil {
		s.search = FilterSearcher{Catalog: opts.Catalog}
	}
	s.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/*.html"))
	s.hub = newHub(opts.Catalog)
	s.pages = newPageCache()
	// One subscription to the registry's versions and labels: open pages
	// refresh their versions lists (label moves that change nothing served
	// included), kept pages are no longer current, and a publish may come
	// from a worker the cached names do not hold yet (prompts change no
	// catalog entry).
	unsubVersions := func() {}
	if opts.VersionChanges != nil {
		unsubVersions = opts.VersionChanges(func(kind core.Kind, id string) {
			s.pages.versions.Add(1)
			s.names.stale.Store(true)
			s.hub.versionChanged(kind, id)
		})
	}
	s.unsubNames = unsubVersions
	s.streams = budget.New("live-update streams", int64(opts.MaxStreams), int64(opts.MaxStreamsPerClient))
	if opts.Publishers != nil {
		unsubCat := opts.Catalog.Subscribe(func(catalog.Change) { s.names.stale.Store(true) })
		s.unsubNames = func() { unsubCat(); unsubVersions() }
	}
	assets, _ := fs.Sub(files, "assets")
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", assetHandler(assets)))
	mux.HandleFunc("GET /{$}", s.authed(s.index))
	mux.HandleFunc("GET /skill/{id...}", s.authed(s.skill))
	mux.HandleFunc("GET /prompts", s.authed(s.prompts))
	mux.HandleFunc("POST /prompts/render", s.authed(s.renderPrompt))
	mux.HandleFunc("GET /diagnostics", s.authed(s.diagnostics))
	mux.HandleFunc("GET /workers", s.authed(s.workers))
	mux.HandleFunc("GET /events", s.authed(s.events))
	mux.HandleFunc("GET /prompt/{name...}", s.authed(s.prompt))
	// Actions check the token themselves (form field, cookie or header).
	mux.HandleFunc("POST /actions/unregister", s.unregister)
	mux.HandleFunc("POST /actions/label", s.moveLabel)
	mux.HandleFunc("POST /actions/rollback", s.rollback)
	s.addObservabilityRoutes(mux)
	mux.HandleFunc("GET /signin", s.signinForm)
	mux.HandleFunc("POST /signin", s.signin)
	mux.HandleFunc("/", s.notFound)
	s.mux = mux
	return s
}

// Close stops the change subscription and ends open event streams.
func (s *Server) Close() { s.unsubNames(); s.hub.close() }

// ServeHTTP applies the listener's Host and Origin rules and the security
// headers, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	guard := s.opts.Guard
	guard.Token = "" // checked per route: the sign-in form must be reachable without it
	if s.opts.PublicOrigin != "" {
		guard.AllowedOrigins = append(slices.Clip(guard.AllowedOrigins), s.opts.PublicOrigin)
	}
	if ref := guard.Check(r); ref != nil {
		http.Error(w, s.explainProxy(r, ref.Message), ref.Status)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	s.serveObserved(w, r)
}

// maxFormBytes bounds a posted form: the page's forms carry an id, a token
// and a few prompt arguments.
const maxFormBytes = 64 << 10

// hasToken reports whether the request presents the listener token (bearer
// header or the sign-in cookie). With no token configured every request
// passes.
func (s *Server) hasToken(r *http.Request) bool {
	tok := s.opts.Guard.Token
	if tok == "" {
		return true
	}
	if httpguard.BearerOK(r.Header.Get("Authorization"), tok) {
		return true
	}
	c, err := r.Cookie(tokenCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(tok)) == 1
}

// authed serves h only to requests that present the token when one is
// configured; browsers are sent to the sign-in form.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.hasToken(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skills"`)
			s.render(w, r, http.StatusUnauthorized, "signin", &page{Title: "Sign in", Data: signinData{
				Next: r.URL.RequestURI(), Setting: s.opts.TokenSetting}})
			return
		}
		h(w, r)
	}
}

// csrfToken returns the request's CSRF value, setting the cookie when the
// browser has none yet.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	v := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.overTLS(r)})
	return v
}

// overTLS reports whether the browser reached this request over https:
// this listener serves TLS itself, or the request is for the host of an
// https PublicOrigin (the operator's word that a TLS proxy serves it).
// Cookies set on such a request are Secure, so a browser never sends them
// over plain http.
func (s *Server) overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return s.publicTLS && strings.EqualFold(strings.Trim(host, "[]"), s.publicHost)
}

// checkPost refuses a state-changing request that is not a same-origin
// form post carrying the CSRF value of its cookie. It returns "" when the
// request may proceed, else why not.
func (s *Server) checkPost(r *http.Request) string {
	if err := r.ParseForm(); err != nil {
		return fmt.Sprintf("the form could not be read (%v); expected a form of at most %d KiB", err, maxFormBytes>>10)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "the request has no Origin header: changes are accepted only from this page (a same-origin POST)"
	}
	if !s.sameOrigin(origin, r) {
		return s.explainProxy(r, "origin "+origin+" is not this page's origin: changes are accepted only from this page")
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "Sec-Fetch-Site is " + site + ": changes are accepted only from this page"
	}
	c, err := r.Cookie(csrfCookie)
	form := r.PostFormValue(csrfField)
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1 {
		return "the form's CSRF token is missing or stale: reload the page and try again"
	}
	return ""
}

// sameOrigin compares an Origin header with the page's origin: the
// request's own (its Host, https only when this listener serves TLS), or
// the PublicOrigin the operator configured.
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host) || (s.opts.PublicOrigin != "" && strings.EqualFold(origin, s.opts.PublicOrigin))
}

// publicURLSetting is where the operator sets PublicOrigin.
const publicURLSetting = "--public-url (config public_url)"

// explainProxy turns the refusal of a form posted from https://<Host>
// while this listener sees plain http (a TLS proxy in front, and no
// PublicOrigin) into one that says what to set.
func (s *Server) explainProxy(r *http.Request, refusal string) string {
	origin := r.Header.Get("Origin")
	if s.opts.PublicOrigin != "" || r.TLS != nil || !strings.EqualFold(origin, "https://"+r.Host) {
		return refusal
	}
	return refusal + " (this page was reached as " + origin + " through a proxy that terminates TLS, and the server was not told " +
		"that address: start it with " + publicURLSetting + " " + origin + ")"
}

func assetHandler(assets fs.FS) http.Handler {
	fsrv := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}
