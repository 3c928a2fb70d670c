package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/registry"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultName        = "skills"
	DefaultCallTimeout = 30 * time.Second
	// DefaultReadRetryAfter is when an unanswered idempotent read is sent
	// again (see Options.ReadRetryAfter).
	DefaultReadRetryAfter = 2 * time.Second
	DefaultPollInterval   = 2 * time.Second
	DefaultPageSize       = 1000
)

// Instructions tell an agent how the surface fits together.
const Instructions = "Skills registry of an iii engine. When the catalog is large (hundreds of skills), call the tool " +
	ToolSearchSkills + " with the task in a few words before reading the index, then read only the skills it returns. " +
	"Otherwise start by reading the resource iii://skills: " +
	"it indexes every registered skill (markdown at iii://{id}; nested skills at iii://{parent}/{child}). " +
	"Skills explain when and why to call the tools listed here; iii://fn/{a}/{b} links are sections " +
	"rendered by the function a::b. Tool skill__fetch reads one or more iii:// URIs in one call. " +
	"Prompts are the registry's slash-commands."

// SkillsInstructions are added when the skill catalog is served as skill://
// (the MCP Skills extension).
const SkillsInstructions = " Every skill is also served as an Agent Skill: call skills/list (MCP Skills extension " +
	"io.modelcontextprotocol/skills) for every skill's frontmatter and files with sha256 digests, then " +
	"resources/read skill://<path>/SKILL.md and, only when SKILL.md points to them, its other files " +
	"(relative links resolve against the skill root)."

// SkillToolsInstructions follow SkillsInstructions when the skill tools
// are served.
const SkillToolsInstructions = " Without resource support, use the tools list_skills then read_skill the same way."

