package downloads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillarchive"
	"github.com/iii-skills/skills/server/internal/skillsext"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
)

// Defaults of Options.
const (
	DefaultMemoryMiB   = 256
	DefaultQueueWait   = 30 * time.Second
	DefaultStall       = 30 * time.Second
	DefaultMaxDuration = 10 * time.Minute
	DefaultDigestCache = 4096
)

// Options configure the downloads.
type Options struct {
	// Registry is read for the skills and their files.
	Registry core.Registry
	// Guard is the listener's door (Origin, Host, token): the one of /mcp.
	Guard  httpguard.Policy
	Logger *slog.Logger
	// Observer counts and traces each request under its route and counts
	// each skill downloaded as a read on the download surface (nil: none).
	Observer *observe.Observer
	// MemoryMiB bounds the MiB of file bytes and compressor state the
	// downloads in flight hold together (a download holds 1 MiB plus its
	// largest file), a client at most a quarter of it (DefaultMemoryMiB).
	MemoryMiB int64
	// QueueWait is how long a download waits for its share before 503
	// (DefaultQueueWait).
	QueueWait time.Duration
	// Stall cuts a client off when a write to it has not gone through for
	// this long; MaxDuration bounds a whole download (DefaultStall,
	// DefaultMaxDuration).
	Stall, MaxDuration time.Duration
	// DigestCache is how many archives' digests are kept (DefaultDigestCache).
	DigestCache int
}

// Handler serves the index and the downloads; Mount puts it on a mux.
type Handler struct {
	reg     core.Registry
	guard   httpguard.Policy
	obs     *observe.Observer
	log     *slog.Logger
	memory  *budget.Pool
	wait    budget.Wait
	stall   time.Duration
	maxDur  time.Duration
	digests *digests
	// warned is the last reason logged per skill left out of the index.
	warned sync.Map
}

// New returns the downloads of o.Registry.
func New(o Options) *Handler {
	if o.MemoryMiB <= 0 {
		o.MemoryMiB = DefaultMemoryMiB
	}
	if o.QueueWait <= 0 {
		o.QueueWait = DefaultQueueWait
	}
	if o.Stall <= 0 {
		o.Stall = DefaultStall
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.DigestCache <= 0 {
		o.DigestCache = DefaultDigestCache
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	pool := budget.New("MiB of downloads in flight", o.MemoryMiB, max(o.MemoryMiB/4, 1))
	return &Handler{reg: o.Registry, guard: o.Guard, obs: o.Observer, log: o.Logger, memory: pool,
		wait:  budget.Wait{Max: o.QueueWait, ForShare: true, ShareMax: o.QueueWait},
		stall: o.Stall, maxDur: o.MaxDuration, digests: newDigests(o.DigestCache)}
}

// Routes are the downloads' routes as metrics name them (the function
// label of a call on the download surface).
var Routes = []string{routeIndex, routeWellKnown, routeArchive}

const (
	routeIndex     = "GET " + IndexPath
	routeWellKnown = "GET " + WellKnownPrefix + "{rest...}"
	routeArchive   = "GET " + ArchivePrefix + "{rest...}"
)

// Mount serves the index and the downloads on mux (GET and HEAD, and
// OPTIONS for browsers' preflight requests), behind the guard.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.Handle(routeIndex, h.observed(routeIndex, h.guarded(h.serveIndex)))
	mux.Handle(routeWellKnown, h.observed(routeWellKnown, h.guarded(func(w http.ResponseWriter, r *http.Request) {
		h.serveDownload(w, r, WellKnownPrefix, skillarchive.Flat)
	})))
	mux.Handle(routeArchive, h.observed(routeArchive, h.guarded(func(w http.ResponseWriter, r *http.Request) {
		h.serveDownload(w, r, ArchivePrefix, skillarchive.Wrapped)
	})))
	mux.HandleFunc("OPTIONS "+WellKnownPrefix+"{rest...}", h.preflight)
	mux.HandleFunc("OPTIONS "+ArchivePrefix+"{rest...}", h.preflight)
}

// observed counts and traces a request under route, refusals included.
func (h *Handler) observed(route string, next http.Handler) http.Handler {
	if h.obs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, call := h.obs.Start(r.Context(), route, surface.Download, tracing.FromHeaders(r.Header))
		sw := observe.NewStatusWriter(w)
		next.ServeHTTP(sw, r.WithContext(ctx))
		call.End(observe.HTTPCode(sw.Status), nil)
	})
}

