package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// TestMain removes the skills binary the tests built (testutil.BuildSkills).
func TestMain(m *testing.M) { testutil.Main(m) }

// program finds a program (env var first, then PATH); without it the
// test is "not run", or fails when CLUSTER_TESTS_REQUIRED=1.
func program(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); env != "" && p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	if os.Getenv("CLUSTER_TESTS_REQUIRED") == "1" {
		t.Fatalf("%s is not installed", name)
	}
	t.Skipf("not run: no %s (set %s or put it on PATH)", name, env)
	return ""
}

// proc is a child process the test owns.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.Buffer
	done chan struct{}
}

func start(t testing.TB, name, dir string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &testutil.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, tail(p.out.String(), 3000))
		}
	})
	return p
}

// stop signals the process and waits for it (SIGKILL after 15 s).
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// cluster is Redis, two engines and a registry on each.
type cluster struct {
	t         testing.TB
	dir       string
	iiiBin    string
	redisBin  string
	skillsBin string
	redisAddr string
	redis     *proc
	nodes     []*node
	// registryArgs are extra flags of every registry.
	registryArgs []string
	// upstreamBin, when set, runs upstream's skills worker as each node's
	// registry instead of ours (benchmarks beside it).
	upstreamBin string
	// bridges gives an engine (by node index) the engine's iii-bridge
	// worker connected to another node's engine (by index).
	bridges map[int]int
}

type node struct {
	name       string
	engineAddr string
	// bridgeTo is the engine this node's engine bridges to (iii-bridge),
	// nil for none.
	bridgeTo *node
	mcpAddr  string
	dataDir  string
	engine   *proc
	registry *proc
	caller   *iii.Client
}

func (n *node) url() string { return "ws://" + n.engineAddr }

// newCluster is Redis, two engines on it and our registry on each.
func newCluster(t testing.TB, registryArgs ...string) *cluster {
	return startCluster(t, &cluster{registryArgs: registryArgs}, 2)
}

// startCluster starts Redis, nodes engines on it and c's registry on each.
func startCluster(t testing.TB, c *cluster, nodes int) *cluster {
	t.Helper()
	c.t, c.dir = t, t.TempDir()
	c.iiiBin = program(t, "III_BIN", "iii")
	c.redisBin = program(t, "REDIS_SERVER", "redis-server")
	c.skillsBin = testutil.SkillsBinary(t)
	c.redisAddr = testutil.FreeAddr(t)
	c.startRedis()
	for i := range nodes {
		name := string(rune('a' + i))
		c.nodes = append(c.nodes, &node{name: name, engineAddr: testutil.FreeAddr(t), mcpAddr: testutil.FreeAddr(t),
			dataDir: filepath.Join(c.dir, "registry-"+name)})
	}
	for i, n := range c.nodes {
		to, bridged := c.bridges[i]
		if bridged {
			n.bridgeTo = c.nodes[to]
		}
		c.startEngine(n)
		n.caller = iii.RegisterWorker(n.url(), iii.WithName("cluster-test-"+n.name))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := n.caller.Connect(ctx)
		cancel()
		if err != nil {
			t.Fatalf("connect to engine %s: %v", n.name, err)
		}
		t.Cleanup(func() { _ = n.caller.Close() })
	}
	for _, n := range c.nodes {
		c.startRegistry(n)
	}
	return c
}

