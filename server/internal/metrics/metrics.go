package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/iii-skills/skills/server/internal/sandbox"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/surface"
)

// Label values with a meaning of their own.
const (
	// CodeOK is the code of a call that succeeded.
	CodeOK = "ok"
	// Other is the label value of everything outside a declared set:
	// a function id not in Options.Functions, a code not in Options.Codes,
	// an origin or connection kind a gauge function reports outside its
	// list.
	Other = "other"
)

// Handler limits.
const (
	// MaxScrapesInFlight is how many scrapes Handler serves at once; more
	// are answered 503.
	MaxScrapesInFlight = 4
	// ScrapeTimeout is how long Handler works on one scrape.
	ScrapeTimeout = 10 * time.Second
)

// Histogram buckets, in seconds or bytes.
var (
	// callBuckets cover a cached read (≈100 µs) to a slow section call.
	callBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// commitBuckets cover a memory store's commit to a slow disk's fsync.
	commitBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
	// writesBuckets: 1 to the store's 4096 writes per commit.
	writesBuckets = prometheus.ExponentialBuckets(1, 2, 13)
	// lagBuckets: a message on the same host to a periodic re-list.
	lagBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// cpuBuckets: a quick script to the 30 s default CPU limit and more.
	cpuBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	// memoryBuckets: 1 MiB to 2 GiB (the default run limit is 512 MiB).
	memoryBuckets = prometheus.ExponentialBuckets(1<<20, 2, 12)
)

// Options declares the label values counted by name.
type Options struct {
	// Functions are the function ids counted under their own name (the
	// registry's functions); calls of any other id are counted as "other".
	Functions []string
	// Codes are the refusal codes counted under their own name; "ok" is
	// always one, any other code is counted as "other".
	Codes []string
	// Logger receives the errors of scrapes (default: slog.Default()).
	Logger *slog.Logger
}

// Metrics holds the registry's series. It is safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	calls    callTable
	notified *prometheus.CounterVec

	propagationLag prometheus.Histogram
	relists        prometheus.Counter

	commitSeconds prometheus.Histogram
	fsyncSeconds  prometheus.Histogram
	commitWrites  prometheus.Histogram
	commitErrors  prometheus.Counter

	sandboxRuns   *prometheus.CounterVec
	sandboxCPU    prometheus.Histogram
	sandboxMemory prometheus.Histogram

	catalog     *gaugeFunc
	connections *gaugeFunc
}

// New returns the registry's metrics with the Go runtime and process
// collectors. It fails when a declared label value is empty, repeated, or
// one of the reserved values "ok" (a code) and "other".
func New(opts Options) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg}
	var err error
	if m.calls, err = newCallTable(opts.Functions, opts.Codes); err != nil {
		return nil, err
	}
	m.calls.total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skills_calls_total",
		Help: "Calls of the registry's functions by function id (\"other\" outside the registry's set), surface (iii, mcp, rpc, web) and outcome code (\"ok\" or the refusal code).",
	}, []string{"function", "surface", "code"})
	m.calls.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "skills_call_duration_seconds",
		Help:    "How long calls of the registry's functions took, by function id and surface.",
		Buckets: callBuckets,
	}, []string{"function", "surface"})
	m.notified = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skills_notifications_sent_total",
		Help: "Change notifications sent to clients, by surface (iii trigger fires, MCP list_changed/updated, web page events).",
	}, []string{"surface"})
	m.propagationLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skills_cluster_propagation_lag_seconds",
		Help:    "Time from a change on another node to this node applying it.",
		Buckets: lagBuckets,
	})
	m.relists = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "skills_cluster_relists_total",
		Help: "Times this node re-read the whole shared state instead of one change (a lost message or a reconnect).",
	})
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skills_store_commit_seconds",
		Help:    "Duration of the store's group commits, from taking the batch to its writes being durable.",
		Buckets: commitBuckets,
	})
	m.fsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skills_store_fsync_seconds",
		Help:    "Time each commit spent writing its pages and meta page and fdatasync'ing them (file-backed store only).",
		Buckets: commitBuckets,
	})
	m.commitWrites = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skills_store_commit_writes",
		Help:    "Writes per group commit of the store.",
		Buckets: writesBuckets,
	})
	m.commitErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "skills_store_commit_errors_total",
		Help: "Group commits of the store that failed (their writes were refused).",
	})
	m.sandboxRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skills_sandbox_runs_total",
		Help: "Sandbox runs by how they ended.",
	}, []string{"outcome"})
	m.sandboxCPU = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skills_sandbox_cpu_seconds",
		Help:    "CPU time of each sandbox run, all its processes together (runs with a cgroup that counts CPU).",
		Buckets: cpuBuckets,
	})
	m.sandboxMemory = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "skills_sandbox_peak_memory_bytes",
		Help:    "Peak memory of each sandbox run.",
		Buckets: memoryBuckets,
	})
	m.catalog = newGaugeFunc("skills_catalog_skills", "Skills in the catalog by origin.", "origin")
	m.connections = newGaugeFunc("skills_connections", "Open connections by kind.", "kind")

	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.calls.total, m.calls.duration, m.notified,
		m.propagationLag, m.relists,
		m.commitSeconds, m.fsyncSeconds, m.commitWrites, m.commitErrors,
		m.sandboxRuns, m.sandboxCPU, m.sandboxMemory,
		m.catalog, m.connections,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	// Every outcome and surface shows from the start, at zero: a rate
	// over a series that appears with its first event misses that event.
	for _, o := range sandboxOutcomes {
		m.sandboxRuns.WithLabelValues(string(o))
	}
	for _, s := range surface.All() {
		m.notified.WithLabelValues(s.String())
	}

	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	m.handler = promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            slogPrintln{log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            reg,
		MaxRequestsInFlight: MaxScrapesInFlight,
		Timeout:             ScrapeTimeout,
	}))
	return m, nil
}

