package app

// The assembly of observability: metrics fed from the store, the sandbox,
// the engine, the cluster, the catalog and every surface; read counts kept
// in state; the change feed and webhooks fed from the registry's changes;
// traces. Each surface gets the one *observe.Observer.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/changefeed"
	"github.com/iii-skills/skills/server/internal/cluster"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/downloads"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/kv"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/metrics"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/sandbox"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/tracing"
	"github.com/iii-skills/skills/server/internal/usage"
	"github.com/iii-skills/skills/server/internal/web"
	"github.com/iii-skills/skills/server/internal/webhooks"
	"github.com/iii-skills/skills/server/internal/worker"
)

// observability is the running server's metrics, traces, read counts,
// change feed and webhooks.
type observability struct {
	cfg  ObservabilityConfig
	log  *slog.Logger
	node string

	metrics *metrics.Metrics // nil: metrics_addr ""
	tracer  *tracing.Tracer
	usage   *usage.Counter // nil: usage.disabled
	feed    *changefeed.Feed
	hooks   atomic.Pointer[webhooks.Dispatcher]
	obs     *observe.Observer

	// runs are the loops (flushing counts, naming readers, delivering
	// webhooks), stopped and waited for before the client closes.
	runCtx  context.Context
	stopRun context.CancelFunc
	runs    sync.WaitGroup
}

// Labels of the connection gauges the HTTP surfaces report.
const (
	kindMCPSession = "mcp_session"
	kindWebStream  = "web_stream"
)

// newObservability builds the metrics and the tracer (before the registry,
// whose cluster reports to the metrics) and settles the node name.
func newObservability(ctx context.Context, cfg Config, log *slog.Logger) (*observability, error) {
	o := &observability{cfg: cfg.Observability, log: log}
	var err error
	if o.node, err = cfg.Observability.nodeName(cfg.Engine.DataDir); err != nil {
		return nil, err
	}
	if cfg.Observability.MetricsAddr.On() {
		functions := append(append(append(append(worker.FunctionIDs(), skillsmcp.Methods...), skillsprotocol.ToolNames()...), web.Routes...), downloads.Routes...)
		if o.metrics, err = metrics.New(metrics.Options{Functions: dedupe(functions), Codes: observe.Codes(), Logger: log}); err != nil {
			return nil, err
		}
	}
	if o.tracer, err = tracing.New(ctx, cfg.Observability.Tracing); err != nil {
		return nil, err
	}
	if o.tracer.Enabled() {
		log.Info("tracing: spans exported over OTLP", "endpoint", cfg.Observability.Tracing.Endpoint)
	}
	o.runCtx, o.stopRun = context.WithCancel(context.WithoutCancel(ctx))
	return o, nil
}

func dedupe(list []string) []string {
	slices.Sort(list)
	return slices.Compact(list)
}

// clusterOptions report the cluster's propagation lag and re-lists.
func (o *observability) clusterOptions() cluster.Options {
	if o.metrics == nil {
		return cluster.Options{}
	}
	return cluster.Options{OnApplied: o.metrics.PropagationLag, OnRelist: o.metrics.Relisted}
}

// watchStore reports st's group commits.
func (o *observability) watchStore(st *store.Store) {
	if o.metrics != nil && st != nil {
		st.SetCommitObserver(o.metrics.StoreCommitted)
	}
}

// watchEngine reports eng's connections and its store's commits.
func (o *observability) watchEngine(eng *engine.Engine) error {
	if o.metrics == nil || eng == nil {
		return nil
	}
	o.watchStore(eng.StateStore())
	return o.metrics.Connections(metrics.EngineKinds, func() map[string]int { return metrics.EngineConnections(eng.ConnectionCounts()) })
}

