package worker

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/search"
)

// apiJSON is the upstream v0.2.2 API reference (descriptions and JSON Schema
// request/response formats of the 13 functions, descriptions of the two
// trigger types), so engine::functions::list shows the same contracts.
//
//go:embed api.json
var apiJSON []byte

type apiFunction struct {
	ID             string          `json:"id"`
	Description    string          `json:"description"`
	RequestFormat  json.RawMessage `json:"request_format"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

type apiTriggerType struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

type apiReference struct {
	Functions    []apiFunction    `json:"functions"`
	TriggerTypes []apiTriggerType `json:"trigger_types"`
}

// fnCacheSync is the one function id of the worker that is not upstream's
// (the others are registry.Fn*).
const (
	// fnCacheSync receives the engine's `state` trigger events for the skills
	// scope. It is ours, not upstream's, so it is marked internal and stays
	// out of engine::functions::list and MCP tool listings.
	fnCacheSync = "skills::cache-sync"
)

// Options tune a Worker beyond config.yaml.
type Options struct {
	// StrictFetch rejects bare skill paths in skill::fetch exactly like
	// upstream v0.2.2. By default bare paths get iii:// prefixed, the way
	// iii-directory's fetch-skill accepts them.
	StrictFetch bool
	Logger      *slog.Logger
	// SectionMaxDepth bounds nested section reads (a section handler that
	// fetches sections); zero means DefaultSectionMaxDepth.
	SectionMaxDepth int
	// SectionMaxBytes is the largest section output served; a larger one
	// is refused with "section output too large (N bytes; max M)". Zero
	// means DefaultSectionMaxBytes.
	SectionMaxBytes int
	// Catalog is the skill catalog the worker feeds (its "published"
	// source) and serves, beside other sources such as skills folders.
	// Nil means a catalog of its own.
	Catalog *catalog.Catalog
	// State is where the registry keeps its skills, prompts, versions and
	// labels (required): kv.Engine in the standalone process (the embedded
	// engine's store, in-process: a registration and its new version are
	// one commit, published bodies stay in the store and are read on
	// demand), kv.III against another engine (state other registry
	// instances may share: every write is then announced to them).
	State kv.Store
	// ServeLabel overrides config versions.serve_label (--serve-label).
	ServeLabel string
	// AdminToken unlocks protected labels (--admin-token).
	AdminToken string
	// ProtectedLabels, when set, replaces config versions.protected_labels.
	ProtectedLabels []string
	// Cluster tunes the coherence with other registry instances sharing
	// State (package cluster); the worker fills in the generation scope,
	// the timeout and the logger.
	Cluster cluster.Options
}

// Worker is the skills registry bound to an iii client.
type Worker struct {
	client *iii.Client
	cfg    Config
	opts   Options
	log    *slog.Logger
	state  kv.Store
	cat    *catalog.Catalog
	skills *published
	hist   *histories
	index  atomic.Pointer[renderedIndex]
	// search ranks the catalog for skills::search; it follows the
	// catalog's changes from Register on.
	search    *search.Index
	indexOnce sync.Once
	stopIndex func()
	// sections limits iii://fn/… reads (sections.go).
	sections *sectionGuard
	// own is who owns each published skill id and prompt name (ownership.go).
	own ownership
	// cl keeps this instance coherent with others sharing its state
	// (cluster.go); prompts are the digests it compares prompt rows by.
	cl      cluster.Cluster
	prompts promptDigests
	// skillsLoaded and promptsLoaded: a load filled them once, so later
	// loads announce what they find changed.
	skillsLoaded, promptsLoaded atomic.Bool

	skillSubs  *iii.TriggerTypeRef
	promptSubs *iii.TriggerTypeRef

	loadMu sync.Mutex // serializes skills loads
	syncMu sync.Mutex // serializes state-event re-reads (see cacheSync)

	runCtx context.Context // Start's ctx, for reloads started by cacheSync
	ctxMu  sync.Mutex
}

// ctx returns Start's context (Background before Start).
func (w *Worker) ctx() context.Context {
	w.ctxMu.Lock()
	defer w.ctxMu.Unlock()
	if w.runCtx == nil {
		return context.Background()
	}
	return w.runCtx
}

// New binds a registry worker to client. Call Register before the client
// connects (registrations are replayed on every reconnect) and Start after.
func New(client *iii.Client, cfg Config, opts Options) *Worker {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cat := opts.Catalog
	if cat == nil {
		cat = catalog.New()
	}
	// A second worker on one catalog shares the published source.
	src := cat.Source(PublishedSource)
	if src == nil {
		var err error
		if src, err = cat.AddSource(PublishedSource, catalog.RankPublished); err != nil {
			src = cat.Source(PublishedSource) // added concurrently
		}
	}
	state := opts.State
	hist := newHistories(cfg, opts, state)
	skills := newPublished(src)
	if !state.Shared() {
		// Nobody else writes this store and it is in this process: bodies
		// stay in it and are read per use (cache.go).
		scope := cfg.Scopes.Skills
		skills.read = func(id string) (json.RawMessage, bool, error) {
			return state.Get(context.Background(), scope, id)
		}
		skills.hot = newHotBodies(DefaultHotBodyBytes)
	}
	if hist.serveLabel != "" {
		skills.serve = hist.servedSkill
	}
	copts := opts.Cluster
	copts.GenerationScope, copts.Timeout, copts.Logger = cfg.Scopes.Skills+".cluster", cfg.StateTimeout(), log
	w := &Worker{
		client: client,
		cfg:    cfg,
		opts:   opts,
		log:    log,
		state:  state,
		cat:    cat,
		skills: skills,
		search: search.New(),
		hist:   hist,
		cl:     cluster.New(client, state, copts),

		sections: newSectionGuard(opts),
	}
	w.cl.Add(cfg.Scopes.Skills, skillsScope{w})
	w.cl.Add(cfg.Scopes.Prompts, promptsScope{w})
	return w
}

// Catalog is the catalog the worker feeds and serves.
func (w *Worker) Catalog() *catalog.Catalog { return w.cat }

// Register declares the two custom trigger types and the 13 functions (plus
// the internal cache-sync function) on the client, in upstream's order.
func (w *Worker) Register() error {
	var api apiReference
	if err := json.Unmarshal(apiJSON, &api); err != nil {
		return fmt.Errorf("embedded api.json: %w", err)
	}
	subs := map[string]**iii.TriggerTypeRef{rules.TriggerSkillsOnChange: &w.skillSubs, rules.TriggerPromptsOnChange: &w.promptSubs}
	// Like upstream, a binding's config is ignored: every subscriber gets
	// every event.
	for _, t := range api.TriggerTypes {
		ref, err := w.client.RegisterTriggerType(t.ID, t.Description, iii.AcceptAll(w.log, t.ID))
		if err != nil {
			return err
		}
		*subs[t.ID] = ref
	}
	handlers := w.handlers()
	for _, f := range api.Functions {
		h, ok := handlers[f.ID]
		if !ok {
			return fmt.Errorf("no handler for %s", f.ID)
		}
		_, err := w.client.RegisterFunction(f.ID, h, iii.RegisterFunctionOptions{
			Description:    f.Description,
			RequestFormat:  f.RequestFormat,
			ResponseFormat: f.ResponseFormat,
		})
		if err != nil {
			return err
		}
	}
	if err := w.registerSearch(); err != nil {
		return err
	}
	if err := w.registerVersionFunctions(); err != nil {
		return err
	}
	if err := w.cl.Register(); err != nil {
		return err
	}
	_, err := w.client.RegisterFunction(fnCacheSync, w.cacheSync, iii.RegisterFunctionOptions{
		Description: "Internal: keeps the skills registry's in-memory index in step with state events of its scope.",
		Metadata:    iii.InternalMetadata,
	})
	if err != nil {
		return err
	}
	// Writes made straight into the skills scope (an operator cleaning up,
	// another registry worker, a test harness) reach the cache through the
	// engine's state trigger. Our own writes are already cached: our engine
	// leaves them out (skip_own_writes); the real engine ignores that key
	// and echoes them, and cacheSync drops the echo (putIfChanged).
	scope, err := json.Marshal(map[string]any{"scope": w.cfg.Scopes.Skills, "skip_own_writes": true})
	if err != nil {
		return err
	}
	return w.client.RegisterTrigger(uuid.NewString(), "state", fnCacheSync, scope)
}

// Start loads the skills cache on every (re)connect (the engine may have
// restarted with other state); until a load succeeds, reads are served from
// state. The loads run from the client's connect hook, which also runs at
// once when the client is already connected: Start then returns after that
// first load was attempted, otherwise at once. A failed load is retried in
// the background until ctx ends.
func (w *Worker) Start(ctx context.Context) {
	w.ctxMu.Lock()
	w.runCtx = ctx
	w.ctxMu.Unlock()
	w.announceOtherSources(ctx)
	w.cl.Start(ctx)
}

// announceOtherSources fires skills::on-change when a source other than
// the published mirror changes what the registry serves at an id (a
// folder skill appears, changes or goes): {op:"register", id} when the id
// has an entry afterwards, {op:"unregister", id} when it has none. The
// worker's own register and unregister calls announce themselves; when an
// unregister uncovers a folder skill at the same id, "register" follows.
func (w *Worker) announceOtherSources(ctx context.Context) {
	cancel := w.cat.Subscribe(func(ch catalog.Change) {
		if ctx.Err() != nil { // shutting down: folders closing are no news
			return
		}
		if ch.Cause == PublishedSource && (ch.Entry == nil || ch.Entry.SourceName() == PublishedSource) {
			return
		}
		if (ch.Entry != nil && ch.Entry.Origin.Kind == catalog.OriginBuiltin) ||
			(ch.Entry == nil && ch.Previous != nil && ch.Previous.Origin.Kind == catalog.OriginBuiltin) {
			return // built-in skills are not registry content
		}
		op := "register"
		if ch.Op == catalog.OpRemove {
			op = "unregister"
		}
		fctx, done := context.WithTimeout(context.Background(), w.cfg.StateTimeout())
		w.notify(fctx, w.skillSubs, registry.SkillChange{Op: op, ID: ch.ID})
		done()
	})
	go func() {
		<-ctx.Done()
		cancel()
	}()
}

// cacheSync applies one `state` trigger event of the skills scope.
//
// Events of one key may arrive in any order: the engine delivers each trigger
// invocation on its own (the real iii engine spawns one task per invocation)
// and the client runs each in its own goroutine. Applying an event's
// new_value could therefore resurrect a row: the `state:created` event of a
// skills::register (a 256 KiB body is slow to encode and decode) lands after
// the `state:deleted` event of a direct state::delete that followed it, and
// the cache lists a skill that state no longer has. So an event only says
// which key changed: the key is re-read from state, with events serialized,
// and the last re-read wins. It runs after the last write's event arrived, so
// it sees that write.
func (w *Worker) cacheSync(ctx context.Context, data json.RawMessage) (any, error) {
	var ev struct {
		Scope string `json:"scope"`
		Key   string `json:"key"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("state event: %w", err)
	}
	if ev.Scope != w.cfg.Scopes.Skills {
		return nil, nil
	}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	raw, _, err := w.state.Get(ctx, ev.Scope, ev.Key)
	if err != nil {
		// The cache may now be behind state: serve from state until a reload.
		w.skills.invalidate()
		go w.reloadSkills(w.ctx())
		return nil, fmt.Errorf("state::get %s/%s after a state event: %w", ev.Scope, ev.Key, sdkError(err))
	}
	// A write this engine saw and the mirror did not hold yet came from
	// outside the registry (an echo of its own writes changes nothing):
	// the other registry instances hear of it from here.
	if raw == nil {
		if w.skills.remove(ev.Key) {
			w.cl.Announce(ctx, ev.Scope, cluster.OpDelete, ev.Key)
		}
		return nil, nil
	}
	row, err := registry.DecodeStoredSkill(raw)
	if err != nil || row.ID != ev.Key {
		if w.skills.remove(ev.Key) { // upstream would not list an undecodable row
			w.cl.Announce(ctx, ev.Scope, cluster.OpDelete, ev.Key)
		}
		return nil, nil
	}
	if w.skills.putIfChanged(row) {
		defer w.cl.Announce(ctx, ev.Scope, cluster.OpSet, ev.Key) // after the history repair below
	}
	// A body written straight into state becomes a version too.
	// State is re-read under the id's history lock: a registration that
	// landed after this event's read is not undone by its older body.
	if err := w.hist.skills.Repair(row.ID, "recorded from a direct state write", func() (string, bool) {
		raw, ok, err := w.state.Get(ctx, ev.Scope, ev.Key)
		if err != nil || !ok {
			return "", false
		}
		cur, err := registry.DecodeStoredSkill(raw)
		return cur.Skill, err == nil
	}); err != nil {
		w.log.Warn("skill history: recording a direct state write failed", "id", row.ID, "err", err)
	}
	return nil, nil
}

