package core

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/published"
	"github.com/iii-skills/skills/server/internal/reach"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/search"
	"github.com/iii-skills/skills/server/internal/sections"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// Options tune a Local registry beyond config.yaml.
type Options struct {
	// State is where the registry keeps its skills, prompts, versions and
	// labels (required): kv.Engine in the standalone process (the embedded
	// engine's store, in-process: a registration and its new version are
	// one commit, published bodies stay in the store and are read on
	// demand), kv.III against another engine (state other registry
	// instances may share: every write is then announced to them).
	State kv.Store
	// Catalog is the skill catalog the registry feeds (its "published"
	// source) and serves, beside other sources such as skills folders.
	// Nil means a catalog of its own.
	Catalog *catalog.Catalog
	// StrictFetch rejects bare skill paths in skill::fetch exactly like
	// upstream v0.2.2. By default bare paths get iii:// prefixed, the way
	// iii-directory's fetch-skill accepts them.
	StrictFetch bool
	Logger      *slog.Logger
	// SectionMaxDepth and SectionMaxBytes bound section reads (package
	// sections; zero: its defaults).
	SectionMaxDepth, SectionMaxBytes int
	// ServeLabel overrides config versions.serve_label (--serve-label).
	ServeLabel string
	// AdminToken unlocks protected labels (--admin-token).
	AdminToken string
	// ProtectedLabels, when set, replaces config versions.protected_labels.
	ProtectedLabels []string
	// OwnerGrace is how long a register of an id another connection owns
	// waits for that connection to go (0: DefaultOwnerGrace).
	OwnerGrace time.Duration
	// Cluster tunes the coherence with other registry instances sharing
	// State (package cluster); the registry fills in the generation scope,
	// the timeout and the logger.
	Cluster cluster.Options
	// EngineURL is the engine's URL as this registry dials it. With the
	// host name it names this node to the others sharing State, in their
	// answers about prompt handlers and sections this node's engine holds.
	EngineURL string
}

// Local is the registry itself: the rules of upstream's skills worker
// v0.2.2 (package registry) over state (package kv), feeding and serving
// the catalog. Every surface of the skills process calls it directly; the
// iii functions (package worker) are thin adapters over it. It reaches the
// engine only for what belongs to other workers: section functions,
// prompt handlers, and whether an id's owner is still connected.
type Local struct {
	client *iii.Client
	cfg    Config
	opts   Options
	log    *slog.Logger
	state  kv.Store
	cat    *catalog.Catalog
	skills *published.Mirror
	hist   *histories
	index  atomic.Pointer[renderedIndex]
	// search ranks the catalog for Search; it follows the catalog's
	// changes from New until Close.
	search    *search.Index
	stopIndex func()
	sections  *sections.Guard
	// reach knows which engine holds each prompt handler and section
	// function, and calls them there (package reach).
	reach *reach.Follower
	// owners is who owns each published skill id and prompt name (ownership.go).
	owners ownership
	// view is the catalog as the MCP Skills extension serves it.
	view *skillsext.View
	// sign is the signature policy (signing.go).
	sign *signing
	// cl keeps this instance coherent with others sharing its state
	// (scopes.go); prompts are the digests it compares prompt rows by.
	cl      cluster.Cluster
	prompts promptDigests
	// skillsLoaded and promptsLoaded: a load filled them once, so later
	// loads announce what they find changed.
	skillsLoaded, promptsLoaded atomic.Bool
	// changes fans changes out to subscribers (watch.go).
	changes changeFeed
	// obs counts reads and tells of this instance's changes (observed.go).
	obs observed

	loadMu sync.Mutex // serializes skills loads
	syncMu sync.Mutex // serializes re-reads of single skill rows

	runCtx context.Context // Start's ctx, for reloads started later
	ctxMu  sync.Mutex
}