// attach builds what needs the registry: the read counter, the change
// feed, the Observer every surface reports to, and the subscription that
// feeds the change feed and webhooks from the registry's changes.
func (o *observability) attach(ctx context.Context, cfg Config, client *iii.Client, state kv.Store, reg *core.Local, w *worker.Worker) error {
	skills := cfg.Registry.Scopes.Skills
	if o.metrics != nil {
		origins := []string{string(catalog.OriginPublished), string(catalog.OriginFolder), string(catalog.OriginBundle), string(catalog.OriginBuiltin)}
		cat := reg.Catalog()
		if err := o.metrics.CatalogSize(origins, func() map[string]int {
			out := map[string]int{}
			for _, e := range cat.List() {
				out[string(e.Origin.Kind)]++
			}
			return out
		}); err != nil {
			return err
		}
	}
	if u := cfg.Observability.Usage; !u.Disabled {
		var err error
		o.usage, err = usage.New(usage.Options{KV: kv.TableOf(state, usageScope(skills)), Node: o.node,
			FlushInterval: u.FlushInterval, MaxPending: u.MaxPending, MaxClients: u.MaxClients, Days: u.Days, Logger: o.log})
		if err != nil {
			return err
		}
		o.run(o.usage.Run)
	}
	fo := changefeed.Options{Store: state, Scope: changesScope(skills), Node: o.node}
	if state.Shared() {
		fo.Sequence = changefeed.StateSequence(invoke.Caller{Client: client, Timeout: cfg.Registry.StateTimeout()}, state, fo.Scope)
	}
	var err error
	if o.feed, err = changefeed.New(ctx, fo); err != nil {
		return err
	}
	o.obs = observe.New(observe.Options{Metrics: o.metrics, Tracer: o.tracer, Usage: o.usage, Versions: reg.ReadVersion,
		Engine: client, Logger: o.log})
	o.run(o.obs.Run)
	reg.SetReadCounter(o.obs)
	w.Observe(o.obs, o.feed)
	reg.OnEvent(o.changed)
	return nil
}

// run runs loop until the server closes.
func (o *observability) run(loop func(context.Context)) {
	o.runs.Add(1)
	go func() { defer o.runs.Done(); loop(o.runCtx) }()
}

// startWebhooks loads the webhook queues (state must be reachable: after
// the client connected) and starts delivering.
func (o *observability) startWebhooks(ctx context.Context, cfg Config, state kv.Store) error {
	eps := cfg.Observability.Webhooks
	if len(eps) == 0 {
		return nil
	}
	r := cfg.Observability.WebhookRetry
	d, err := webhooks.New(ctx, webhooks.Options{Endpoints: eps, KV: kv.TableOf(state, webhooksScope(cfg.Registry.Scopes.Skills)),
		Node: o.node, MaxAttempts: r.Attempts, InitialInterval: r.Initial, MaxInterval: r.Max, Logger: o.log})
	if err != nil {
		return err
	}
	o.hooks.Store(d)
	o.run(d.Run)
	o.log.Info("webhooks: delivering every skill change", "receivers", len(eps), "node", o.node)
	return nil
}

// changed appends a change this instance made to the feed and queues its
// webhooks (the node that made a change publishes it, once), both durable
// before the change is answered: its cursor is taken first, then the
// entry and the deliveries are written at once (one group commit on a
// store of this process, rather than one after the other).
func (o *observability) changed(ctx context.Context, e core.Event) {
	fe := changefeed.Entry{Type: e.Op, ID: e.ID, Version: e.Version, Label: e.Label,
		Previous: e.Previous, RolledBack: e.RolledBack, Author: e.Author, Reason: e.Reason, At: e.At}
	if e.Op == core.EventDeprecate {
		fe.Message = e.Message
	}
	entry, err := o.feed.Reserve(ctx, fe)
	if err != nil {
		o.log.Warn("changes: a change is not in the feed ("+rules.FnSkillsChanges+")", "type", e.Op, "id", e.ID, "err", err)
	}
	var wrote sync.WaitGroup
	if err == nil {
		wrote.Go(func() {
			if err := o.feed.Write(ctx, entry); err != nil {
				o.log.Warn("changes: a change is not in the feed ("+rules.FnSkillsChanges+")", "type", e.Op, "id", e.ID, "err", err)
			}
		})
	}
	defer wrote.Wait()
	d := o.hooks.Load()
	if d == nil || !slices.Contains(webhooks.Events, webhooks.Event(e.Op)) {
		return
	}
	extra := map[string]any{}
	if entry.Cursor > 0 {
		extra["cursor"] = entry.Cursor
	}
	if e.Previous > 0 {
		extra["previous"] = e.Previous
	}
	if e.RolledBack > 0 {
		extra["rolled_back"] = e.RolledBack
	}
	if e.Author != "" {
		extra["author"] = e.Author
	}
	if e.Reason != "" {
		extra["reason"] = e.Reason
	}
	if e.Op == core.EventDeprecate {
		// The deprecation's message, null when it was removed.
		if e.Message != "" {
			extra["message"] = e.Message
		} else {
			extra["message"] = nil
		}
	}
	if err := d.Publish(ctx, webhooks.Change{Type: webhooks.Event(e.Op), ID: e.ID, Version: e.Version, Label: e.Label, At: e.At, Extra: extra}); err != nil {
		o.log.Warn("webhooks: a change was not queued", "type", e.Op, "id", e.ID, "err", err)
	}
}

