package skillsprotocol

import (
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iii-skills/skills/server/internal/observe"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/sandbox"
	"github.com/iii-skills/skills/server/internal/scope"
	"golang.org/x/sync/semaphore"
)

//go:embed all:pylib
var pylib embed.FS

// Defaults of Options.
const (
	DefaultBlobScope    = "skills-protocol-blobs"
	DefaultBundleScope  = "skills-protocol-bundles"
	DefaultMaxBlobBytes = 8 << 20
	// DefaultBlobTTL is how long a blob is kept after it is created.
	DefaultBlobTTL = 24 * time.Hour
	// DefaultMaxBlobStoreBytes bounds all blobs together; the oldest go
	// first when a new one would pass it.
	DefaultMaxBlobStoreBytes = 1 << 30
	DefaultBlobThreshold     = 4096
	DefaultTimeout           = 30 * time.Second
	DefaultMaxTimeout        = 5 * time.Minute
	DefaultRunRetention      = time.Hour
	DefaultMaxRuns           = 1000
	// DefaultConcurrentRuns bounds sandboxes alive at once; more runs wait.
	DefaultConcurrentRuns = 16
	DefaultPython         = "/usr/bin/python3"
	// Caps of bundles published over iii.
	DefaultMaxPublishedBundles = 1000
	DefaultMaxPublishedBytes   = 1 << 30
	// DefaultMaxInputBlobs and DefaultMaxInputBlobBytes bound the distinct
	// blobs one run may name in input_blobs and their total size.
	DefaultMaxInputBlobs     = 16
	DefaultMaxInputBlobBytes = 32 << 20
	// DefaultMaxBatchRequests and DefaultMaxBatchResponseBytes bound a
	// JSON-RPC batch: how many requests it may hold and how many bytes its
	// answers may take together.
	DefaultMaxBatchRequests      = 100
	DefaultMaxBatchResponseBytes = 32 << 20
	LogsPreviewBytes             = 2000
)

// Catalog source names and ranks of the bundles this package feeds.
const (
	SourcePublishedBundles = "skills-protocol-published"
	SourceFolderBundles    = "skills-protocol-folders"
	RankPublishedBundles   = catalog.RankPublished + 1
	RankFolderBundles      = catalog.RankFolder + 90
	// RankPublishedBelowFolders is the published bundles' rank unless
	// Options.PublishedMayShadowFolders: below every folder, so a name
	// the operator serves from a folder keeps its folder bundle even when
	// the folder gains it after a publish.
	RankPublishedBelowFolders = catalog.RankFolder + 800
)

