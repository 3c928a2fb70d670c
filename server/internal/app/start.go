package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/health"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/kv"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/worker"
)

// ErrNotReady is wrapped by Start's error when the worker could not get
// its function ids (another worker holds them past ClaimTimeout).
var ErrNotReady = errors.New("not ready")

// Server is a running skills server: the embedded engine (with
// Engine.Standalone), the registry worker and its surfaces.
type Server struct {
	// EngineURL is the engine the worker dialed (the embedded one's URL
	// with Standalone, its real port when the config said :0).
	EngineURL string
	// HTTPURL is http://host:port of the HTTP listener; empty when it is
	// off (a port it cannot listen on fails Start).
	HTTPURL string
	// Engine is the embedded engine (nil without Standalone).
	Engine *engine.Engine
	// Catalog is what every surface reads (nil with Engine.Only).
	Catalog *catalog.Catalog
	// Registry is the registry every surface of this process calls (nil
	// with Engine.Only).
	Registry *core.Local
	// Worker puts the registry's functions on the engine (nil with
	// Engine.Only).
	Worker *worker.Worker

	client  *iii.Client
	lost    <-chan error
	cancel  context.CancelFunc
	closers []func()
	// stops run first in Close, while the client is still connected (a
	// last flush of the read counts).
	stops []func()
	log   *slog.Logger
}

// Lost reports, once, that the worker lost its functions to another
// worker after a reconnect: the server no longer serves and should be
// closed. It never fires with Engine.Only.
func (s *Server) Lost() <-chan error { return s.lost }

