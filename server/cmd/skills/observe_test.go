package main

// Observability of the skills binary end to end: real calls over iii, MCP,
// /rpc and the web page, then /metrics scraped with Prometheus' parser,
// skills::usage and `skills usage`, skills::changes, webhook deliveries
// verified by a receiver (and by the standardwebhooks package from PyPI
// when WEBHOOKS_PYTHON names a Python that has it), spans continuing the
// callers' traceparents at an OTLP receiver, and a restart.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// hookSecret is a Standard Webhooks secret: whsec_ and base64 of 32 bytes.
func hookSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// hookReceiver verifies every delivery the Standard Webhooks way, written
// here from the specification (HMAC-SHA256 over id.timestamp.body with the
// secret's key, "v1," and base64), and keeps the verified ones in order.
type hookReceiver struct {
	t      *testing.T
	key    []byte
	srv    *httptest.Server
	status int // answered to every delivery (0: 204)

	mu   sync.Mutex
	got  []hookDelivery
	bad  []string
	seen int
}

type hookDelivery struct {
	ID   string
	Type string
	Data map[string]any
}

func newHookReceiver(t *testing.T, secret string, status int) *hookReceiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	h := &hookReceiver{t: t, key: key, status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	mac := hmac.New(sha256.New, h.key)
	fmt.Fprintf(mac, "%s.%s.", id, ts)
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen++
	if r.Header.Get("webhook-signature") != want || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute || !strings.HasPrefix(id, "msg_") {
		h.bad = append(h.bad, fmt.Sprintf("%s %s %s", id, ts, r.Header.Get("webhook-signature")))
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var d struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &d); err != nil || d.Timestamp.IsZero() {
		h.bad = append(h.bad, "body "+string(body))
	}
	if h.status != 0 {
		w.WriteHeader(h.status)
		return
	}
	h.got = append(h.got, hookDelivery{ID: id, Type: d.Type, Data: d.Data})
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookReceiver) deliveries() ([]hookDelivery, []string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.got...), append([]string(nil), h.bad...), h.seen
}

// pyReceiver is the standardwebhooks package's receiver
// (server/internal/webhooks/testdata/python), when WEBHOOKS_PYTHON is set.
func pyReceiver(t *testing.T, secret string) string {
	py := os.Getenv("WEBHOOKS_PYTHON")
	if py == "" {
		t.Log("the standardwebhooks check is not run: WEBHOOKS_PYTHON is not set (make webhooks-py-deps)")
		return ""
	}
	cmd := exec.Command(py, filepath.Join("..", "..", "internal", "webhooks", "testdata", "python", "receiver.py"), secret)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the Python receiver did not start: %v", err)
	}
	return "http://127.0.0.1:" + strings.TrimSpace(line)
}

// otlpReceiver is an OTLP/HTTP receiver on the official protobuf
// definitions (POST /v1/traces); spans keeps what it got.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	o := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(raw, &req) != nil {
			http.Error(w, "not an OTLP export", http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				o.spans = append(o.spans, ss.GetSpans()...)
			}
		}
		o.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return o, srv.URL
}

// span is the span named name in trace, nil when none arrived.
func (o *otlpReceiver) span(name, trace string) *tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if s.GetName() == name && hex.EncodeToString(s.GetTraceId()) == trace {
			return s
		}
	}
	return nil
}

// headerTransport adds headers to every request (the MCP client's token
// and traceparent).
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// obsServer is a standalone skills process with its HTTP listener.
type obsServer struct {
	t                  *testing.T
	data, config       string
	engineURL, httpURL string
	cmd                *exec.Cmd
	logs               *testutil.Buffer
}

func (s *obsServer) start(args ...string) {
	s.t.Helper()
	engine, httpAddr := testutil.FreeAddr(s.t), testutil.FreeAddr(s.t)
	s.engineURL, s.httpURL = "ws://"+engine, "http://"+httpAddr
	s.cmd, s.logs = startSkills(s.t, append([]string{"--standalone", "--url", s.engineURL, "--data", s.data, "--config", s.config,
		"--mcp-addr", httpAddr}, args...)...)
	waitListening(s.t, httpAddr, s.logs)
}

func (s *obsServer) stop() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("the server did not stop cleanly: %v\n%s", err, s.logs.String())
	}
}

const obsToken = "observability-test-token-0123"

// get is an authorized GET of the HTTP listener.
func (s *obsServer) get(path string, header http.Header) (*http.Response, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.httpURL+path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+obsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func call(t *testing.T, c *iii.Client, fn string, payload any, out any) {
	t.Helper()
	raw, err := triggerTB(t, c, fn, payload)
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s answered %s: %v", fn, raw, err)
		}
	}
}