// Options configure a Runtime. Catalog and State are required.
type Options struct {
	Catalog *catalog.Catalog
	// State is the runtime's own store (kv.Local of StoreFile: blobs and
	// published bundles, out of every engine client's reach).
	State kv.Store
	// Sandbox runs code (default sandbox.New(sandbox.Config{})).
	Sandbox *sandbox.Sandbox
	// Python is the interpreter inside the sandbox (default /usr/bin/python3).
	Python string
	// Secrets holds values of secrets a manifest may name; a name not here
	// is read from the server's environment.
	Secrets map[string]string
	// SecretGrants say which bundles (name and origin) receive which
	// secrets; a secret no grant covers is never passed to a run.
	SecretGrants []SecretGrant
	// PublishedMayShadowFolders lets a bundle published over iii take a
	// name the operator serves from a folder (refused by default: a
	// publisher must not replace the operator's code).
	PublishedMayShadowFolders bool
	// MaxPublishedBundles, MaxPublishedBundleBytes and MaxPublishedBytes
	// cap bundles published over iii: how many versions, the bytes of one
	// (at most MaxBundleBytes) and of all of them together.
	MaxPublishedBundles     int
	MaxPublishedBundleBytes int64
	MaxPublishedBytes       int64
	// MaxPublishedBundlesPerPublisher and MaxPublishedBytesPerPublisher
	// are one publisher's share of those (default half of each): no
	// publisher (a connection, or every connection of a scoped token)
	// takes them all. A publisher frees its share with
	// skills::unpublish-bundle.
	MaxPublishedBundlesPerPublisher int
	MaxPublishedBytesPerPublisher   int64
	// AdminToken lets skills::unpublish-bundle remove any publisher's
	// bundle (the registry's --admin-token; empty: only publishers).
	AdminToken string
	// BlobScope and BundleScope are the state scopes of blobs and of
	// bundles published over iii.
	BlobScope, BundleScope string
	// MaxBlobBytes caps a blob (create_blob and run outputs).
	MaxBlobBytes int64
	// BlobTTL is how long a blob is kept after it is created, and
	// MaxBlobStoreBytes bounds all blobs together (oldest removed first):
	// any client of /rpc can create blobs, so the store must not grow
	// without end.
	BlobTTL           time.Duration
	MaxBlobStoreBytes int64
	// MaxBlobStoreBytesPerClient is one client's share of the store
	// (default half): a client past it loses its own oldest blobs, and a
	// store full of other clients' blobs refuses new ones until some
	// expire; no client's blob is ever removed for another's.
	MaxBlobStoreBytesPerClient int64
	// BlobSweepInterval is how often expired blobs are removed between
	// writes (default a quarter of BlobTTL, from 10 ms to 10 min).
	BlobSweepInterval time.Duration
	// BlobThreshold: a run output (JSON) or log larger than this many bytes
	// is stored as a blob and listed in output_blobs.
	BlobThreshold int
	// DefaultTimeout and MaxTimeout bound a run's wall time.
	DefaultTimeout, MaxTimeout time.Duration
	// Limits are the sandbox limits of every run (Wall is set per run).
	Limits sandbox.Limits
	// RunRetention and MaxRuns: how long and how many finished runs are kept.
	RunRetention time.Duration
	MaxRuns      int
	// ConcurrentRuns bounds the sandboxes alive at once (more runs wait
	// for a slot, or until their request is canceled).
	ConcurrentRuns int
	// MaxInputBlobs and MaxInputBlobBytes cap input_blobs of one run
	// (distinct blobs, and their sizes together): a small request must not
	// make the server load gigabytes.
	MaxInputBlobs     int
	MaxInputBlobBytes int64
	// MaxBlobLoadBytes bounds the blob contents being read from the store
	// at once, over all requests and runs (default twice MaxBlobBytes);
	// more reads wait.
	MaxBlobLoadBytes int64
	// AnswerBudget bounds the bytes of request bodies and big answers
	// (read_skill_file, read_blob) held at once over all requests, each
	// client (HTTP address) holding at most its share; a request waits up
	// to AnswerWait for room, then is answered CodeServerBusy with a
	// Retry-After. Default NewAnswerBudget(DefaultAnswerBudgetBytes); MCP
	// may share the same pool.
	AnswerBudget *budget.Pool
	AnswerWait   time.Duration
	// ConcurrentRunsPerClient is the share of ConcurrentRuns one client
	// (HTTP address) may hold (default half of them, at least 1): its
	// further runs wait for its own to end, while other clients' runs
	// take the other sandboxes. A client may have at most 8 times
	// ConcurrentRuns runs running or waiting (the server 16 times); past
	// that they are refused CodeServerBusy.
	ConcurrentRunsPerClient int
	// MaxBatchRequests caps the requests of a JSON-RPC batch and
	// MaxBatchResponseBytes the size of its answers together; requests past
	// the size cap are answered with an error, not run.
	MaxBatchRequests      int
	MaxBatchResponseBytes int
	// WorkDir holds run folders and the materialized bundles (default a
	// fresh folder under the system temp dir).
	WorkDir string
	Logger  *slog.Logger
}