func (c *cluster) startRedis() {
	_, port, _ := net.SplitHostPort(c.redisAddr)
	dir := filepath.Join(c.dir, "redis")
	_ = os.MkdirAll(dir, 0o755)
	// Durable (append-only file), so a restart keeps the registry's state.
	c.redis = start(c.t, "redis", dir, nil, c.redisBin, "--bind", "127.0.0.1", "--port", port, "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "yes")
	testutil.Eventually(c.t, 20*time.Second, "redis listens", func() bool { return listening(c.redisAddr) })
}

// engineConfig is the engine config of docs/deploy.md, "N engines on
// Redis", with the iii-bridge worker connected to bridgeURL when it is set
// ("Prompts and sections across engines").
func engineConfig(port, redisURL, bridgeURL string) string {
	bridge := ""
	if bridgeURL != "" {
		bridge = fmt.Sprintf(`  - name: iii-bridge
    config:
      url: %q
`, bridgeURL)
	}
	return fmt.Sprintf(`workers:
  - name: iii-worker-manager
    config:
      host: 127.0.0.1
      port: %s
  - name: iii-state
    config:
      adapter:
        name: redis
        config:
          redis_url: %q
  - name: iii-pubsub
    config:
      adapter:
        name: redis
        config:
          redis_url: %q
  - name: iii-observability
    config:
      enabled: false
%s`, port, redisURL, redisURL, bridge)
}

func (c *cluster) startEngine(n *node) {
	_, port, _ := net.SplitHostPort(n.engineAddr)
	dir := filepath.Join(c.dir, "engine-"+n.name)
	_ = os.MkdirAll(dir, 0o755)
	cfg := filepath.Join(dir, "config.yaml")
	bridgeURL := ""
	if n.bridgeTo != nil {
		bridgeURL = n.bridgeTo.url()
	}
	if err := os.WriteFile(cfg, []byte(engineConfig(port, "redis://"+c.redisAddr, bridgeURL)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	n.engine = start(c.t, "engine "+n.name, dir, []string{"III_TELEMETRY_ENABLED=false"}, c.iiiBin,
		"--no-update-check", "--config", cfg)
	testutil.Eventually(c.t, 20*time.Second, "engine "+n.name+" listens", func() bool { return listening(n.engineAddr) })
}

func (c *cluster) startRegistry(n *node) {
	if c.upstreamBin != "" {
		n.registry = start(c.t, "upstream registry "+n.name, c.dir, nil, c.upstreamBin, "--url", n.url(),
			"--config", filepath.Join(c.dir, "none.yaml"))
		testutil.Eventually(c.t, 20*time.Second, "upstream's registry "+n.name+" answers", func() bool {
			return n.call("skills::list", map[string]any{}, nil) == nil
		})
		return
	}
	args := append([]string{"--url", n.url(), "--config", filepath.Join(c.dir, "none.yaml"), "--data", n.dataDir,
		"--mcp-addr", n.mcpAddr}, c.registryArgs...)
	n.registry = start(c.t, "registry "+n.name, c.dir, nil, c.skillsBin, args...)
	testutil.Eventually(c.t, 20*time.Second, "registry "+n.name+" is ready", func() bool {
		resp, err := http.Get("http://" + n.mcpAddr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// call triggers fn through n's engine.
func (n *node) call(fn string, payload any, out any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := n.caller.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func (n *node) mustCall(t testing.TB, fn string, payload any, out any) {
	t.Helper()
	if err := n.call(fn, payload, out); err != nil {
		t.Fatalf("%s through engine %s: %v", fn, n.name, err)
	}
}

// fetch reads uri through n (skills::resources-read: the text as stored),
// "" when it fails.
func (n *node) fetch(uri string) string {
	var out struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if n.call("skills::resources-read", map[string]string{"uri": uri}, &out) != nil || len(out.Contents) == 0 {
		return ""
	}
	return out.Contents[0].Text
}

// fetchSkill is skill::fetch of uri ("# uri\n\n" and the text), "" when
// it fails.
func (n *node) fetchSkill(uri string) string {
	var out string
	if n.call("skill::fetch", map[string]string{"uri": uri}, &out) != nil {
		return ""
	}
	return out
}

func (n *node) lists(fn, listKey, idKey, want string) bool {
	var out map[string][]map[string]any
	if n.call(fn, map[string]any{}, &out) != nil {
		return false
	}
	for _, e := range out[listKey] {
		if e[idKey] == want {
			return true
		}
	}
	return false
}

// bundle is a Skills Protocol bundle, the payload of skills::publish-bundle.
func bundle(name, version string) map[string]any {
	return map[string]any{"files": []map[string]string{
		{"path": "skill.toml", "content": "name = \"" + name + "\"\nversion = \"" + version + "\"\ndescription = \"Say hello\"\nkind = \"instruction\"\n"},
		{"path": "SKILL.md", "content": "# Hello\n\nPublished through one engine.\n"},
	}}
}

// bundleVersions is what n's /rpc describe_skill lists for bundle name
// (nil when it does not know it).
func (n *node) bundleVersions(t testing.TB, name string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "describe_skill", "params": map[string]string{"name": name}})
	resp, err := http.Post("http://"+n.mcpAddr+"/rpc", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Versions []string `json:"versions"`
		} `json:"result"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) != nil {
		return nil
	}
	return out.Result.Versions
}

// subscribe binds skills::on-change and prompts::on-change on n's caller.
func (n *node) subscribe(t testing.TB) <-chan string {
	t.Helper()
	events := make(chan string, 256)
	for _, kind := range []string{"skill", "prompt"} {
		fn, typ, key := "clustertest::"+n.name+"-skills", "skills::on-change", "id"
		if kind == "prompt" {
			fn, typ, key = "clustertest::"+n.name+"-prompts", "prompts::on-change", "name"
		}
		if _, err := n.caller.RegisterFunction(fn, func(_ context.Context, data json.RawMessage) (any, error) {
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			events <- fmt.Sprintf("%s %v %v", kind, m["op"], m[key])
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := n.caller.RegisterTrigger(fn, typ, fn, nil); err != nil {
			t.Fatal(err)
		}
	}
	return events
}

// waitEvent waits for want among events (others are skipped: a
// subscription made while the registry settles may see earlier ones).
func waitEvent(t testing.TB, events <-chan string, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-events:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event %q", want)
		}
	}
}

func TestTwoEnginesOnRedis(t *testing.T) {
	c := newCluster(t)
	a, b := c.nodes[0], c.nodes[1]
	evB := b.subscribe(t)

	// An MCP client of node b.
	resourcesChanged, promptsChanged := make(chan struct{}, 64), make(chan struct{}, 64)
	mc := sdk.NewClient(&sdk.Implementation{Name: "cluster-test", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { resourcesChanged <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { promptsChanged <- struct{}{} },
	})
	cs, err := mc.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + b.mcpAddr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The binding of the subscriber reaches b's registry through its engine.
	probe := 0
	testutil.Eventually(t, 20*time.Second, "b's on-change subscriber is bound", func() bool {
		probe++
		id := fmt.Sprintf("cluster/probe-%d", probe)
		b.mustCall(t, "skills::register", map[string]string{"id": id, "skill": "# probe\n"}, nil)
		select {
		case <-evB:
			return true
		case <-time.After(500 * time.Millisecond):
			return false
		}
	})

	t.Run("skill written through a is served and announced by b", func(t *testing.T) {
		body := "# one\n\nWritten through engine a.\n"
		drain(resourcesChanged)
		a.mustCall(t, "skills::register", map[string]string{"id": "cluster/one", "skill": body}, nil)
		waitEvent(t, evB, "skill register cluster/one")
		if got := b.fetch("iii://cluster/one"); got != body {
			t.Fatalf("b reads %q", got)
		}
		if got := b.fetchSkill("iii://cluster/one"); !strings.Contains(got, "Written through engine a.") {
			t.Fatalf("b's skill::fetch answers %q", got)
		}
		if !b.lists("skills::list", "skills", "id", "cluster/one") {
			t.Fatal("b's skills::list lacks cluster/one")
		}
		if idx := b.fetch("iii://skills"); !strings.Contains(idx, "iii://cluster/one") {
			t.Fatalf("b's index lacks cluster/one:\n%s", idx)
		}
		select {
		case <-resourcesChanged:
		case <-time.After(20 * time.Second):
			t.Fatal("b's MCP client heard no resources/list_changed")
		}
		res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "iii://cluster/one"})
		if err != nil || len(res.Contents) == 0 || res.Contents[0].Text != body {
			t.Fatalf("b's MCP read: %+v, %v", res, err)
		}
	})

	t.Run("prompt written through a", func(t *testing.T) {
		drain(promptsChanged)
		// Its handler is on b's engine: b's MCP offers only prompts it can
		// render.
		if _, err := b.caller.RegisterFunction("clustertest::prompt", func(context.Context, json.RawMessage) (any, error) {
			return "rendered on b", nil
		}); err != nil {
			t.Fatal(err)
		}
		a.mustCall(t, "prompts::register", map[string]any{"name": "cluster-prompt", "description": "d", "function_id": "clustertest::prompt"}, nil)
		waitEvent(t, evB, "prompt register cluster-prompt")
		if !b.lists("prompts::list", "prompts", "name", "cluster-prompt") {
			t.Fatal("b's prompts::list lacks cluster-prompt")
		}
		select {
		case <-promptsChanged:
		case <-time.After(20 * time.Second):
			t.Fatal("b's MCP client heard no prompts/list_changed")
		}
	})

	t.Run("prompt and section published through a are named, not served, by b without a bridge", func(t *testing.T) {
		checkNamedNotServed(t, a, b, cs)
	})

	t.Run("unregister through b", func(t *testing.T) {
		evA := a.subscribe(t)
		a.mustCall(t, "skills::register", map[string]string{"id": "cluster/gone", "skill": "# gone\n"}, nil)
		testutil.Eventually(t, 20*time.Second, "b serves cluster/gone", func() bool { return b.fetch("iii://cluster/gone") != "" })
		b.mustCall(t, "skills::unregister", map[string]string{"id": "cluster/gone"}, nil)
		waitEvent(t, evA, "skill unregister cluster/gone")
		if got := a.fetch("iii://cluster/gone"); got != "" {
			t.Fatalf("a still serves cluster/gone: %q", got)
		}
		b.mustCall(t, "prompts::unregister", map[string]string{"name": "cluster-prompt"}, nil)
		waitEvent(t, evA, "prompt unregister cluster-prompt")
	})

	t.Run("bundle published through a is served by b", func(t *testing.T) {
		a.mustCall(t, "skills::publish-bundle", bundle("cluster.tools.hello", "0.1.0"), nil)
		testutil.Eventually(t, 20*time.Second, "b's /rpc describes cluster.tools.hello 0.1.0", func() bool {
			return slices.Contains(b.bundleVersions(t, "cluster.tools.hello"), "0.1.0")
		})
		waitEvent(t, evB, "skill register cluster/tools/hello")
	})

	t.Run("a registry killed and restarted catches up", func(t *testing.T) {
		b.registry.stop(syscall.SIGKILL)
		a.mustCall(t, "skills::register", map[string]string{"id": "cluster/while-down", "skill": "# while b was down\n"}, nil)
		a.mustCall(t, "skills::publish-bundle", bundle("cluster.tools.hello", "0.2.0"), nil)
		c.startRegistry(b)
		testutil.Eventually(t, 20*time.Second, "b serves what was written while it was down", func() bool {
			return b.fetch("iii://cluster/while-down") == "# while b was down\n"
		})
		testutil.Eventually(t, 20*time.Second, "b serves the bundle version published while it was down", func() bool {
			return slices.Contains(b.bundleVersions(t, "cluster.tools.hello"), "0.2.0")
		})
	})

	t.Run("redis restarted", func(t *testing.T) {
		c.redis.stop(syscall.SIGTERM)
		c.startRedis()
		testutil.Eventually(t, 20*time.Second, "a write through a succeeds again", func() bool {
			return a.call("skills::register", map[string]string{"id": "cluster/after-redis", "skill": "# after\n"}, nil) == nil
		})
		testutil.Eventually(t, 20*time.Second, "b serves the write made after the restart", func() bool {
			return b.fetch("iii://cluster/after-redis") == "# after\n"
		})
		if got := b.fetch("iii://cluster/one"); got == "" {
			t.Fatal("b lost cluster/one across the Redis restart")
		}
	})

	t.Run("64 callers on each node lose no call", func(t *testing.T) {
		r := callLoad(t, c.nodes, 64*len(c.nodes), 3*time.Second, "skill::fetch", json.RawMessage(`{"uri":"iii://cluster/one"}`))
		lost, failed, total := r.lost, r.failed, r.calls
		if r.firstErr != "" {
			t.Logf("first failure: %s", r.firstErr)
		}
		t.Logf("64 callers on each of 2 engines for 3 s: %d calls, %d failed, %d never answered", total, failed, lost)
		if lost != 0 || failed != 0 {
			t.Fatalf("%d of %d calls never answered, %d failed", lost, total, failed)
		}
	})
}

// BenchmarkPropagation measures write on a → visible on b (b's registry
// has applied it and fired skills::on-change to b's subscriber): from the
// start of the register call (p50/p99) and from its answer (after-ack),
// beside the register call itself (write).
func BenchmarkPropagation(b *testing.B) {
	c := newCluster(b, strings.Fields(os.Getenv("CLUSTER_REGISTRY_ARGS"))...)
	a, bn := c.nodes[0], c.nodes[1]
	events := bn.subscribe(b)
	testutil.Eventually(b, 20*time.Second, "b's subscriber is bound", func() bool {
		a.mustCall(b, "skills::register", map[string]string{"id": "bench/warm", "skill": "# warm\n"}, nil)
		select {
		case <-events:
			return true
		case <-time.After(500 * time.Millisecond):
			return false
		}
	})
	var total, after, write []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("bench/p%d", i)
		t0 := time.Now()
		a.mustCall(b, "skills::register", map[string]string{"id": id, "skill": "# p\n"}, nil)
		t1 := time.Now()
		waitEvent(b, events, "skill register "+id)
		total, after, write = append(total, time.Since(t0)), append(after, time.Since(t1)), append(write, t1.Sub(t0))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[len(d)*p/100].Microseconds()) / 1000
	}
	b.ReportMetric(pct(total, 50), "p50-ms")
	b.ReportMetric(pct(total, 99), "p99-ms")
	b.ReportMetric(pct(after, 50), "after-ack-p50-ms")
	b.ReportMetric(pct(after, 99), "after-ack-p99-ms")
	b.ReportMetric(pct(write, 50), "write-p50-ms")
}

// drain empties ch of notifications from earlier writes.
func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