// countRead counts a skill sent whole (a SKILL.md or an archive; never a
// HEAD, a 304 or the index) as a read by the client its User-Agent names.
// Only here: the registry reads the downloads make (digests for the
// index, an archive's files) carry no reader, so they are not counted.
func (h *Handler) countRead(r *http.Request, req request) {
	if h.obs == nil {
		return
	}
	ctx := observe.WithReader(r.Context(), surface.Download, observe.UserAgentProduct(r.UserAgent()))
	h.obs.ReadSkill(ctx, req.id, req.sel)
}

// exposed are the headers a browser's script may read.
const exposed = "ETag, Repr-Digest, Content-Disposition, Skill-Id, Skill-Sha256, Skill-Version, Skill-Yanked, Skill-Deprecated"

// guarded applies the door, then lets an allowed browser origin read the
// answer (CORS: the RFC asks for it where browsers are clients; only the
// origins the door allows get it).
func (h *Handler) guarded(next http.HandlerFunc) http.Handler {
	return h.guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			w.Header().Set("Access-Control-Allow-Origin", o)
			w.Header().Set("Access-Control-Expose-Headers", exposed)
		}
		w.Header().Add("Vary", "Origin")
		next(w, r)
	}))
}

// preflight answers a browser's OPTIONS request: the Origin and Host
// rules apply (a preflight carries no token, so none is asked).
func (h *Handler) preflight(w http.ResponseWriter, r *http.Request) {
	if ref := h.guard.CheckOrigin(r); ref != nil {
		http.Error(w, ref.Message, ref.Status)
		return
	}
	if ref := h.guard.CheckHostHeader(r); ref != nil {
		http.Error(w, ref.Message, ref.Status)
		return
	}
	hd := w.Header()
	if o := r.Header.Get("Origin"); o != "" {
		hd.Set("Access-Control-Allow-Origin", o)
	}
	hd.Add("Vary", "Origin")
	hd.Set("Access-Control-Allow-Methods", "GET, HEAD")
	hd.Set("Access-Control-Allow-Headers", "Authorization, If-None-Match")
	hd.Set("Access-Control-Max-Age", "600")
	hd.Set("Allow", "GET, HEAD, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}

// fail answers a refusal (or any error) as plain text.
func (h *Handler) fail(w http.ResponseWriter, err error) {
	var ref *refusal
	if !errors.As(err, &ref) {
		ref = registryError("", err)
	}
	http.Error(w, ref.msg, ref.status)
}

// registryError turns a failed registry read into an answer: NOT_FOUND is
// 404, anything else 502 (the registry, in this process or over iii,
// failed to answer).
func registryError(what string, err error) *refusal {
	var ie *iii.InvocationError
	if errors.As(err, &ie) && ie.Code == rules.CodeNotFound {
		return refuse(http.StatusNotFound, "%s", ie.Message)
	}
	if errors.Is(err, skillsext.ErrNoSuchFile) {
		return refuse(http.StatusNotFound, "%s", err.Error())
	}
	if what != "" {
		return refuse(http.StatusBadGateway, "%s: the registry failed: %v", what, err)
	}
	return refuse(http.StatusBadGateway, "the registry failed: %v", err)
}

// cacheControl is the Cache-Control of an answer: pinned content never
// changes; anything else is revalidated (ETag).
func (h *Handler) cacheControl(w http.ResponseWriter, pinned bool) {
	cc := "no-cache"
	if pinned {
		cc = "max-age=31536000, immutable"
	}
	if h.guard.Token != "" {
		cc = "private, " + cc
	}
	w.Header().Set("Cache-Control", cc)
}

// notModified reports whether the request's If-None-Match names etag.
func notModified(r *http.Request, etag string) bool {
	for _, v := range r.Header.Values("If-None-Match") {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == etag || tag == "*" {
				return true
			}
		}
	}
	return false
}

// representation sets the headers of the bytes about to be sent (their
// digest, type and length) and answers 304 or HEAD without a body; false
// when no body is to be written.
func representation(w http.ResponseWriter, r *http.Request, sum [sha256.Size]byte, size int64, contentType string) bool {
	etag := `"sha256:` + hex.EncodeToString(sum[:]) + `"`
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
	hd.Set("X-Content-Type-Options", "nosniff")
	if notModified(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return false
	}
	hd.Set("Content-Type", contentType)
	hd.Set("Content-Length", strconv.FormatInt(size, 10))
	return r.Method != http.MethodHead
}

// serveIndex answers the discovery index.
func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	body, err := h.Index(r.Context())
	if err != nil {
		h.fail(w, registryError("listing the skills", err))
		return
	}
	h.cacheControl(w, false)
	if representation(w, r, sha256.Sum256(body), int64(len(body)), "application/json") {
		_, _ = w.Write(body)
	}
}

