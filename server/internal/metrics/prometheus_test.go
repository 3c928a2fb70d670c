package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/metrics"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// requireTool finds a tool of Debian's prometheus package. Without it the
// test is "not run", unless METRICS_REQUIRE_PROMETHEUS=1 (make
// test-metrics-prometheus, once make metrics-deps installed the package)
// says it must be there.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("METRICS_REQUIRE_PROMETHEUS") == "1" {
			t.Fatalf("%s is not installed, and METRICS_REQUIRE_PROMETHEUS=1 says it must be (make metrics-deps)", name)
		}
		t.Skipf("not run: %s is not installed (make metrics-deps installs Debian's prometheus)", name)
	}
	return p
}

// guardedServer serves the handler at GET /metrics on a loopback port
// behind the HTTP listener's rules: Host check and a bearer token.
func guardedServer(t *testing.T, m *metrics.Metrics, token string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", httpguard.Policy{CheckHost: true, Token: token}.Wrap(m.Handler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// promtool, the Prometheus project's own checker, accepts the scrape: the
// format and the names follow Prometheus' conventions.
func TestPromtoolChecksTheScrape(t *testing.T) {
	promtool := requireTool(t, "promtool")
	m, url := newMetrics(t)
	m.Call(rules.FnSkillFetch, surface.III, metrics.CodeOK, time.Millisecond)
	m.Call(rules.FnSkillFetch, surface.MCP, rules.CodeNotFound, time.Millisecond)
	m.Notified(surface.Web, 1)
	if err := m.CatalogSize([]string{"published"}, func() map[string]int { return map[string]int{"published": 2} }); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// A real Prometheus server scrapes the handler behind the token rule and
// stores the numbers the calls made; without the token its scrape is
// refused.
func TestRealPrometheusScrapes(t *testing.T) {
	prom := requireTool(t, "prometheus")
	m, err := metrics.New(metrics.Options{Functions: testFunctions, Codes: testCodes})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		m.Call(rules.FnSkillFetch, surface.III, metrics.CodeOK, 3*time.Millisecond)
	}
	for range 2 {
		m.Call(rules.FnSkillsRegister, surface.RPC, rules.CodeForbidden, 20*time.Millisecond)
	}
	const token = "scrape-token-0123456789"
	target := guardedServer(t, m, token)

	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: skills
    authorization:
      credentials: %s
    static_configs:
      - targets: ['%s']
  - job_name: skills-without-token
    static_configs:
      - targets: ['%s']
`, token, target, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testutil.Buffer
	cmd := exec.CommandContext(ctx, prom,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	// query asks Prometheus for one instant value; ok is false until the
	// series exists.
	query := func(q string) (float64, bool) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var out struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		if json.NewDecoder(resp.Body).Decode(&out) != nil || out.Status != "success" || len(out.Data.Result) != 1 {
			return 0, false
		}
		s, _ := out.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	want := map[string]float64{
		fmt.Sprintf(`skills_calls_total{job="skills",function=%q,surface="iii",code="ok"}`, rules.FnSkillFetch):                        5,
		fmt.Sprintf(`skills_calls_total{job="skills",function=%q,surface="rpc",code=%q}`, rules.FnSkillsRegister, rules.CodeForbidden): 2,
		fmt.Sprintf(`skills_call_duration_seconds_count{job="skills",function=%q,surface="iii"}`, rules.FnSkillFetch):                  5,
		`up{job="skills"}`:                                   1,
		`up{job="skills-without-token"}`:                     0,
		`count(go_goroutines{job="skills"})`:                 1,
		`count(process_resident_memory_bytes{job="skills"})`: 1,
	}
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last mismatch: %s\nprometheus log:\n%s", last, logs.String())
		}
	})
	testutil.Eventually(t, 60*time.Second, "Prometheus to scrape the registry's metrics", func() bool {
		for q, v := range want {
			if got, ok := query(q); !ok || got != v {
				last = fmt.Sprintf("%s = %v (found %v); want %v", q, got, ok, v)
				return false
			}
		}
		return true
	})
	if cmd.ProcessState != nil {
		t.Fatalf("prometheus exited: %s", logs.String())
	}
}