// Handler serves the metrics in the Prometheus text format (or the
// protobuf or OpenMetrics format a scraper asks for). Mount it at GET
// /metrics behind the listener's Host and token checks.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Registry is the private registry, for a caller that adds series of its
// own; their label values must be bounded too.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Notified counts n change notifications sent on surface s (n ≤ 0 counts
// nothing).
func (m *Metrics) Notified(s surface.Surface, n int) {
	if n <= 0 || !s.Valid() {
		return
	}
	m.notified.WithLabelValues(s.String()).Add(float64(n))
}

// PropagationLag records how long a change made on another node took to be
// applied here (a negative lag, from clocks apart, counts as zero).
func (m *Metrics) PropagationLag(d time.Duration) {
	m.propagationLag.Observe(max(d, 0).Seconds())
}

// Relisted counts one re-read of the whole shared state.
func (m *Metrics) Relisted() { m.relists.Inc() }

// StoreCommitted records one group commit of the store; pass it to
// (*store.Store).SetCommitObserver.
func (m *Metrics) StoreCommitted(st store.CommitStats) {
	if st.Err != nil {
		m.commitErrors.Inc()
		return
	}
	m.commitSeconds.Observe(st.Duration.Seconds())
	if st.Sync > 0 {
		m.fsyncSeconds.Observe(st.Sync.Seconds())
	}
	m.commitWrites.Observe(float64(st.Writes))
}

// sandboxOutcomes are the outcome label values of sandbox runs.
var sandboxOutcomes = []sandbox.Outcome{sandbox.Exited, sandbox.Signaled, sandbox.TimedOut,
	sandbox.OutputExceeded, sandbox.Canceled, sandbox.MemoryExceeded}

// SandboxRun records one sandbox run; pass it as sandbox.Config.Observe.
// Its CPU time is recorded when the run had a cgroup that counts it.
func (m *Metrics) SandboxRun(r sandbox.Result) {
	outcome := Other
	for _, o := range sandboxOutcomes {
		if r.Outcome == o {
			outcome = string(o)
		}
	}
	m.sandboxRuns.WithLabelValues(outcome).Inc()
	if r.CPU > 0 {
		m.sandboxCPU.Observe(r.CPU.Seconds())
	}
	if r.PeakMemoryBytes > 0 {
		m.sandboxMemory.Observe(float64(r.PeakMemoryBytes))
	}
}

// CatalogSize makes skills_catalog_skills{origin} read fn at every scrape.
// origins are the label values reported by name (each one shows, at zero
// when fn leaves it out); counts fn reports under other keys are summed as
// "other". fn must be safe for concurrent use and quick. A later call
// replaces fn.
func (m *Metrics) CatalogSize(origins []string, fn func() map[string]int) error {
	return m.catalog.set([]gaugeSource{{values: origins, fn: fn}})
}

// Connections makes skills_connections{kind} read fn at every scrape;
// several sources (the engine's sockets, MCP sessions, web page streams)
// each add their own kinds, which must not overlap. Counts fn reports
// under kinds outside its list are summed as "other".
func (m *Metrics) Connections(kinds []string, fn func() map[string]int) error {
	return m.connections.add(gaugeSource{values: kinds, fn: fn})
}

// slogPrintln lets promhttp log through slog.
type slogPrintln struct{ log *slog.Logger }

func (l slogPrintln) Println(v ...any) { l.log.Warn("metrics: scrape", "error", fmt.Sprint(v...)) }

// checkValues refuses an empty, repeated or reserved label value.
func checkValues(what string, values []string, reserved ...string) error {
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		switch {
		case v == "":
			return fmt.Errorf("metrics: an empty %s was declared; declare each %s by its non-empty name", what, what)
		case seen[v]:
			return fmt.Errorf("metrics: %s %q was declared twice; declare each once", what, v)
		}
		for _, r := range reserved {
			if v == r {
				return fmt.Errorf("metrics: %s %q is reserved (it is always counted); leave it out of the list", what, v)
			}
		}
		seen[v] = true
	}
	return nil
}

var errNilFunc = errors.New("metrics: a gauge source needs a function to read its counts from")