// Options tune a Server.
type Options struct {
	// Name and Version are the MCP serverInfo (default "skills", "dev").
	Name    string
	Version string
	// CallTimeout bounds every engine call: registry functions, prompt
	// handlers and tool calls (default 30 s).
	CallTimeout time.Duration
	// ReadRetryAfter is how long an idempotent read (resources and prompt
	// listings, index and skill reads, engine listings) waits for its first answer
	// before it is sent once more with the rest of CallTimeout (default 2 s,
	// negative disables). The real iii engine (0.22–0.23) drops about one
	// result in 10 000 from a worker that answers within microseconds; the
	// retry turns that 30 s hang into a 2 s delay. Prompt handlers and tool
	// calls, and section reads (iii://fn/…), run publishers' handlers and
	// are never retried.
	ReadRetryAfter time.Duration
	// PollInterval is how often engine::functions::list is diffed when the
	// engine has no engine::functions-available trigger type (default 2 s).
	PollInterval time.Duration
	// PageSize is the page length of every MCP list (default 1000).
	PageSize int
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
	// Registry is the skills registry served (required): core.Local in
	// the registry's own process, core.Remote over iii in another.
	Registry core.Registry
	// SkillsExtension also serves the registry's catalog as skill://
	// resources and through the MCP Skills extension (skills/list,
	// skills/get, resources/directory/read); off: iii:// only.
	SkillsExtension bool
	// NoSkillTools leaves out the list_skills and read_skill tools (for
	// clients without resource support) when SkillsExtension is on.
	NoSkillTools bool
	// AllowSideEffects exposes the tools that are not read-only (see
	// ToolClass): downloads, writes, dialing out, functions of other
	// workers that do not declare themselves read-only. Off by default.
	AllowSideEffects bool
	// AllowSideEffectsSetting names the operator's setting in refusals
	// (default "--mcp-allow-side-effects").
	AllowSideEffectsSetting string
	// FolderPrompts, when set, also serves the prompts of the skills
	// folders as MCP prompts (folderprompts.go); a registered prompt of
	// the same name wins.
	FolderPrompts FolderPrompts
	// AnswerBudget bounds the bytes big reads hold until their HTTP
	// responses are written, over all requests, each client (address)
	// holding at most its share (answers.go); a read waits up to
	// AnswerWait for room, then is refused with CodeServerBusy. Default
	// a pool of DefaultAnswerBudgetBytes, half per client; the skills
	// process passes the pool /rpc draws from.
	AnswerBudget *budget.Pool
	AnswerWait   time.Duration
	// Observer counts and traces every request and the reads they make
	// (observe.go; nil: none).
	Observer *observe.Observer
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.ReadRetryAfter == 0 {
		o.ReadRetryAfter = DefaultReadRetryAfter
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.AllowSideEffectsSetting == "" {
		o.AllowSideEffectsSetting = "--mcp-allow-side-effects"
	}
	if o.AnswerBudget == nil {
		o.AnswerBudget = budget.New("bytes of answers in flight", DefaultAnswerBudgetBytes, DefaultAnswerBudgetBytes/2)
	}
	if o.AnswerWait <= 0 {
		o.AnswerWait = DefaultAnswerWait
	}
	return o
}

// Server is the MCP face of the skills registry, bound to an iii client.
type Server struct {
	client *iii.Client
	// registry answers every registry read and fires its changes;
	// engine reaches the engine's listings and the functions behind tools.
	registry core.Registry
	engine   invoke.Caller
	skillExt bool // Options.SkillsExtension
	opts     Options
	log      *slog.Logger
	sdk      *sdk.Server
	impl     *sdk.Implementation // serverInfo
	sdkLog   *slog.Logger        // the SDK's own logs, warnings and up
	ids      instanceIDs

	resMu     sync.Mutex
	resources map[string]sdk.Resource // mirror, keyed by URI

	// answers is Options.AnswerBudget; holds the open HTTP holds on it,
	// by id (answers.go).
	answers *budget.Pool
	holds   sync.Map

	skillMu    sync.Mutex
	skillFiles map[string][]string // skill path → file URIs last served (for resources/updated)
	// A full resync lists the catalog while single changes keep arriving:
	// while one runs (skillSyncing), the paths onSkillChanged applies are
	// noted in skillTouched, and the resync keeps what those newer changes
	// decided instead of its older listing. skillSyncMu runs one resync at
	// a time; the other two are guarded by skillMu.
	skillSyncMu  sync.Mutex
	skillSyncing bool
	skillTouched map[string]struct{}

	promptSync sync.Mutex // serializes prompt syncs (fetch + apply)
	promptMu   sync.Mutex
	prompts    map[string]promptDef // mirror, keyed by name

	toolSync sync.Mutex // serializes tool syncs (fetch + apply)
	toolMu   sync.Mutex
	tools    map[string]toolDef         // mirror, keyed by tool name
	withheld map[string]bool            // tool names of functions not exposed (side effects)
	infoMemo map[string]json.RawMessage // function id → request_schema from engine::functions::info (nil: none)

	// builtins are the tools this server adds itself (set in New, read
	// only after); withheldBuiltins those its classification left out.
	builtins         map[string]bool
	withheldBuiltins map[string]bool

	regMu      sync.Mutex // registry presence, seen by the poller
	registryUp bool

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	cleanups  []func()
}

// instanceIDs are the ids of this server's internal functions. They carry a
// random part so that several MCP servers can share one engine (function ids
// are unique per engine) and start with "mcp::", a hidden namespace.
type instanceIDs struct {
	functionsChanged string
}

func newInstanceIDs() instanceIDs {
	var b [4]byte
	_, _ = rand.Read(b[:])
	p := "mcp::" + hex.EncodeToString(b[:]) + "::"
	return instanceIDs{functionsChanged: p + "functions-changed"}
}

// New builds the MCP server for client. Call Start to subscribe to the
// registry and load the mirror; the client may connect before or after.
func New(client *iii.Client, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		client:       client,
		registry:     opts.Registry,
		engine:       invoke.Caller{Client: client, Timeout: opts.CallTimeout, RetryAfter: max(opts.ReadRetryAfter, 0)},
		skillExt:     opts.SkillsExtension,
		answers:      opts.AnswerBudget,
		skillFiles:   map[string][]string{},
		skillTouched: map[string]struct{}{},
		opts:         opts,
		log:          opts.Logger,
		ids:          newInstanceIDs(),
		resources:    map[string]sdk.Resource{},
		prompts:      map[string]promptDef{},
		tools:        map[string]toolDef{},
		withheld:     map[string]bool{},
		builtins:     map[string]bool{},

		withheldBuiltins: map[string]bool{},
		infoMemo:         map[string]json.RawMessage{},
		sdkLog:           slog.New(minLevel{h: opts.Logger.Handler(), min: slog.LevelWarn}),
	}
	caps := &sdk.ServerCapabilities{
		Resources: &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:   &sdk.PromptCapabilities{ListChanged: true},
		Tools:     &sdk.ToolCapabilities{ListChanged: true},
	}
	instructions := Instructions
	if s.skillExt {
		caps.AddExtension(ExtensionSkills, map[string]any{"directoryRead": true})
		instructions += SkillsInstructions
		if !opts.NoSkillTools {
			instructions += SkillToolsInstructions
		}
	}
	s.impl = &sdk.Implementation{Name: opts.Name, Title: "iii skills registry", Version: opts.Version}
	s.sdk = sdk.NewServer(s.impl, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       s.sdkLog,
		PageSize:     opts.PageSize,
		Capabilities: caps,
		// Any iii:// URI may be subscribed to; updates are sent for the
		// index and for each skill that changes.
		CompletionHandler:  s.complete,
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
	})
	// Reads of any iii:// or skill:// URI reach the SDK's own dispatch
	// through these catch-all templates (the SDK then stamps resultType
	// and the cache fields); the middleware refuses other schemes.
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: registry.Scheme + "{+path}", Name: "iii"}, s.readResourceHandler)
	s.addSearchTool()
	if s.skillExt {
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: SkillScheme + "{+path}", Name: "skill"}, s.readResourceHandler)
		s.addExtensionMethods()
		if !opts.NoSkillTools {
			s.addSkillTools()
		}
	}
	s.sdk.AddReceivingMiddleware(s.middleware)
	if opts.Observer != nil {
		s.sdk.AddReceivingMiddleware(s.observed) // outermost: the whole request
		s.sdk.AddSendingMiddleware(s.notifying)
	}
	return s
}