// Runtime is the Skills Protocol runtime: the 8 tools over a catalog.
type Runtime struct {
	opts    Options
	obs     *observe.Observer // observe.go
	cat     *catalog.Catalog
	sb      *sandbox.Sandbox
	log     *slog.Logger
	pub     *catalog.Source
	folders *catalog.Source
	work    string
	runs    *runStore
	blobs   blobIndex
	pubs    published
	// shared: bundles published here are shared with other registry
	// instances, and theirs copied here (cluster.go).
	shared sharedBundles
	// blobLoads weighs blob contents being read (Options.MaxBlobLoadBytes).
	blobLoads *semaphore.Weighted
	guide     *catalog.Entry
	// sandboxes are the run slots (ConcurrentRuns, a share per client);
	// answers the bytes in flight (Options.AnswerBudget).
	sandboxes *budget.Pool
	runQueue  *budget.Pool
	answers   *budget.Pool
	// listCache is the catalog's list with the guide merged in.
	listCache atomic.Pointer[listCache]
	// history serves registry versions of published skills (history.go).
	history atomic.Pointer[SkillHistory]
	// historyList lists those versions for describe_skill (history.go).
	historyList atomic.Pointer[SkillVersionList]
	// facts gives describe_skill the registry's facts (history.go).
	facts   atomic.Pointer[SkillFactsReader]
	matMu   sync.Mutex
	ownWork bool
	// workLock is held while this runtime owns its work folder (workdir.go).
	workLock *os.File
	// stamped: whether invocation metadata carries a caller the engine
	// stamped (SetCallerStamped), which bounds scoped tokens' publishes.
	stamped scope.Stamped
}

// SetCallerStamped tells the runtime whether the engine stamps the caller
// into invocation metadata (ours does; the skills binary finds out with
// its probe, as for the registry worker): see scope.Stamped for which
// stamps are read before and after. A publisher's scoped token bounds its
// publishes to its namespaces.
func (r *Runtime) SetCallerStamped(v bool) { r.stamped.Set(v) }