// webhookAdmin is the webhook deliveries for the web page (nil: none).
func (o *observability) webhookAdmin() web.WebhookAdmin {
	if d := o.hooks.Load(); d != nil {
		return d
	}
	return nil
}

// usageSource is the read counts for the web page (nil: off).
func (o *observability) usageSource() web.UsageSource {
	if o.usage == nil {
		return nil
	}
	return o.usage
}

// metricsHandler is /metrics on the HTTP listener (nil: elsewhere or off).
func (o *observability) metricsHandler() http.Handler {
	if o.metrics == nil || !o.cfg.MetricsAddr.OnHTTP() {
		return nil
	}
	return o.metrics.Handler()
}

// serveMetrics serves GET /metrics on metrics_addr, behind the HTTP
// listener's Host, Origin and token rules; it returns a func that stops it.
func (o *observability) serveMetrics(ctx context.Context, door skillsmcp.HTTPOptions) (stop func(), err error) {
	if o.metrics == nil || o.cfg.MetricsAddr.OnHTTP() {
		return func() {}, nil
	}
	addr := o.cfg.MetricsAddr.Addr
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError("/metrics", addr, "metrics_addr (--metrics-addr), or \"\" to turn it off", err)
	}
	door.ListenAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", door.Policy().Wrap(o.metrics.Handler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: metricsReadHeaderTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.log.Error("/metrics listener stopped", "addr", addr, "err", err)
		}
	}()
	o.log.Info(fmt.Sprintf("metrics http://%s/metrics", ln.Addr()), "auth", door.Token != "")
	if !httpguard.IsLoopbackAddr(ln.Addr().String()) && door.Token == "" {
		o.log.Warn("SECURITY: /metrics listens on a non-loopback address without a token: anyone who reaches "+ln.Addr().String()+
			" reads the registry's metrics; set --mcp-token / "+EnvMCPToken+" or bind 127.0.0.1", "addr", ln.Addr().String())
	}
	stopCtx := context.AfterFunc(ctx, func() { _ = srv.Close() })
	return func() {
		stopCtx()
		_ = srv.Close()
		<-done
	}, nil
}

// metricsReadHeaderTimeout bounds a scraper's request headers.
const metricsReadHeaderTimeout = 10 * time.Second

// sandboxRun reports each sandbox run (nil: metrics are off).
func (o *observability) sandboxRun() func(sandbox.Result) {
	if o.metrics == nil {
		return nil
	}
	return o.metrics.SandboxRun
}

// connections reports the HTTP surfaces' open sessions and streams.
func (o *observability) connections(kind string, count func() int) {
	if o.metrics == nil {
		return
	}
	if err := o.metrics.Connections([]string{kind}, func() map[string]int { return map[string]int{kind: count()} }); err != nil {
		o.log.Warn("metrics: connections of kind "+kind+" are not reported", "err", err)
	}
}

// stop ends the loops (a last flush of the read counts included) while
// the client is still connected.
func (o *observability) stop() {
	o.stopRun()
	o.runs.Wait()
}

// shutdown sends the spans still waiting.
func (o *observability) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.tracer.Shutdown(ctx)
}