// SDK returns the underlying go-sdk server (to serve it over another
// transport, e.g. an in-memory one in tests).
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Start registers the change subscriptions on the client, loads the mirror
// and keeps it in step until ctx ends or Close is called. It returns after
// the first load attempt; a registry that is not running yet is picked up
// as soon as its functions appear. Start is idempotent.
func (s *Server) Start(ctx context.Context) error {
	var err error
	s.startOnce.Do(func() { err = s.start(ctx) })
	return err
}

func (s *Server) start(parent context.Context) error {
	if s.registry == nil {
		return errors.New("mcp: Options.Registry is required (core.Local in the registry's process, core.NewRemote elsewhere)")
	}
	ctx, cancel := context.WithCancel(parent)
	s.cancel = cancel
	// The registry's changes (skills, prompts and, with the extension,
	// catalog skill paths) are followed before the mirror is first read,
	// so that no change between that listing and the watch is lost (a
	// change during the listing is reconciled by syncSkills).
	stopWatch, err := s.registry.Watch(ctx, func(c core.Change) { s.onChange(ctx, c) })
	if err != nil {
		cancel()
		return fmt.Errorf("follow the skills registry: %w", err)
	}
	s.cleanups = append(s.cleanups, stopWatch)
	// The hook reloads everything after a reconnect. OnConnect also runs it
	// at once for a connection that is already open, which the resync
	// below covers: that first run is skipped rather than done twice (two
	// resyncs at start raced each other). Should the connection drop in
	// between, the skipped run is the reconnect's, and the resync below
	// still covers it: the client holds its calls until it is back.
	var covered atomic.Bool
	covered.Store(s.client.Connected())
	removeHook := s.client.OnConnect(func(connCtx context.Context) {
		if covered.Swap(false) {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.resyncAll(ctx)
		}()
	})
	s.cleanups = append(s.cleanups, removeHook)

	s.followFolderPrompts(ctx)
	s.resyncAll(ctx)

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchFunctions(ctx)
	}()
	return nil
}

// bind registers an internal function and binds it to a trigger type.
func (s *Server) bind(fn, triggerType string, h iii.Handler, desc string) error {
	ref, err := s.client.RegisterFunction(fn, h, iii.RegisterFunctionOptions{Description: desc, Metadata: iii.InternalMetadata})
	if err != nil {
		return fmt.Errorf("register %s: %w", fn, err)
	}
	tid := uuid.NewString()
	if err := s.client.RegisterTrigger(tid, triggerType, fn, nil); err != nil {
		_ = ref.Unregister()
		return fmt.Errorf("bind %s to %s: %w", fn, triggerType, err)
	}
	s.cleanups = append(s.cleanups, func() { _ = s.client.UnregisterTrigger(tid); _ = ref.Unregister() })
	return nil
}

// Close stops following the registry and removes this server's functions
// and trigger bindings from the client. Sessions being served stay open;
// close their transports (or HTTP server) separately.
func (s *Server) Close() error {
	s.stopOnce.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		s.wg.Wait()
		s.runCleanups()
	})
	return nil
}

func (s *Server) runCleanups() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// resyncAll reloads resources, prompts and tools, logging (not returning)
// failures: the registry may simply not be running yet.
func (s *Server) resyncAll(ctx context.Context) {
	if present, err := s.syncTools(ctx); err != nil {
		s.log.Debug("MCP: tools not loaded", "err", err)
	} else {
		s.regMu.Lock()
		s.registryUp = present
		s.regMu.Unlock()
	}
	if err := s.syncResources(ctx); err != nil {
		s.log.Debug("MCP: resources not loaded", "err", err)
	}
	if err := s.syncSkills(ctx); err != nil {
		s.log.Debug("MCP: skill catalog not loaded", "err", err)
	}
	if err := s.syncPrompts(ctx); err != nil {
		s.log.Debug("MCP: prompts not loaded", "err", err)
	}
}