// serveDownload answers a SKILL.md or an archive under prefix.
func (h *Handler) serveDownload(w http.ResponseWriter, r *http.Request, prefix string, layout skillarchive.Layout) {
	ctx, cancel := context.WithTimeout(r.Context(), h.maxDur)
	defer cancel()
	req, ref := parse(r.PathValue("rest"), prefix, layout)
	if ref != nil {
		h.fail(w, ref)
		return
	}
	s, err := h.resolve(ctx, req)
	if err != nil {
		h.fail(w, err)
		return
	}
	lease, err := h.memory.Acquire(ctx, budget.ClientOf(r), memoryMiB(s), h.wait)
	if err != nil {
		var busy *budget.Refusal
		if errors.As(err, &busy) {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(busy.RetryAfter, time.Second).Seconds())))
			http.Error(w, "too many downloads at once: "+busy.Error(), http.StatusServiceUnavailable)
		}
		return // the client left
	}
	defer lease.Release()

	facts(w, req, s)
	h.cacheControl(w, strings.HasPrefix(req.sel, registry.DigestSelectorPrefix))
	if req.format == formatSkillMD {
		if h.serveSkillMD(ctx, w, r, s) {
			h.countRead(r, req)
		}
		return
	}
	ar, err := h.archiveOf(ctx, s)
	if err != nil {
		h.fail(w, err)
		return
	}
	a, err := h.artifactOf(ctx, s, ar, layout, req.format)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fileName(req)}))
	if !representation(w, r, a.sum, a.size, req.format.contentType()) {
		return
	}
	out := h.slowReaderGuard(w, ctx)
	if err := writeArchive(ar, out, layout, req.format); err != nil {
		// The headers promised other bytes: cut the connection, so the
		// client sees a short body, never a wrong one.
		h.log.Warn("download cut short", "skill", req.skillPath(), "err", err)
		panic(http.ErrAbortHandler)
	}
	out.end()
	h.countRead(r, req)
}

