package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/metrics"
	"github.com/iii-skills/skills/server/internal/sandbox"
	"github.com/iii-skills/skills/server/internal/store"
	"github.com/iii-skills/skills/server/internal/surface"
)

var (
	testFunctions = []string{rules.FnSkillFetch, rules.FnSkillsList, rules.FnSkillsRegister, rules.FnSkillsResourcesRead}
	testCodes     = []string{rules.CodeNotFound, rules.CodeInvalidArguments, rules.CodeForbidden}
)

func newMetrics(t testing.TB) (*metrics.Metrics, string) {
	t.Helper()
	m, err := metrics.New(metrics.Options{Functions: testFunctions, Codes: testCodes})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// scrape GETs url like a Prometheus server does and parses the answer
// with Prometheus' own text parser.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: Content-Type %q; want the text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refused the scrape: %v", err)
	}
	return fams
}

// series returns the metric of family name whose labels are exactly
// labels, nil when there is none.
func series(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

func counter(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := series(fams, name, labels)
	if m == nil || m.GetCounter() == nil {
		t.Fatalf("no counter %s%v in the scrape", name, labels)
	}
	return m.GetCounter().GetValue()
}

func gauge(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := series(fams, name, labels)
	if m == nil || m.GetGauge() == nil {
		t.Fatalf("no gauge %s%v in the scrape", name, labels)
	}
	return m.GetGauge().GetValue()
}

func histogram(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	m := series(fams, name, labels)
	if m == nil || m.GetHistogram() == nil {
		t.Fatalf("no histogram %s%v in the scrape", name, labels)
	}
	return m.GetHistogram()
}

// cumulative returns the count of the histogram's bucket with upper bound le.
func cumulative(t testing.TB, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%g", le)
	return 0
}

func call(fn, s, code string) map[string]string {
	return map[string]string{"function": fn, "surface": s, "code": code}
}

// Calls are counted by function, surface and code, timed into the right
// buckets, and every undeclared function id or code lands in "other".
func TestCallsCountedByFunctionSurfaceAndCode(t *testing.T) {
	m, url := newMetrics(t)
	for range 7 {
		m.Call(rules.FnSkillFetch, surface.III, metrics.CodeOK, 2*time.Millisecond)
	}
	for range 3 {
		m.Call(rules.FnSkillFetch, surface.MCP, rules.CodeNotFound, 40*time.Millisecond)
	}
	m.Call(rules.FnSkillsList, surface.Web, "", 300*time.Microsecond) // "" is ok
	m.Call("attacker/made-up::fn", surface.RPC, "weird code \"\n", time.Second)
	m.Call("another/made-up", surface.RPC, rules.CodeForbidden, time.Second)
	m.Call(rules.FnSkillFetch, surface.Surface(9), metrics.CodeOK, time.Second) // not a surface: not counted

	fams := scrape(t, url)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{call(rules.FnSkillFetch, "iii", "ok"), 7},
		{call(rules.FnSkillFetch, "mcp", rules.CodeNotFound), 3},
		{call(rules.FnSkillsList, "web", "ok"), 1},
		{call("other", "rpc", "other"), 1},
		{call("other", "rpc", rules.CodeForbidden), 1},
	} {
		if got := counter(t, fams, "skills_calls_total", c.labels); got != c.want {
			t.Errorf("skills_calls_total%v = %v; want %v", c.labels, got, c.want)
		}
	}
	if n := len(fams["skills_calls_total"].GetMetric()); n != 5 {
		t.Errorf("skills_calls_total has %d series; want the 5 used", n)
	}

	h := histogram(t, fams, "skills_call_duration_seconds", map[string]string{"function": rules.FnSkillFetch, "surface": "iii"})
	if h.GetSampleCount() != 7 || math.Abs(h.GetSampleSum()-7*0.002) > 1e-9 {
		t.Errorf("fetch on iii: %d samples summing %g; want 7 summing 0.014", h.GetSampleCount(), h.GetSampleSum())
	}
	if below, in := cumulative(t, h, 0.001), cumulative(t, h, 0.0025); below != 0 || in != 7 {
		t.Errorf("fetch on iii: %d calls ≤ 1 ms, %d ≤ 2.5 ms; want 0 and 7 (each took 2 ms)", below, in)
	}
	h = histogram(t, fams, "skills_call_duration_seconds", map[string]string{"function": rules.FnSkillFetch, "surface": "mcp"})
	if cumulative(t, h, 0.025) != 0 || cumulative(t, h, 0.05) != 3 {
		t.Errorf("fetch on mcp: buckets %v; want the 3 calls of 40 ms between 25 and 50 ms", h.GetBucket())
	}
	h = histogram(t, fams, "skills_call_duration_seconds", map[string]string{"function": "other", "surface": "rpc"})
	if h.GetSampleCount() != 2 {
		t.Errorf("other on rpc: %d samples; want 2", h.GetSampleCount())
	}
}