// ---- change events ----

// onChange applies one change of the registry: a skill's own resource is
// re-read (register) or dropped (unregister), and sessions subscribed to
// it and to the index hear of it; a prompt change, or a change of the
// prompt handlers the registry reaches, resyncs the prompts; a catalog
// change re-reads that skill's skill:// entry. A skill or prompt change
// without an id reloads the whole mirror.
func (s *Server) onChange(ctx context.Context, c core.Change) {
	switch c.Kind {
	case core.ChangeSkill:
		var err error
		if c.ID == "" {
			err = s.syncResources(ctx)
		} else {
			err = s.applySkillChange(ctx, c.Op, c.ID)
		}
		if err != nil {
			s.log.Warn("MCP: cannot apply a registry change", "op", c.Op, "id", c.ID, "err", err)
		}
		uris := []string{registry.IndexURI}
		if c.ID != "" {
			uris = append(uris, registry.SkillURI(c.ID))
		}
		for _, uri := range uris {
			_ = s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
		}
	case core.ChangePrompt:
		s.log.Debug("MCP: "+rules.TriggerPromptsOnChange, "op", c.Op, "name", c.ID)
		var touched []string
		if c.ID != "" {
			touched = append(touched, c.ID)
		}
		if err := s.syncPrompts(ctx, touched...); err != nil {
			s.log.Warn("MCP: cannot reload prompts after a registry change", "op", c.Op, "name", c.ID, "err", err)
		}
	case core.ChangeCatalog:
		if s.skillExt {
			s.onSkillChanged(ctx, c.ID)
		}
	case core.ChangeHandlers:
		// A prompt's handler came or went: prompts/list offers only
		// prompts that can render (prompts.go).
		if err := s.syncPrompts(ctx); err != nil {
			s.log.Warn("MCP: cannot reload prompts after their handlers changed", "err", err)
		}
	}
}

// watchFunctions follows the engine's function set: through
// engine::functions-available when the engine provides it, else by polling
// engine::functions::list. Either way the registry's own return (after a
// restart, or a registry started after this server) triggers a full resync.
func (s *Server) watchFunctions(ctx context.Context) {
	if s.engineHasTriggerType(ctx, iii.TriggerFunctionsAvailable) {
		if err := s.bind(s.ids.functionsChanged, iii.TriggerFunctionsAvailable, s.onFunctionsChanged, "MCP server: turns function set changes into tools/list_changed"); err == nil {
			s.log.Debug("MCP: following " + iii.TriggerFunctionsAvailable)
			<-ctx.Done()
			return
		}
	}
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.functionsTick(ctx)
		}
	}
}

func (s *Server) onFunctionsChanged(ctx context.Context, _ json.RawMessage) (any, error) {
	s.log.Debug("MCP: " + iii.TriggerFunctionsAvailable)
	s.functionsTick(ctx)
	return nil, nil
}

func (s *Server) functionsTick(ctx context.Context) {
	present, err := s.syncTools(ctx)
	if err != nil {
		s.log.Debug("MCP: "+iii.FnListFunctions+" failed", "err", err)
		return
	}
	s.regMu.Lock()
	back := present && !s.registryUp
	s.registryUp = present
	s.regMu.Unlock()
	if back {
		s.log.Debug("MCP: skills registry is available; reloading resources and prompts")
		if err := s.syncResources(ctx); err != nil {
			s.log.Debug("MCP: resources not loaded", "err", err)
		}
		if err := s.syncPrompts(ctx); err != nil {
			s.log.Debug("MCP: prompts not loaded", "err", err)
		}
	}
}

// engineHasTriggerType asks engine::triggers::list whether id exists.
func (s *Server) engineHasTriggerType(ctx context.Context, id string) bool {
	var out struct {
		Triggers []iii.TriggerTypeInfo `json:"triggers"`
	}
	if s.engine.Read(ctx, iii.FnListTriggers, map[string]any{"include_internal": true, "prefix": id}, &out) != nil {
		return false
	}
	for _, t := range out.Triggers {
		if t.ID == id {
			return true
		}
	}
	return false
}

// minLevel drops records below min (the go-sdk logs every notification at
// info level).
type minLevel struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h: m.h.WithAttrs(a), min: m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{h: m.h.WithGroup(n), min: m.min} }

// errRegistryShape reports a registry answer that does not decode.
var errRegistryShape = invoke.ErrShape