// serveSkillMD answers the SKILL.md of s; sent reports whether its bytes
// went out (not a HEAD, a 304 or a failure).
func (h *Handler) serveSkillMD(ctx context.Context, w http.ResponseWriter, r *http.Request, s skillsext.Skill) (sent bool) {
	f, ok := skillFileOf(s)
	if !ok {
		h.fail(w, refuse(http.StatusBadGateway, "the registry lists skill %s without %s", s.Path, skillFile))
		return false
	}
	b, err := h.readFile(ctx, s, f)
	if err != nil {
		h.fail(w, err)
		return false
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if !representation(w, r, sha256.Sum256(b), int64(len(b)), formatSkillMD.contentType()) {
		return false
	}
	_, err = w.Write(b)
	return err == nil
}

func skillFileOf(s skillsext.Skill) (skillsext.File, bool) {
	for _, f := range s.Files {
		if f.Path == skillFile {
			return f, true
		}
	}
	return skillsext.File{}, false
}

// facts sets the headers that say what skill content is sent.
func facts(w http.ResponseWriter, req request, s skillsext.Skill) {
	hd := w.Header()
	hd.Set("Skill-Id", req.id)
	if s.SHA256 != "" {
		hd.Set("Skill-Sha256", s.SHA256)
	}
	if s.Version > 0 {
		hd.Set("Skill-Version", strconv.Itoa(s.Version))
	}
	if s.Yanked != "" {
		hd.Set("Skill-Yanked", headerText(s.Yanked))
	}
	if s.Deprecated != "" {
		hd.Set("Skill-Deprecated", headerText(s.Deprecated))
	}
}

// headerText is a message as a header value: control characters as
// spaces, at most 512 bytes.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 512 {
		s = strings.ToValidUTF8(s[:512], "") + "…"
	}
	return s
}

// memoryMiB is what a download of s holds: the compressor's state and
// its largest file, in MiB.
func memoryMiB(s skillsext.Skill) int64 {
	var largest int64
	for _, f := range s.Files {
		largest = max(largest, f.Size)
	}
	return 1 + (largest+1<<20-1)>>20
}

// resolve finds the skill a request names, as it is served: a pin of the
// content the id serves now is that content (no version store needed).
func (h *Handler) resolve(ctx context.Context, req request) (skillsext.Skill, error) {
	var s skillsext.Skill
	found := false
	if hexSum, ok := strings.CutPrefix(req.sel, registry.DigestSelectorPrefix); ok {
		cur, ok, err := h.reg.CatalogSkill(ctx, req.id)
		if err != nil {
			return s, registryError("reading skill "+req.id, err)
		}
		if ok && cur.SHA256 == hexSum && cur.Problem == "" {
			s, found = cur, true
		}
	}
	if !found {
		var err error
		s, found, err = h.reg.CatalogSkill(ctx, req.skillPath())
		if err != nil {
			return s, registryError("reading skill "+req.skillPath(), err)
		}
	}
	switch {
	case !found:
		return s, h.notFound(ctx, req)
	case s.Problem != "":
		return s, refuse(http.StatusNotFound, "skill %s is not served: %s", req.skillPath(), s.Problem)
	case s.Dynamic:
		return s, refuse(http.StatusConflict, "skill %s links to live iii://fn/ sections that only the registry renders: it has no fixed content to download (read it over MCP)", req.skillPath())
	}
	var total int64
	for _, f := range s.Files {
		total += f.Size
	}
	if len(s.Files) > skillsext.MaxFiles || total > skillsext.MaxBytes {
		return s, refuse(http.StatusBadGateway, "the registry lists skill %s with %d files, %d bytes: over the %d files, %d bytes a skill may hold", req.skillPath(), len(s.Files), total, skillsext.MaxFiles, skillsext.MaxBytes)
	}
	return s, nil
}

// notFound says why nothing is served at req: no such id, or no such
// version of it (in the registry's words where it has them).
func (h *Handler) notFound(ctx context.Context, req request) error {
	if req.sel == "" {
		return refuse(http.StatusNotFound, "no skill %s is served here", req.id)
	}
	cur, ok, err := h.reg.CatalogSkill(ctx, req.id)
	switch {
	case err != nil:
		return registryError("reading skill "+req.id, err)
	case !ok:
		return refuse(http.StatusNotFound, "no skill %s is served here (so no version %s of it)", req.id, req.sel)
	case cur.Origin != "published":
		return refuse(http.StatusNotFound, "skill %s (%s) has no version %s: only published skills have registry versions; a skill with files is pinned by its manifest's digest, @sha256:%s now, while its files hold that content",
			req.id, cur.Origin, req.sel, cur.SHA256)
	}
	if _, err := h.reg.Read(ctx, registry.SkillURI(req.skillPath())); err != nil {
		var ie *iii.InvocationError
		if errors.As(err, &ie) && ie.Code == rules.CodeNotFound {
			return refuse(http.StatusNotFound, "%s", ie.Message)
		}
	}
	return refuse(http.StatusNotFound, "skill %s has no version %s", req.id, req.sel)
}