func (w *Worker) handlers() map[string]iii.Handler {
	return map[string]iii.Handler{
		rules.FnSkillsRegister:           w.registerSkill,
		rules.FnSkillsUnregister:         w.unregisterSkill,
		rules.FnSkillsList:               w.listSkills,
		rules.FnSkillsResourcesList:      w.resourcesList,
		rules.FnSkillsResourcesRead:      w.resourcesRead,
		rules.FnSkillsResourcesTemplates: w.resourcesTemplates,
		rules.FnSkillsFetchSkill:         w.fetchSkill,
		rules.FnSkillFetch:               w.fetchSkill,
		rules.FnPromptsRegister:          w.registerPrompt,
		rules.FnPromptsUnregister:        w.unregisterPrompt,
		rules.FnPromptsList:              w.listPrompts,
		rules.FnPromptsMCPList:           w.mcpListPrompts,
		rules.FnPromptsMCPGet:            w.mcpGetPrompt,
	}
}

// notify fans a change event out to every subscriber of a trigger type,
// fire-and-forget like upstream; failures are logged, never returned.
func (w *Worker) notify(ctx context.Context, ref *iii.TriggerTypeRef, payload any) {
	if err := ref.FireJSON(ctx, payload); err != nil {
		w.log.Warn("on-change fan-out failed", "trigger_type", ref.ID(), "err", err)
	}
}