// Close stops every part in the reverse order of Start and waits for them.
func (s *Server) Close() error {
	for _, stop := range s.stops {
		stop()
	}
	s.stops = nil
	s.cancel()
	if s.client != nil {
		_ = s.client.Close()
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
	return nil
}

func (s *Server) defer_(f func()) { s.closers = append(s.closers, f) }

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// Start validates cfg and starts the server it describes: with
// Engine.Standalone the embedded engine, then (unless Engine.Only) the
// registry worker, its Skills Protocol runtime, the skills folders and the
// HTTP listener. It returns once the worker owns its functions and the
// engine accepts other workers. The server runs until ctx ends or Close.
// A port it cannot listen on (the engine's or HTTP.Addr) fails it with an
// error naming the address and the setting to change. Start logs no
// error: it returns it, and its caller says it once.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.logger()
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{cancel: cancel, log: log}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()

	if cfg.PprofAddr != "" {
		stopPprof, err := startPprof(cfg.PprofAddr, log)
		if err != nil {
			return nil, err
		}
		s.defer_(stopPprof)
	}
	// A taken HTTP port stops start-up before anything starts, with the
	// setting to change, as a taken engine port does (instead of a registry
	// running without /mcp, /rpc and its web page). The port is bound for
	// good only once the registry serves, so that a listening port still
	// means a started server; losing it in between fails Start all the same.
	if cfg.HTTP.Addr != "" && !cfg.Engine.Only {
		ln, err := net.Listen("tcp", cfg.HTTP.Addr)
		if err != nil {
			return nil, listenError(httpListener, cfg.HTTP.Addr, httpAddrSetting, err)
		}
		_ = ln.Close()
	}

	// Metrics, traces, read counts, the change feed and webhooks
	// (observe.go).
	obsv, err := newObservability(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("cannot start observability: %w", err)
	}
	s.defer_(obsv.shutdown)
	s.stops = append(s.stops, obsv.stop)
	if !cfg.Engine.Only {
		stopMetrics, err := obsv.serveMetrics(ctx, cfg.HTTP.Door())
		if err != nil {
			return nil, err
		}
		s.defer_(stopMetrics)
	}

	target := cfg.Engine.URL
	var eng *engine.Engine
	if cfg.Engine.Standalone {
		addr, _ := ListenAddr(cfg.Engine.URL) // Validate checked it
		scoped, _ := cfg.ScopedTokens()
		// Sockets are held until the registry owns its functions
		// (AcceptSockets below): no client can race it for its ids.
		eng, err = engine.New(engine.Config{Addr: addr, DataDir: cfg.Engine.DataDir, Logger: log,
			Token: cfg.Engine.Token, AllowedOrigins: cfg.Engine.AllowOrigin, AllowedOriginsSetting: "--engine-allow-origin", MaxConnections: cfg.Engine.MaxConnections,
			AllowedHosts: cfg.Engine.AllowHost, AllowedHostsSetting: "--engine-allow-host (config engine_allow_host)",
			ScopedTokens: scoped, HoldSockets: !cfg.Engine.Only,
			MaxConnectionsPerClient: cfg.Engine.MaxConnectionsPerClient, PrivateScopes: privateScopes(cfg)})
		if err != nil {
			return nil, fmt.Errorf("cannot open the embedded engine (data %s): %w", cfg.Engine.DataDir, err)
		}
		if err := eng.Start(); err != nil {
			_ = eng.Close()
			var listenErr *net.OpError
			if errors.As(err, &listenErr) {
				return nil, listenError("the iii engine", addr, engineURLSetting, err)
			}
			return nil, fmt.Errorf("cannot start the embedded engine on %s: %w", addr, err)
		}
		s.defer_(func() { _ = eng.Close() })
		s.Engine = eng
		if err := obsv.watchEngine(eng); err != nil {
			return nil, err
		}
		target = eng.URL()
		s.EngineURL = target
		if cfg.Engine.Only {
			log.Info("embedded engine only (no registry worker)", "url", target)
			return s, nil
		}
	}
	s.EngineURL = target

	opts := []iii.Option{iii.WithName(worker.Name), iii.WithDescription(worker.Description), iii.WithLogger(log),
		WithEngineToken(cfg.Engine.Token)}
	if eng != nil {
		// The worker reaches its own engine through an in-process
		// connection: the same frames through the same client and engine
		// code, without two loopback hops per call. Other workers still
		// dial the socket.
		opts = append(opts, iii.WithNetDialer(eng.DialContext))
	} else {
		opts = append(opts, iii.WithResultHold(cfg.Registry.ResultHold), iii.WithResultResend(cfg.Registry.ResultResend))
	}
	// New, not RegisterWorker: the first handshake already carries every
	// function and trigger type, so no caller ever sees a half-registered
	// registry.
	client := iii.New(target, opts...)
	s.client = client
	// The catalog every source feeds and the registry serves.
	cat := catalog.New()
	s.Catalog = cat
	s.defer_(trimAfterChanges(cat, trimBytes, trimQuiet))
	// The registry's state: the embedded engine's store, in-process (one
	// commit per registration and its version, nobody else shares it), or
	// any engine's state::* (other registry instances may share it).
	state := kv.III(client, cfg.Registry.StateTimeout())
	if eng != nil {
		state = kv.Engine(eng, client.WorkerID)
	}
	// The registry itself: every surface of this process calls it
	// directly; the worker puts its functions on the engine for workers
	// and for surfaces in other processes.
	reg := core.New(client, cfg.Registry.Config, core.Options{State: state, Catalog: cat, StrictFetch: cfg.Registry.StrictFetch,
		Logger: log, SectionMaxDepth: cfg.Registry.SectionMaxDepth, SectionMaxBytes: cfg.Registry.SectionMaxBytes,
		AdminToken: cfg.Registry.AdminToken, EngineURL: target, Cluster: obsv.clusterOptions()})
	s.Registry = reg
	s.defer_(reg.Close)
	w := worker.New(client, reg, log)
	s.Worker = w
	if err := obsv.attach(ctx, cfg, client, state, reg, w); err != nil {
		return nil, fmt.Errorf("cannot start observability: %w", err)
	}
	if err := w.Register(); err != nil {
		return nil, fmt.Errorf("cannot register the registry functions: %w", err)
	}
	s.defer_(w.Close)
	if err := registerCallerProbe(client); err != nil {
		return nil, fmt.Errorf("cannot register the registry functions: %w", err)
	}
	sp, spStore, err := newSkillsProtocol(client, cat, cfg.SkillsProtocol, cfg.in(), cfg.Engine.DataDir, log, obsv.sandboxRun())
	if err != nil {
		return nil, fmt.Errorf("cannot start the Skills Protocol runtime: %w", err)
	}
	s.defer_(func() { _ = spStore.Close() })
	s.defer_(func() { _ = sp.Close() })
	obsv.watchStore(spStore)
	sp.SetObserver(obsv.obs)
	if state.Shared() {
		// Other registry instances may share this engine's state: bundles
		// published through any of them are served by all
		// (skillsprotocol/cluster.go), a scope of the registry's cluster.
		sp.ShareBundles(state, func(ctx context.Context, key string) {
			reg.Cluster().Announce(ctx, skillsprotocol.SharedBundleScope, cluster.OpSet, key)
		})
		reg.Cluster().Add(skillsprotocol.SharedBundleScope, sp.ClusterScope())
	}
	sp.SetAdminToken(cfg.Registry.AdminToken)                                      // skills::unpublish-bundle of any publisher's bundle
	sp.SetSkillHistory(reg.SkillVersionBody)                                       // describe_skill / read_skill_file `version` (docs/versions.md)
	sp.SetSkillVersionList(reg.SkillVersionNumbers)                                // … and describe_skill `versions`
	sp.SetSkillFacts(func(id, selector string) (skillsprotocol.SkillFacts, bool) { // … and who signed it (docs/trust.md)
		f, ok := reg.SkillFacts(id, selector)
		return skillsprotocol.SkillFacts{Version: f.Version, SignedBy: f.SignedBy, Key: f.Key, Yanked: f.Yanked, Deprecated: f.Deprecated}, ok
	})
	dir, stopFolders, err := startFolders(client, cat, cfg.Directory, sp, log)
	if err != nil {
		return nil, fmt.Errorf("cannot serve the skills folders: %w", err)
	}
	s.defer_(stopFolders)
	log.Info("connecting to the iii engine", "url", target)
	if err := client.Connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("cannot connect to the iii engine at %s: %w", target, err)
	}
	if err := obsv.startWebhooks(ctx, cfg, state); err != nil {
		return nil, fmt.Errorf("cannot start the webhooks: %w", err)
	}
	claims := &claimStatus{}
	claimed, err := claimFunctions(ctx, client, cfg.Registry.ClaimTimeout, log, claims)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	// Our engine stamps the caller on every invocation; the registry's
	// ownership rules, the bundle publisher and downloads trust the whole
	// stamp only then (scope.Stamped), told again after every reconnect.
	setStamped := func(v bool) {
		w.SetCallerStamped(v)
		sp.SetCallerStamped(v)
		if dir != nil {
			dir.SetCallerStamped(v)
		}
	}
	setStamped(claimed.stampsCaller)
	if eng != nil {
		if err := eng.AcceptSockets(); err != nil {
			return nil, fmt.Errorf("cannot open the embedded engine to other workers: %w", err)
		}
	}
	reg.Start(ctx)
	s.lost = reclaimOnReconnect(ctx, client, cfg.Registry.ClaimTimeout, log, setStamped, claims)
	log.Info("skills ready: 13 functions + " + rules.FnSkillsSearch + " / " + rules.FnSkillSearch + " + 2 custom trigger types")
	if cfg.Engine.Standalone {
		log.Info("publish into it with III_URL=" + target + " (for example: make example-go)")
	}
	if cfg.HTTP.Addr != "" {
		tools := cfg.MCPTools()
		tools.AnswerBudget = sp.AnswerBudget() // big reads of /rpc and MCP share one bound
		tools.Observer = obsv.obs
		page := &webSource{reg: reg, obsv: obsv}
		if dir != nil {
			page.folders = dir
			tools.FolderPrompts = folderPrompts{dir} // folder prompts are MCP prompts too
		}
		page.publicOrigin, _, _ = httpguard.PublicOrigin("", cfg.HTTP.PublicURL) // Validate checked it
		scoped, _ := cfg.ScopedTokens()                                          // Validate checked them
		if cfg.HTTP.WebAdminLabels {
			page.adminToken = cfg.Registry.AdminToken
			if page.adminToken == "" {
				log.Warn("--web-admin-labels has no effect: no --admin-token (or " + EnvAdminToken + ") is set")
			}
		}
		page.actionTokens = actionTokens(cfg.Registry.AdminToken, cfg.HTTP.Token, page.adminToken, scoped)
		bound, stopHTTP, err := StartHTTP(ctx, HTTPServer{Addr: cfg.HTTP.Addr, Client: client, Registry: reg, Door: cfg.HTTP.Door(),
			MCP: tools, Runtime: sp, RPCPath: cfg.HTTP.RPCPath, Page: page, Ready: health.All(reg.Ready, claims.Ready), Logger: log,
			Metrics: obsv.metricsHandler(), observability: obsv})
		if err != nil {
			var listenErr *net.OpError
			if errors.As(err, &listenErr) {
				err = listenError(httpListener, cfg.HTTP.Addr, httpAddrSetting, err)
			} else {
				err = fmt.Errorf("cannot serve the HTTP endpoints on %s: %w", cfg.HTTP.Addr, err)
			}
			return nil, err
		}
		s.HTTPURL = "http://" + bound.String()
		s.defer_(stopHTTP)
	}
	return s, nil
}