// readFile reads one file of s, checked against the digest and size s
// lists: a file that changed since is an error, never other bytes.
func (h *Handler) readFile(ctx context.Context, s skillsext.Skill, f skillsext.File) ([]byte, error) {
	b, err := h.reg.CatalogFile(ctx, s.Path, f.Path)
	if err != nil {
		return nil, registryError(fmt.Sprintf("reading %s of skill %s", f.Path, s.Path), err)
	}
	if sum := sha256.Sum256(b); int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
		return nil, refuse(http.StatusConflict, "%s of skill %s changed while it was read (retry)", f.Path, s.Path)
	}
	return b, nil
}

// archiveOf is s to write as an archive, its files read from the
// registry one at a time while it is written. A file starting with "#!"
// is executable (as `skills sync` writes it).
func (h *Handler) archiveOf(ctx context.Context, s skillsext.Skill) (*skillarchive.Skill, error) {
	files := make([]skillarchive.LazyFile, len(s.Files))
	for i, f := range s.Files {
		files[i] = skillarchive.LazyFile{Path: f.Path, Size: f.Size, Open: func() (io.ReadCloser, bool, error) {
			b, err := h.readFile(ctx, s, f)
			if err != nil {
				return nil, false, err
			}
			return io.NopCloser(bytes.NewReader(b)), bytes.HasPrefix(b, []byte("#!")), nil
		}}
	}
	ar, err := skillarchive.NewLazySkill(s.Name, files)
	if err != nil {
		return nil, refuse(http.StatusBadGateway, "skill %s cannot be archived: %v", s.Path, err)
	}
	return ar, nil
}

// artifactOf is the digest and size of s's archive, known or computed by
// writing it once (ar: s as archiveOf makes it, nil to make it only then).
func (h *Handler) artifactOf(ctx context.Context, s skillsext.Skill, ar *skillarchive.Skill, layout skillarchive.Layout, f format) (artifact, error) {
	return h.digests.of(ctx, s, layout, f, func() (artifact, error) {
		if ar == nil {
			var err error
			if ar, err = h.archiveOf(ctx, s); err != nil {
				return artifact{}, err
			}
		}
		hw := &hashWriter{h: sha256.New()}
		if err := writeArchive(ar, hw, layout, f); err != nil {
			return artifact{}, err
		}
		var a artifact
		hw.h.Sum(a.sum[:0])
		a.size = hw.n
		return a, nil
	})
}

func writeArchive(ar *skillarchive.Skill, w io.Writer, layout skillarchive.Layout, f format) error {
	if f == formatZip {
		return ar.WriteZip(w, layout)
	}
	return ar.WriteTarGz(w, layout)
}

// slowReader writes to a client that must keep reading: each write that
// reaches the connection must go through within stall, and all of them
// before the download's deadline.
type slowReader struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	stall time.Duration
}

func (h *Handler) slowReaderGuard(w http.ResponseWriter, ctx context.Context) *slowReader {
	return &slowReader{w: w, rc: http.NewResponseController(w), ctx: ctx, stall: h.stall}
}

func (s *slowReader) deadline() time.Time {
	d := time.Now().Add(s.stall)
	if end, ok := s.ctx.Deadline(); ok && end.Before(d) {
		d = end
	}
	return d
}

func (s *slowReader) Write(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("the download took too long or its client left: %w", err)
	}
	_ = s.rc.SetWriteDeadline(s.deadline())
	return s.w.Write(p)
}

// end flushes what is buffered under the deadline, then lifts it: the
// connection may serve the client's next request.
func (s *slowReader) end() {
	_ = s.rc.SetWriteDeadline(s.deadline())
	_ = s.rc.Flush()
	_ = s.rc.SetWriteDeadline(time.Time{})
}