type usageAnswer struct {
	Skills []struct {
		ID        string            `json:"id"`
		Version   string            `json:"version"`
		Reads     uint64            `json:"reads"`
		BySurface map[string]uint64 `json:"by_surface"`
		ByClient  map[string]uint64 `json:"by_client"`
	} `json:"skills"`
}

// sums adds up the versions of one skill.
func (u usageAnswer) sums() (reads uint64, surfaces, clients map[string]uint64) {
	surfaces, clients = map[string]uint64{}, map[string]uint64{}
	for _, s := range u.Skills {
		reads += s.Reads
		for k, v := range s.BySurface {
			surfaces[k] += v
		}
		for k, v := range s.ByClient {
			clients[k] += v
		}
	}
	return
}

type changesAnswer struct {
	Changes []struct {
		Cursor  int64  `json:"cursor"`
		Type    string `json:"type"`
		ID      string `json:"id"`
		Version int    `json:"version"`
		Label   string `json:"label"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"changes"`
	Next int64 `json:"next"`
}

func (c changesAnswer) String() string {
	var parts []string
	for _, ch := range c.Changes {
		parts = append(parts, fmt.Sprintf("%d %s %s v%d%s%s%s", ch.Cursor, ch.Type, ch.ID, ch.Version, ch.Label, ch.Reason, ch.Message))
	}
	return strings.Join(parts, "; ")
}

// Every surface's calls are counted, every read by surface and client,
// every change is in the feed and delivered signed, spans join the
// callers' traces; counts and the feed survive a restart.
func TestObservabilityEndToEnd(t *testing.T) {
	secret, deadSecret := hookSecret(t), hookSecret(t)
	hooks := newHookReceiver(t, secret, 0)
	failing := newHookReceiver(t, deadSecret, http.StatusInternalServerError)
	spans, otlpURL := newOTLPReceiver(t)
	pyURL := pyReceiver(t, secret)
	config := fmt.Sprintf(`
tracing: {endpoint: %q}
usage: {flush_interval: 1s}
webhook_retry: {attempts: 1, initial: 1s}
webhooks:
  - {url: %q, secret: %s}
  - {url: %q, secret: %s, events: [register]}
`, otlpURL, hooks.srv.URL+"/hooks", secret, failing.srv.URL+"/down", deadSecret)
	if pyURL != "" {
		config += fmt.Sprintf("  - {url: %q, secret: %s}\n", pyURL+"/py", secret)
	}
	s := &obsServer{t: t, data: t.TempDir(), config: filepath.Join(t.TempDir(), "config.yaml")}
	if err := os.WriteFile(s.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start("--mcp-token", obsToken)

	// A publisher (a named worker) changes and reads skills over iii,
	// with a traceparent as the official SDKs send one.
	pub := iii.New(s.engineURL, iii.WithName("e2e-publisher"), iii.WithLogger(quietLogger()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := pub.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	call(t, pub, rules.FnSkillsRegister, map[string]string{"id": "team/deploy", "skill": "# Deploy\n\nShip it.\n"}, nil)
	call(t, pub, rules.FnSkillsRegister, map[string]string{"id": "team/deploy", "skill": "# Deploy\n\nShip it, v2.\n"}, nil)
	call(t, pub, rules.FnSkillsLabel, map[string]any{"id": "team/deploy", "label": "prod", "version": 1}, nil)
	call(t, pub, rules.FnSkillsRollback, map[string]any{"id": "team/deploy", "version": 1}, nil)
	call(t, pub, rules.FnSkillsRegister, map[string]string{"id": "team/gone", "skill": "# Gone\n"}, nil)
	call(t, pub, rules.FnSkillsUnregister, map[string]string{"id": "team/gone"}, nil)
	call(t, pub, rules.FnSkillsYank, map[string]any{"id": "team/deploy", "version": 2, "reason": "ships to the wrong region"}, nil)
	call(t, pub, rules.FnSkillsUnyank, map[string]any{"id": "team/deploy", "version": 2}, nil)
	call(t, pub, rules.FnSkillsDeprecate, map[string]any{"id": "team/deploy", "message": "use team/ship"}, nil)
	// A section function of the publisher, which records the trace
	// context the registry calls it with.
	sectionTrace := make(chan string, 4)
	if _, err := pub.RegisterFunction("e2e::section", func(ctx context.Context, _ json.RawMessage) (any, error) {
		tp, _ := iii.TraceContextFromContext(ctx)
		sectionTrace <- tp
		return "a live section", nil
	}); err != nil {
		t.Fatal(err)
	}
	const sectionCaller = "00-5bf92f3577b34da6a3ce929d0e0e4737-10f067aa0ba902b8-01"
	if _, err := pub.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillsResourcesRead,
		Data: json.RawMessage(`{"uri":"iii://fn/e2e/section"}`), Traceparent: sectionCaller}); err != nil {
		t.Fatal(err)
	}
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for range 3 {
		if _, err := pub.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Data: json.RawMessage(`{"uri":"iii://team/deploy"}`),
			Traceparent: "00-" + callerTrace + "-" + callerSpan + "-01"}); err != nil {
			t.Fatal(err)
		}
	}

	// An MCP client reads the skill, sending a traceparent header.
	const mcpTrace = "0af7651916cd43dd8448eb211c80319c"
	httpClient := &http.Client{Transport: headerTransport{http.Header{"Authorization": {"Bearer " + obsToken},
		"Traceparent": {"00-" + mcpTrace + "-b7ad6b7169203331-01"}}}}
	mc := sdk.NewClient(&sdk.Implementation{Name: "e2e-agent", Version: "1"}, nil)
	cs, err := mc.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.httpURL + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "iii://team/deploy"}); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()

	// The Skills Protocol reads its SKILL.md; the web page shows it.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "read_skill_file",
		"params": map[string]string{"name": "team.deploy", "path": "SKILL.md"}})
	req, _ := http.NewRequest(http.MethodPost, s.httpURL+"/rpc", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+obsToken)
	req.Header.Set("User-Agent", "e2e-rpc/1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rpcAnswer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(rpcAnswer), `"result"`) {
		t.Fatalf("/rpc read_skill_file: %s", rpcAnswer)
	}
	if r, page := s.get("/skill/team/deploy", nil); r.StatusCode != http.StatusOK || !strings.Contains(page, `src="/usage/chart/team/deploy"`) {
		t.Fatalf("the skill page (%d) has no usage chart", r.StatusCode)
	}

	t.Run("metrics", func(t *testing.T) {
		if r, _ := http.Get(s.httpURL + "/metrics"); r == nil || r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("/metrics without the token: %v; want 401", r)
		}
		fams := testutil.Scrape(t, s.httpURL+"/metrics", obsToken)
		for _, c := range []struct {
			labels map[string]string
			min    float64
			exact  bool
		}{
			{map[string]string{"function": rules.FnSkillFetch, "surface": "iii", "code": "ok"}, 3, true},
			{map[string]string{"function": rules.FnSkillsRegister, "surface": "iii", "code": "ok"}, 3, true},
			{map[string]string{"function": rules.FnSkillsLabel, "surface": "iii", "code": "ok"}, 1, true},
			{map[string]string{"function": "resources/read", "surface": "mcp", "code": "ok"}, 1, true},
			{map[string]string{"function": "read_skill_file", "surface": "rpc", "code": "ok"}, 1, true},
			{map[string]string{"function": "GET /skill/{id...}", "surface": "web", "code": "ok"}, 1, true},
		} {
			n, _ := testutil.Sample(fams, "skills_calls_total", c.labels)
			if (c.exact && n != c.min) || n < c.min {
				t.Errorf("skills_calls_total%v = %v; want %v", c.labels, n, c.min)
			}
		}
		for _, c := range []struct {
			name   string
			labels map[string]string
			min    float64
		}{
			{"skills_call_duration_seconds", map[string]string{"function": rules.FnSkillFetch, "surface": "iii"}, 3},
			{"skills_catalog_skills", map[string]string{"origin": "published"}, 1},
			{"skills_notifications_sent_total", map[string]string{"surface": "iii"}, 6},
			{"skills_connections", map[string]string{"kind": "engine_worker"}, 1},
			{"skills_connections", map[string]string{"kind": "engine_in_process"}, 1},
			{"skills_store_commit_seconds", nil, 6},
			{"go_goroutines", nil, 1},
			{"process_resident_memory_bytes", nil, 1},
		} {
			if n, ok := testutil.Sample(fams, c.name, c.labels); !ok || n < c.min {
				t.Errorf("%s%v = %v (present %v); want at least %v", c.name, c.labels, n, ok, c.min)
			}
		}
	})

	t.Run("usage", func(t *testing.T) {
		var u usageAnswer
		testutil.Eventually(t, 30*time.Second, "every read to be counted", func() bool {
			call(t, pub, rules.FnSkillsUsage, map[string]string{"id": "team/deploy"}, &u)
			reads, _, clients := u.sums()
			return reads == 6 && clients["e2e-publisher"] == 3
		})
		_, surfaces, clients := u.sums()
		if fmt.Sprint(surfaces) != "map[iii:3 mcp:1 rpc:1 web:1]" || fmt.Sprint(clients) != "map[e2e-agent:1 e2e-publisher:3 e2e-rpc:1 web:1]" {
			t.Fatalf("by surface %v, by client %v", surfaces, clients)
		}
		out, err := skillsCommand("usage", "--url", s.engineURL, "team/deploy").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "e2e-agent=1") || !strings.Contains(string(out), "DATE") {
			t.Fatalf("skills usage team/deploy: %v\n%s", err, out)
		}
		if r, page := s.get("/usage", nil); r.StatusCode != http.StatusOK || !strings.Contains(page, "team/deploy") {
			t.Fatalf("/usage (%d) does not list team/deploy:\n%s", r.StatusCode, page)
		}
		if r, svg := s.get("/usage/chart/team/deploy", nil); r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/svg+xml" ||
			!strings.Contains(svg, "e2e-publisher 3") {
			t.Fatalf("chart (%d, %s):\n%s", r.StatusCode, r.Header.Get("Content-Type"), svg)
		}
	})

	const changes = "1 register team/deploy v1; 2 version team/deploy v2; 3 label team/deploy v1prod; 4 rollback team/deploy v3; " +
		"5 register team/gone v1; 6 unregister team/gone v0; 7 yank team/deploy v2ships to the wrong region; 8 unyank team/deploy v2; " +
		"9 deprecate team/deploy v0use team/ship"
	t.Run("changes and webhooks", func(t *testing.T) {
		var feed changesAnswer
		call(t, pub, rules.FnSkillsChanges, map[string]any{}, &feed)
		if feed.String() != changes || feed.Next != 9 {
			t.Fatalf("skills::changes\n got %s (next %d)\nwant %s", feed, feed.Next, changes)
		}
		var got []hookDelivery
		testutil.Eventually(t, 30*time.Second, "the webhook receiver to get every change", func() bool {
			got, _, _ = hooks.deliveries()
			return len(got) == 9
		})
		_, bad, _ := hooks.deliveries()
		var parts []string
		for _, d := range got {
			v, _ := d.Data["version"].(float64)
			label, _ := d.Data["label"].(string)
			reason, _ := d.Data["reason"].(string)
			message, _ := d.Data["message"].(string)
			cursor, _ := d.Data["cursor"].(float64)
			parts = append(parts, fmt.Sprintf("%d %s %s v%d%s%s%s", int(cursor), d.Type, d.Data["id"], int(v), label, reason, message))
		}
		if strings.Join(parts, "; ") != changes || len(bad) > 0 {
			t.Fatalf("webhooks delivered\n %s\nwant %s\nrefused: %v", strings.Join(parts, "; "), changes, bad)
		}
		if pyURL != "" {
			testutil.Eventually(t, 30*time.Second, "the standardwebhooks receiver to verify every change", func() bool {
				_, b := getBody(t, pyURL)
				var seen struct {
					Received []any
					Rejected []any
				}
				return json.Unmarshal(b, &seen) == nil && len(seen.Received) == 9 && len(seen.Rejected) == 0
			})
		}
	})

	t.Run("dead letters", func(t *testing.T) {
		// The failing receiver takes register events: two, one attempt
		// each, then dead letters the web page lists with a resend.
		var page string
		testutil.Eventually(t, 30*time.Second, "two dead letters on the web page", func() bool {
			_, page = s.get("/webhooks", nil)
			return strings.Count(page, `action="/actions/resend-webhook"`) == 2
		})
		r, _ := s.get("/webhooks", nil)
		var csrf string
		for _, c := range r.Cookies() {
			if c.Name == "skills_web_csrf" {
				csrf = c.Value
			}
		}
		m := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(page)
		if csrf == "" || m == nil {
			t.Fatalf("no CSRF cookie (%q) or dead letter key on the page", csrf)
		}
		_, _, before := failing.deliveries()
		post := func(origin string, withToken bool) int {
			form := url.Values{"csrf": {csrf}, "key": {m[1]}}
			req, _ := http.NewRequest(http.MethodPost, s.httpURL+"/actions/resend-webhook", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", origin)
			req.AddCookie(&http.Cookie{Name: "skills_web_csrf", Value: csrf})
			if withToken {
				req.Header.Set("Authorization", "Bearer "+obsToken)
			}
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post("https://evil.example", true); code != http.StatusForbidden {
			t.Fatalf("a resend from another origin: %d; want 403", code)
		}
		if code := post(s.httpURL, false); code != http.StatusUnauthorized {
			t.Fatalf("a resend without the token: %d; want 401", code)
		}
		if code := post(s.httpURL, true); code != http.StatusSeeOther {
			t.Fatalf("the resend: %d; want 303", code)
		}
		testutil.Eventually(t, 30*time.Second, "the resent delivery to be tried again", func() bool {
			_, _, n := failing.deliveries()
			return n > before
		})
	})

	t.Run("traces", func(t *testing.T) {
		var fetch, read *tracepb.Span
		testutil.Eventually(t, 30*time.Second, "the spans to reach the OTLP receiver", func() bool {
			fetch, read = spans.span(rules.FnSkillFetch, callerTrace), spans.span("resources/read", mcpTrace)
			return fetch != nil && read != nil
		})
		if hex.EncodeToString(fetch.GetParentSpanId()) != callerSpan || fetch.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			t.Fatalf("skill::fetch span: parent %x kind %v; want the caller's span %s, server", fetch.GetParentSpanId(), fetch.GetKind(), callerSpan)
		}
		if hex.EncodeToString(read.GetParentSpanId()) != "b7ad6b7169203331" {
			t.Fatalf("resources/read span: parent %x; want the MCP request's traceparent", read.GetParentSpanId())
		}
		// The section function was called with the registry's own span
		// as parent, in the caller's trace.
		var section *tracepb.Span
		testutil.Eventually(t, 30*time.Second, "the section read's span", func() bool {
			section = spans.span(rules.FnSkillsResourcesRead, "5bf92f3577b34da6a3ce929d0e0e4737")
			return section != nil
		})
		if got, want := <-sectionTrace, "00-5bf92f3577b34da6a3ce929d0e0e4737-"+hex.EncodeToString(section.GetSpanId())+"-01"; got != want {
			t.Fatalf("the section function was called with traceparent %q; want the registry span's %q", got, want)
		}
	})

	// A restart keeps the counts (flushed when it stopped) and the feed.
	s.stop()
	s.start("--mcp-token", obsToken)
	pub2 := iii.New(s.engineURL, iii.WithName("e2e-publisher"), iii.WithLogger(quietLogger()))
	if err := pub2.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer pub2.Close()
	var u usageAnswer
	call(t, pub2, rules.FnSkillsUsage, map[string]string{"id": "team/deploy"}, &u)
	if reads, _, _ := u.sums(); reads != 6 {
		t.Fatalf("after a restart skills::usage counts %d reads; want 6", reads)
	}
	call(t, pub2, rules.FnSkillsRegister, map[string]string{"id": "team/new", "skill": "# New\n"}, nil)
	var feed changesAnswer
	call(t, pub2, rules.FnSkillsChanges, map[string]any{"after": 9}, &feed)
	if feed.String() != "10 register team/new v1" {
		t.Fatalf("after a restart skills::changes after 9: %s; want 10 register team/new", feed)
	}
}