// The HTTP listener, and where an operator chooses the two listeners'
// addresses, for errors.
const (
	httpListener     = "the HTTP endpoints (/mcp, /rpc, the web page)"
	httpAddrSetting  = "--http-addr / --mcp-addr (config http_addr; make run: MCP_ADDR=host:port), or an empty one to run without HTTP"
	engineURLSetting = "--url (config url; make run: ADDR=host:port)"
)

// MCPTools are the MCP server's tool options: which tools it lists, and
// the setting that lists the others.
func (c *Config) MCPTools() skillsmcp.Options {
	return skillsmcp.Options{NoSkillTools: c.HTTP.NoSkillTools, AllowSideEffects: c.Registry.MCP.AllowSideEffects,
		AllowSideEffectsSetting: "--mcp-allow-side-effects (or mcp.allow_side_effects: true in config.yaml)"}
}

// Door is the listener's door rules and MCP session limits. The host of
// --public-url is answered to like a name in --mcp-allow-host.
func (h HTTPConfig) Door() skillsmcp.HTTPOptions {
	hosts := []string(h.AllowHost)
	if _, host, err := httpguard.PublicOrigin("", h.PublicURL); err == nil {
		hosts = append(slices.Clip(hosts), host)
	}
	return skillsmcp.HTTPOptions{Token: h.Token, MaxSessions: h.MaxSessions, IdleSessionTimeout: h.IdleTimeout,
		AllowedOrigins: h.AllowOrigin, OriginsSetting: "--mcp-allow-origin",
		AllowedHosts: hosts, HostsSetting: "--mcp-allow-host (config mcp_allow_host)"}
}

// WithEngineToken presents the worker token at connect (no-op when empty).
func WithEngineToken(token string) iii.Option {
	if token == "" {
		return iii.WithHeaders(nil) // no headers: the client's default
	}
	return iii.WithHeaders(http.Header{"Authorization": {"Bearer " + token}})
}