// New returns a Runtime; it registers its catalog sources (published
// bundles, folder bundles) in opts.Catalog. The built-in guide is served
// beside the catalog, not in it.
func New(opts Options) (*Runtime, error) {
	if opts.Catalog == nil || opts.State == nil {
		return nil, fmt.Errorf("skillsprotocol: Options.Catalog and Options.State are required")
	}
	if opts.Sandbox == nil {
		opts.Sandbox = sandbox.New(sandbox.Config{})
	}
	if opts.Python == "" {
		opts.Python = DefaultPython
	}
	if opts.BlobScope == "" {
		opts.BlobScope = DefaultBlobScope
	}
	if opts.BundleScope == "" {
		opts.BundleScope = DefaultBundleScope
	}
	if opts.MaxBlobBytes <= 0 {
		opts.MaxBlobBytes = DefaultMaxBlobBytes
	}
	if opts.BlobTTL <= 0 {
		opts.BlobTTL = DefaultBlobTTL
	}
	if opts.MaxBlobStoreBytes <= 0 {
		opts.MaxBlobStoreBytes = DefaultMaxBlobStoreBytes
	}
	if opts.BlobSweepInterval <= 0 {
		opts.BlobSweepInterval = min(max(opts.BlobTTL/4, minBlobSweep), maxBlobSweep)
	}
	if opts.MaxBlobStoreBytes < opts.MaxBlobBytes {
		return nil, fmt.Errorf("skillsprotocol: MaxBlobStoreBytes (%d) is smaller than MaxBlobBytes (%d): no blob would fit",
			opts.MaxBlobStoreBytes, opts.MaxBlobBytes)
	}
	if opts.MaxPublishedBundles <= 0 {
		opts.MaxPublishedBundles = DefaultMaxPublishedBundles
	}
	if opts.MaxPublishedBundleBytes <= 0 {
		opts.MaxPublishedBundleBytes = MaxBundleBytes
	}
	if opts.MaxPublishedBytes <= 0 {
		opts.MaxPublishedBytes = DefaultMaxPublishedBytes
	}
	if opts.MaxPublishedBundlesPerPublisher <= 0 {
		opts.MaxPublishedBundlesPerPublisher = max(1, opts.MaxPublishedBundles/2)
	}
	if opts.MaxPublishedBytesPerPublisher <= 0 {
		opts.MaxPublishedBytesPerPublisher = max(opts.MaxPublishedBundleBytes, opts.MaxPublishedBytes/2)
	}
	if opts.MaxBlobStoreBytesPerClient <= 0 {
		opts.MaxBlobStoreBytesPerClient = max(opts.MaxBlobBytes, opts.MaxBlobStoreBytes/2)
	}
	if opts.MaxPublishedBundleBytes > MaxBundleBytes {
		return nil, fmt.Errorf("skillsprotocol: MaxPublishedBundleBytes (%d) is above the bundle limit of %d bytes", opts.MaxPublishedBundleBytes, MaxBundleBytes)
	}
	for i, g := range opts.SecretGrants {
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("skillsprotocol: secret grant %d: %w", i+1, err)
		}
	}
	if opts.BlobThreshold <= 0 {
		opts.BlobThreshold = DefaultBlobThreshold
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.RunRetention <= 0 {
		opts.RunRetention = DefaultRunRetention
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	if opts.ConcurrentRuns <= 0 {
		opts.ConcurrentRuns = DefaultConcurrentRuns
	}
	if opts.MaxInputBlobs <= 0 {
		opts.MaxInputBlobs = DefaultMaxInputBlobs
	}
	if opts.MaxInputBlobBytes <= 0 {
		opts.MaxInputBlobBytes = DefaultMaxInputBlobBytes
	}
	if opts.MaxBlobLoadBytes <= 0 {
		opts.MaxBlobLoadBytes = 2 * opts.MaxBlobBytes
	}
	if opts.AnswerBudget == nil {
		opts.AnswerBudget = NewAnswerBudget(DefaultAnswerBudgetBytes)
	}
	if opts.AnswerWait <= 0 {
		opts.AnswerWait = DefaultAnswerWait
	}
	if opts.ConcurrentRunsPerClient <= 0 {
		opts.ConcurrentRunsPerClient = max(1, opts.ConcurrentRuns/2)
	}
	if opts.MaxBatchRequests <= 0 {
		opts.MaxBatchRequests = DefaultMaxBatchRequests
	}
	if opts.MaxBatchResponseBytes <= 0 {
		opts.MaxBatchResponseBytes = DefaultMaxBatchResponseBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// Once per runtime: say how a whole run's memory is bounded.
	if mode, why := opts.Sandbox.CgroupMode(); mode == sandbox.CgroupNone {
		opts.Logger.Info("skills protocol sandbox: per-process rlimits only, no per-run cgroup", "mode", mode, "reason", why)
	} else {
		opts.Logger.Info("skills protocol sandbox: one cgroup per run bounds its memory and processes", "mode", mode)
	}
	r := &Runtime{opts: opts, cat: opts.Catalog, sb: opts.Sandbox, log: opts.Logger, runs: newRunStore(opts.RunRetention, opts.MaxRuns),
		sandboxes: budget.New("sandboxes", int64(opts.ConcurrentRuns), int64(opts.ConcurrentRunsPerClient)),
		runQueue:  budget.New("runs running or waiting for a sandbox", 16*int64(opts.ConcurrentRuns), 8*int64(opts.ConcurrentRuns)),
		answers:   opts.AnswerBudget, blobLoads: semaphore.NewWeighted(opts.MaxBlobLoadBytes)}
	if err := r.prepareWorkDir(); err != nil {
		return nil, err
	}
	var err error
	r.pubs.records, r.pubs.usage = map[string]bundleRecord{}, map[string]publisherUsage{}
	pubRank := RankPublishedBelowFolders
	if opts.PublishedMayShadowFolders {
		pubRank = RankPublishedBundles
	}
	if r.pub, err = sourceOf(r.cat, SourcePublishedBundles, pubRank); err != nil {
		return nil, err
	}
	if r.folders, err = sourceOf(r.cat, SourceFolderBundles, RankFolderBundles); err != nil {
		return nil, err
	}
	// The guide is the runtime's own: not in the shared catalog, so the
	// iii registry surfaces (skills::list, iii://skills, MCP) keep
	// answering exactly what was published to them.
	if r.guide, err = GuideEntry(); err != nil {
		return nil, err
	}
	return r, nil
}

func sourceOf(c *catalog.Catalog, name string, rank int) (*catalog.Source, error) {
	if s := c.Source(name); s != nil {
		return s, nil
	}
	return c.AddSource(name, rank)
}

// prepareWorkDir creates the work folder (world-readable: the sandbox runs
// under an unprivileged host uid) and writes the Python runner into it.
func (r *Runtime) prepareWorkDir() error {
	dir := r.opts.WorkDir
	if dir == "" {
		sweepWorkDirs(os.TempDir(), time.Now(), r.log)
		d, err := os.MkdirTemp("", workPrefix)
		if err != nil {
			return fmt.Errorf("skillsprotocol: work dir: %w", err)
		}
		lock, err := lockWorkDir(d)
		if err != nil {
			_ = os.RemoveAll(d)
			return err
		}
		dir, r.ownWork, r.workLock = d, true, lock
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("skillsprotocol: work dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("skillsprotocol: work dir: %w", err)
	}
	if err := reachable(dir); err != nil {
		return err
	}
	r.work = dir
	lib := filepath.Join(dir, "lib")
	return fs.WalkDir(pylib, "pylib", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("pylib", p)
		dst := filepath.Join(lib, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := pylib.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// reachable checks that the sandbox's unprivileged host uid can traverse
// every folder above dir (it binds run folders from there); running as
// root, nothing else would tell why every run fails.
func reachable(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("skillsprotocol: work dir: %w", err)
		}
		if info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("skillsprotocol: work dir %s: %s is mode %04o; the sandbox runs as an unprivileged uid and needs o+x on every folder above its work dir", abs, p, info.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// Close stops the expired-blob sweeper and removes the work folder when
// the Runtime created it.
func (r *Runtime) Close() error {
	r.stopBlobSweeper()
	if r.ownWork {
		err := os.RemoveAll(r.work)
		_ = r.workLock.Close()
		return err
	}
	return nil
}

// Sandbox is the sandbox runs use.
func (r *Runtime) Sandbox() *sandbox.Sandbox { return r.sb }

// SandboxSlots is the pool of sandboxes runs take, a share per client.
func (r *Runtime) SandboxSlots() *budget.Pool { return r.sandboxes }

// AnswerBudget is the pool of bytes in flight /rpc requests draw from
// (Options.AnswerBudget); the MCP endpoint draws from it too.
func (r *Runtime) AnswerBudget() *budget.Pool { return r.answers }

// LoadFolders (re)loads the bundle folders under roots into the catalog
// (source SourceFolderBundles). Bad bundles are logged and skipped.
func (r *Runtime) LoadFolders(roots ...string) error {
	var all []*catalog.Entry
	seen := map[string]string{}
	for _, root := range roots {
		entries, errs := LoadBundles(root)
		for _, err := range errs {
			r.log.Warn("skills protocol: bundle skipped", "err", err)
		}
		for _, e := range entries {
			key := e.ID + "@" + e.Version
			if prev, dup := seen[key]; dup {
				r.log.Warn("skills protocol: duplicate bundle version skipped", "name", IDToName(e.ID), "version", e.Version, "kept", prev, "skipped", e.Origin.Source)
				continue
			}
			seen[key] = e.Origin.Source
			r.ReportUngranted(e)
			all = append(all, e)
		}
	}
	return r.folders.Replace(all)
}