// New builds the registry over opts.State. client reaches the engine for
// section functions, prompt handlers and owners' liveness; the cluster
// subscription is declared on it by Register.
func New(client *iii.Client, cfg Config, opts Options) *Local {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cat := opts.Catalog
	if cat == nil {
		cat = catalog.New()
	}
	// A second registry on one catalog shares the published source.
	src := cat.Source(published.Source)
	if src == nil {
		var err error
		if src, err = cat.AddSource(published.Source, catalog.RankPublished); err != nil {
			src = cat.Source(published.Source) // added concurrently
		}
	}
	state := opts.State
	l := &Local{client: client, cfg: cfg, opts: opts, log: log, state: state, cat: cat, search: search.New()}
	l.reach = reach.New(client, l.reachOptions())
	l.sections = sections.New(l.reach, sections.Options{MaxDepth: opts.SectionMaxDepth, MaxBytes: opts.SectionMaxBytes,
		Timeout: cfg.StateTimeout(), Logger: log})
	l.hist = newHistories(cfg, opts, state)
	l.hist.onChange = l.changes.versionChanged
	l.sign = newSigning(cfg.Signing, log)
	// What a read serves: the serve label's version, the newest one not
	// yanked, or nothing when every version is yanked (versions.go).
	mo := published.Options{Serve: l.hist.servedSkill}
	if !state.Shared() {
		// Nobody else writes this store and it is in this process: bodies
		// stay in it and are read per use.
		scope := cfg.Scopes.Skills
		mo.Read = func(id string) (json.RawMessage, bool, error) { return state.Get(context.Background(), scope, id) }
	}
	l.skills = published.New(src, mo)
	copts := opts.Cluster
	copts.GenerationScope, copts.Timeout, copts.Logger = generationScope(cfg.Scopes), cfg.StateTimeout(), log
	l.cl = cluster.New(client, state, copts)
	l.cl.Add(cfg.Scopes.Skills, skillsScope{l})
	l.cl.Add(cfg.Scopes.Prompts, promptsScope{l})
	if state.Shared() {
		l.cl.Add(nodesScope(cfg.Scopes), l.reach.Scope())
	}
	l.stopIndex = l.search.Follow(cat, searchable)
	l.view = skillsext.NewView(cat)
	l.view.SetVersions(l.skillVersion)
	l.view.SetFacts(l.servedFacts)
	l.view.Watch(context.Background(), func(path string) { l.changes.publish(Change{Kind: ChangeCatalog, ID: path}) })
	return l
}

// Catalog is the catalog the registry feeds and serves.
func (l *Local) Catalog() *catalog.Catalog { return l.cat }

// Config is the registry's configuration.
func (l *Local) Config() Config { return l.cfg }

// Cluster is the registry's coherence with other instances sharing its
// state; other parts of the server add their scopes to it (before Start).
func (l *Local) Cluster() cluster.Cluster { return l.cl }

// ctx returns Start's context (Background before Start).
func (l *Local) ctx() context.Context {
	l.ctxMu.Lock()
	defer l.ctxMu.Unlock()
	if l.runCtx == nil {
		return context.Background()
	}
	return l.runCtx
}

// Start loads the registry from state and keeps it coherent with other
// instances until ctx ends (package cluster: on a store nobody shares it
// loads once; otherwise at every connect of the client, and when changes
// were missed). Until the first load succeeds reads are served from
// state, like upstream. It returns once that load was attempted.
func (l *Local) Start(ctx context.Context) {
	l.ctxMu.Lock()
	l.runCtx = ctx
	l.ctxMu.Unlock()
	l.announceOtherSources(ctx)
	l.reach.Start(ctx)
	l.sign.watch(ctx)
	l.cl.Start(ctx)
}

// Close stops following the catalog (search index, extension view).
func (l *Local) Close() {
	l.stopIndex()
	l.view.Close()
}

// Ready reports whether the registry serves its catalog: nil once the
// client is connected to the engine (its functions and trigger types are
// then registered there) and the published skills have been loaded from
// state into the catalog; otherwise why not. GET /readyz answers with it.
func (l *Local) Ready() error {
	if !l.client.Connected() {
		return errors.New("not connected to the iii engine")
	}
	if !l.skills.Ready() {
		return errors.New("skills catalog not loaded from state yet")
	}
	return nil
}

// announceOtherSources announces a change when a source other than the
// published mirror changes what the registry serves at an id (a folder
// skill appears, changes or goes): register when the id has an entry
// afterwards, unregister when it has none. The registry's own register and
// unregister announce themselves; when an unregister uncovers a folder
// skill at the same id, "register" follows.
func (l *Local) announceOtherSources(ctx context.Context) {
	cancel := l.cat.Subscribe(func(ch catalog.Change) {
		if ctx.Err() != nil { // shutting down: folders closing are no news
			return
		}
		if ch.Cause == published.Source && (ch.Entry == nil || ch.Entry.SourceName() == published.Source) {
			return
		}
		if (ch.Entry != nil && ch.Entry.Origin.Kind == catalog.OriginBuiltin) ||
			(ch.Entry == nil && ch.Previous != nil && ch.Previous.Origin.Kind == catalog.OriginBuiltin) {
			return // built-in skills are not registry content
		}
		op := registry.OpRegister
		if ch.Op == catalog.OpRemove {
			op = registry.OpUnregister
		}
		l.changes.publish(Change{Kind: ChangeSkill, Op: op, ID: ch.ID})
	})
	context.AfterFunc(ctx, cancel)
}

// skillChanged announces a change of skill id.
func (l *Local) skillChanged(op, id string) {
	l.changes.publish(Change{Kind: ChangeSkill, Op: op, ID: id})
}

// promptChanged announces a change of prompt name.
func (l *Local) promptChanged(op, name string) {
	l.changes.publish(Change{Kind: ChangePrompt, Op: op, ID: name})
}

// Loaded reports whether the published skills have been loaded from state
// into the catalog (until then reads are served from state).
func (l *Local) Loaded() bool { return l.skills.Ready() }