// Whatever ids and codes callers send, the number of series stays within
// the declared sets: label values never come from user input.
func TestCallLabelsStayBounded(t *testing.T) {
	m, url := newMetrics(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				fn := fmt.Sprintf("skill/%d-%d", w, i)
				if i%3 == 0 {
					fn = testFunctions[i%len(testFunctions)]
				}
				m.Call(fn, surface.Surface(i%surface.Count), fmt.Sprintf("CODE_%d", i%50), time.Millisecond)
			}
		}()
	}
	wg.Wait()
	fams := scrape(t, url)
	total := 0.0
	for _, s := range fams["skills_calls_total"].GetMetric() {
		total += s.GetCounter().GetValue()
		for _, l := range s.GetLabel() {
			if l.GetName() == "function" && !contains(append(testFunctions, "other"), l.GetValue()) {
				t.Fatalf("series with function %q, outside the declared set", l.GetValue())
			}
			if l.GetName() == "code" && l.GetValue() != "other" {
				t.Fatalf("series with code %q; every code sent was undeclared", l.GetValue())
			}
		}
	}
	if total != 16000 {
		t.Fatalf("counted %v calls; want 16000", total)
	}
	if max := (len(testFunctions) + 1) * surface.Count; len(fams["skills_calls_total"].GetMetric()) > max {
		t.Fatalf("%d series; want at most %d", len(fams["skills_calls_total"].GetMetric()), max)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// The Go runtime and process collectors are there, and only on this
// registry: the process-wide default registry is left alone.
func TestRuntimeAndProcessCollectors(t *testing.T) {
	_, url := newMetrics(t)
	fams := scrape(t, url)
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "promhttp_metric_handler_requests_total"} {
		if fams[name] == nil {
			t.Errorf("%s missing from the scrape", name)
		}
	}
	if rss := gauge(t, fams, "process_resident_memory_bytes", map[string]string{}); rss <= 0 {
		t.Errorf("process_resident_memory_bytes = %v", rss)
	}
	// Two Metrics in one process do not collide (a private registry each).
	if _, err := metrics.New(metrics.Options{Functions: testFunctions}); err != nil {
		t.Fatalf("a second Metrics: %v", err)
	}
}

