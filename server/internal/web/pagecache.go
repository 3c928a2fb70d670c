package web

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The page of one skill is rendered once and served from memory until
// something it shows changes: the catalog (its generation), the registry's
// versions and labels (a counter the version feed bumps), or pageMaxAge
// passes (relative ages and worker names). The CSRF value, the one part
// that differs per browser, is a placeholder in the stored bytes, replaced
// on the way out. Rendering a skill page (markdown, the versions listing,
// the template) costs several times what serving its bytes does.
const (
	pageMaxAge   = time.Second
	pageMaxBytes = 256 << 10 // a larger page is not kept
	pagesBytes   = 8 << 20   // what all kept pages may hold
)

type pageCache struct {
	// placeholder stands for the CSRF value in stored pages: random per
	// server, the same length as a CSRF value, so no content can hold it.
	placeholder []byte
	// versions counts changes of versions and labels.
	versions atomic.Uint64

	mu    sync.Mutex
	pages map[pageKey]*cachedPage
	bytes int
}

type pageKey struct {
	uri       string
	needToken bool
}

type cachedPage struct {
	gen, versions uint64
	at            time.Time
	// parts are the page cut at each CSRF placeholder.
	parts [][]byte
	size  int // of the page without its placeholders
}

func newPageCache() *pageCache {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &pageCache{placeholder: []byte(hex.EncodeToString(b[:])), pages: map[pageKey]*cachedPage{}}
}

// get returns the stored page for k when it is still current.
func (c *pageCache) get(k pageKey, gen uint64) (*cachedPage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[k]
	if !ok || p.gen != gen || p.versions != c.versions.Load() || time.Since(p.at) > pageMaxAge {
		return nil, false
	}
	return p, true
}

// put keeps body, rendered at catalog generation gen and versions count
// versions (read before rendering: a change during it leaves the page
// stale by one check, never current by mistake).
func (c *pageCache) put(k pageKey, gen, versions uint64, body []byte) *cachedPage {
	parts := bytes.Split(body, c.placeholder)
	p := &cachedPage{gen: gen, versions: versions, at: time.Now(), parts: parts,
		size: len(body) - (len(parts)-1)*len(c.placeholder)}
	if len(body) > pageMaxBytes {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pages[k]; ok {
		c.bytes -= old.size
	}
	for c.bytes+p.size > pagesBytes && len(c.pages) > 0 {
		for key, old := range c.pages { // any one: the cache is small and short-lived
			c.bytes -= old.size
			delete(c.pages, key)
			break
		}
	}
	c.pages[k] = p
	c.bytes += p.size
	return p
}

// serveCached writes a stored page with the request's CSRF value in place
// of each placeholder.
func (s *Server) serveCached(w http.ResponseWriter, r *http.Request, p *cachedPage) {
	csrf := s.csrfToken(w, r)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(p.size+(len(p.parts)-1)*len(csrf)))
	w.WriteHeader(http.StatusOK)
	for i, part := range p.parts {
		if i > 0 {
			_, _ = io.WriteString(w, csrf)
		}
		_, _ = w.Write(part)
	}
}

// renderCacheable renders a page whose bytes depend on nothing of the
// request but k, keeps them, and serves them.
func (s *Server) renderCacheable(w http.ResponseWriter, r *http.Request, k pageKey, gen, versions uint64, name string, p *page) {
	p.CSRF = string(s.pages.placeholder)
	p.Generation = gen
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		s.opts.Logger.Error("web: rendering a page failed", "page", name, "err", err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s.serveCached(w, r, s.pages.put(k, gen, versions, buf.Bytes()))
}