// /metrics moves to a listener of its own with metrics_addr (the HTTP
// listener's Host and token rules there too), and an empty one turns it
// off.
func TestMetricsListener(t *testing.T) {
	addr := testutil.FreeAddr(t)
	s := &obsServer{t: t, data: t.TempDir(), config: filepath.Join(t.TempDir(), "none.yaml")}
	s.start("--mcp-token", obsToken, "--metrics-addr", addr)
	waitListening(t, addr, s.logs)
	if r, _ := s.get("/metrics", nil); r.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics on the HTTP listener: %d; want 404 (it moved)", r.StatusCode)
	}
	fams := testutil.Scrape(t, "http://"+addr+"/metrics", obsToken)
	if _, ok := testutil.Sample(fams, "skills_catalog_skills", map[string]string{"origin": "published"}); !ok {
		t.Fatal("the metrics listener does not serve the registry's series")
	}
	for _, c := range []struct {
		host, token string
		want        int
	}{{"", "", http.StatusUnauthorized}, {"evil.example", obsToken, http.StatusForbidden}} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if c.host != "" {
			req.Host = c.host
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %q token %v: %d; want %d", c.host, c.token != "", resp.StatusCode, c.want)
		}
	}
	s.stop()
	s.start("--metrics-addr=")
	if r, _ := http.Get(s.httpURL + "/metrics"); r == nil || r.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics with metrics_addr empty: %v; want 404", r)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