// A real file-backed store feeds the commit histograms through its
// observer: every write is counted once, and each commit has an fsync.
func TestStoreCommitsFromARealStore(t *testing.T) {
	m, url := newMetrics(t)
	s, err := store.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetCommitObserver(m.StoreCommitted)
	const writes = 40
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes / 4 {
				if _, err := s.Set("scope", fmt.Sprintf("%d-%d", w, i), json.RawMessage(`{"v":1}`)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	fams := scrape(t, url)
	w := histogram(t, fams, "skills_store_commit_writes", map[string]string{})
	c := histogram(t, fams, "skills_store_commit_seconds", map[string]string{})
	f := histogram(t, fams, "skills_store_fsync_seconds", map[string]string{})
	if w.GetSampleSum() != writes {
		t.Errorf("skills_store_commit_writes sums %v writes; want %d", w.GetSampleSum(), writes)
	}
	if c.GetSampleCount() == 0 || c.GetSampleCount() != w.GetSampleCount() || f.GetSampleCount() != c.GetSampleCount() {
		t.Errorf("commits: %d timed, %d sized, %d fsyncs; want the same non-zero count", c.GetSampleCount(), w.GetSampleCount(), f.GetSampleCount())
	}
	if f.GetSampleSum() <= 0 || f.GetSampleSum() > c.GetSampleSum() {
		t.Errorf("fsync time %g, commit time %g; want 0 < fsync ≤ commit", f.GetSampleSum(), c.GetSampleSum())
	}
	m.StoreCommitted(store.CommitStats{Writes: 3, Err: store.ErrClosed})
	if got := counter(t, scrape(t, url), "skills_store_commit_errors_total", map[string]string{}); got != 1 {
		t.Errorf("skills_store_commit_errors_total = %v; want 1", got)
	}
}

// Sandbox runs are counted by outcome (every outcome shows from the start),
// with CPU only when it was measured.
func TestSandboxRuns(t *testing.T) {
	m, url := newMetrics(t)
	fams := scrape(t, url)
	for _, o := range []sandbox.Outcome{sandbox.Exited, sandbox.Signaled, sandbox.TimedOut, sandbox.OutputExceeded, sandbox.Canceled, sandbox.MemoryExceeded} {
		if got := counter(t, fams, "skills_sandbox_runs_total", map[string]string{"outcome": string(o)}); got != 0 {
			t.Fatalf("%s before any run = %v", o, got)
		}
	}
	m.SandboxRun(sandbox.Result{Outcome: sandbox.Exited, CPU: 300 * time.Millisecond, PeakMemoryBytes: 3 << 20})
	m.SandboxRun(sandbox.Result{Outcome: sandbox.TimedOut, CPU: 2 * time.Second, PeakMemoryBytes: 100 << 20})
	m.SandboxRun(sandbox.Result{Outcome: sandbox.Exited, PeakMemoryBytes: 1 << 20}) // no cgroup: no CPU figure
	m.SandboxRun(sandbox.Result{Outcome: "from-a-future-version"})
	fams = scrape(t, url)
	for o, want := range map[string]float64{"exited": 2, "timed_out": 1, "other": 1, "canceled": 0} {
		if got := counter(t, fams, "skills_sandbox_runs_total", map[string]string{"outcome": o}); got != want {
			t.Errorf("runs %s = %v; want %v", o, got, want)
		}
	}
	cpu := histogram(t, fams, "skills_sandbox_cpu_seconds", map[string]string{})
	if cpu.GetSampleCount() != 2 || math.Abs(cpu.GetSampleSum()-2.3) > 1e-9 {
		t.Errorf("CPU: %d samples, %g s; want 2 summing 2.3 s", cpu.GetSampleCount(), cpu.GetSampleSum())
	}
	mem := histogram(t, fams, "skills_sandbox_peak_memory_bytes", map[string]string{})
	if mem.GetSampleCount() != 3 || cumulative(t, mem, 4<<20) != 2 {
		t.Errorf("memory: %d samples, %d ≤ 4 MiB; want 3 and 2", mem.GetSampleCount(), cumulative(t, mem, 4<<20))
	}

	// A real run through sandbox.Config.Observe, where bubblewrap is here.
	sb := sandbox.New(sandbox.Config{Observe: m.SandboxRun})
	if sb.Available() != nil {
		t.Log("bubblewrap missing: the real sandbox run is left out")
		return
	}
	res, err := sb.Run(context.Background(), sandbox.Spec{Command: []string{"/bin/sh", "-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != sandbox.Exited || res.ExitCode != 3 {
		t.Fatalf("run: %s %d: %s", res.Outcome, res.ExitCode, res.Stderr)
	}
	if got := counter(t, scrape(t, url), "skills_sandbox_runs_total", map[string]string{"outcome": "exited"}); got != 3 {
		t.Errorf("exited after a real run = %v; want 3", got)
	}
}

func TestNotificationsAndCluster(t *testing.T) {
	m, url := newMetrics(t)
	m.Notified(surface.MCP, 3)
	m.Notified(surface.MCP, 2)
	m.Notified(surface.Web, 1)
	m.Notified(surface.III, 0)
	m.Notified(surface.Surface(7), 5)
	m.PropagationLag(30 * time.Millisecond)
	m.PropagationLag(-time.Second) // clocks apart: zero
	m.Relisted()
	m.Relisted()
	fams := scrape(t, url)
	for s, want := range map[string]float64{"mcp": 5, "web": 1, "iii": 0, "rpc": 0} {
		if got := counter(t, fams, "skills_notifications_sent_total", map[string]string{"surface": s}); got != want {
			t.Errorf("notifications on %s = %v; want %v", s, got, want)
		}
	}
	lag := histogram(t, fams, "skills_cluster_propagation_lag_seconds", map[string]string{})
	if lag.GetSampleCount() != 2 || math.Abs(lag.GetSampleSum()-0.03) > 1e-9 || cumulative(t, lag, 0.001) != 1 {
		t.Errorf("lag: %d samples summing %g, %d ≤ 1 ms; want 2 summing 0.03 with the negative one at 0", lag.GetSampleCount(), lag.GetSampleSum(), cumulative(t, lag, 0.001))
	}
	if got := counter(t, fams, "skills_cluster_relists_total", map[string]string{}); got != 2 {
		t.Errorf("relists = %v; want 2", got)
	}
}

// The catalog's size by origin is read at scrape time; declared origins
// show at zero, undeclared ones are summed as "other".
func TestCatalogSize(t *testing.T) {
	m, url := newMetrics(t)
	var mu sync.Mutex
	counts := map[string]int{"published": 12, "folder": 3}
	if err := m.CatalogSize([]string{"published", "folder", "bundle", "builtin"}, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range counts {
			out[k] = v
		}
		return out
	}); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, url)
	for o, want := range map[string]float64{"published": 12, "folder": 3, "bundle": 0, "builtin": 0} {
		if got := gauge(t, fams, "skills_catalog_skills", map[string]string{"origin": o}); got != want {
			t.Errorf("catalog %s = %v; want %v", o, got, want)
		}
	}
	if series(fams, "skills_catalog_skills", map[string]string{"origin": "other"}) != nil {
		t.Error(`an "other" origin with nothing in it`)
	}
	mu.Lock()
	counts["published"] = 11
	counts["my-own-origin"] = 2
	counts["another"] = 1
	mu.Unlock()
	fams = scrape(t, url)
	if got := gauge(t, fams, "skills_catalog_skills", map[string]string{"origin": "published"}); got != 11 {
		t.Errorf("published after a change = %v; want 11", got)
	}
	if got := gauge(t, fams, "skills_catalog_skills", map[string]string{"origin": "other"}); got != 3 {
		t.Errorf("other = %v; want 3 (two undeclared origins)", got)
	}
}

// Connections by kind come from the real engine's counts (and from other
// sources beside it); kinds cannot be declared twice.
func TestConnectionsFromTheEngine(t *testing.T) {
	m, url := newMetrics(t)
	e, err := engine.New(engine.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := m.Connections(metrics.EngineKinds, func() map[string]int { return metrics.EngineConnections(e.ConnectionCounts()) }); err != nil {
		t.Fatal(err)
	}
	if err := m.Connections([]string{"mcp_session"}, func() map[string]int { return map[string]int{"mcp_session": 4} }); err != nil {
		t.Fatal(err)
	}
	if err := m.Connections([]string{"mcp_session"}, func() map[string]int { return nil }); err == nil {
		t.Fatal("a kind declared twice was accepted")
	}
	for range 2 {
		ws, _, err := websocket.DefaultDialer.Dial(e.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
	}
	mem, err := e.DialContext(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) { return mem, nil }}
	ws, _, err := d.Dial(e.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	want := map[string]float64{metrics.KindEngineWorker: 2, metrics.KindEngineInProcess: 1, metrics.KindEngineScopedWorker: 0, metrics.KindEngineTelemetry: 0, "mcp_session": 4}
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams := scrape(t, url)
		ok := true
		for k, v := range want {
			if gauge(t, fams, "skills_connections", map[string]string{"kind": k}) != v {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("skills_connections never reached %v: %v", want, fams["skills_connections"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDeclaredValuesAreChecked(t *testing.T) {
	for _, c := range []struct {
		opts metrics.Options
		want string
	}{
		{metrics.Options{Functions: []string{rules.FnSkillFetch, rules.FnSkillFetch}}, "declared twice"},
		{metrics.Options{Functions: []string{""}}, "empty function id"},
		{metrics.Options{Functions: []string{"other"}}, "reserved"},
		{metrics.Options{Codes: []string{"ok"}}, "reserved"},
	} {
		if _, err := metrics.New(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error saying %q", c.opts, err, c.want)
		}
	}
	m, _ := newMetrics(t)
	if err := m.CatalogSize([]string{"published"}, nil); err == nil {
		t.Error("a gauge without a function was accepted")
	}
}
