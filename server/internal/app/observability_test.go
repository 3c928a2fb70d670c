package app

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/webhooks"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// The observability keys load into their nested structs, durations as Go
// duration strings; metrics_addr tells absent, an address and "" apart.
func TestObservabilityKeys(t *testing.T) {
	cfg, err := Load(writeConfig(t, `
metrics_addr: 127.0.0.1:9464
usage: {flush_interval: 30s, max_pending: 1000, max_clients: 8, days: 14}
tracing: {endpoint: "http://collector:4318", protocol: grpc, headers: {x-api-key: k}, sample_ratio: 0.5}
webhooks:
  - url: https://hooks.example.com/skills
    secret: `+testSecret+`
    events: [version, label]
webhook_retry: {attempts: 5, initial: 1s, max: 1m}
node_name: registry-a
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	o := cfg.Observability
	if !o.MetricsAddr.Given || o.MetricsAddr.Addr != "127.0.0.1:9464" || o.MetricsAddr.OnHTTP() || !o.MetricsAddr.On() ||
		o.Usage.FlushInterval != 30*time.Second || o.Usage.MaxPending != 1000 || o.Usage.MaxClients != 8 || o.Usage.Days != 14 ||
		o.Tracing.Endpoint != "http://collector:4318" || o.Tracing.Headers["x-api-key"] != "k" || o.Tracing.SampleRatio != 0.5 ||
		len(o.Webhooks) != 1 || !slices.Equal(o.Webhooks[0].Events, []webhooks.Event{"version", "label"}) ||
		o.WebhookRetry.Attempts != 5 || o.WebhookRetry.Initial != time.Second || o.WebhookRetry.Max != time.Minute || o.NodeName != "registry-a" {
		t.Fatalf("loaded %+v", o)
	}
	def := DefaultConfig().Observability
	if !def.MetricsAddr.OnHTTP() || !def.MetricsAddr.On() || def.Usage.Disabled || def.Tracing.Endpoint != "" {
		t.Fatalf("defaults %+v: want /metrics on the HTTP listener, usage on, tracing off", def)
	}
	off, err := Load(writeConfig(t, `metrics_addr: ""`))
	if err != nil || off.Observability.MetricsAddr.On() {
		t.Fatalf(`metrics_addr "": %+v %v; want off`, off.Observability.MetricsAddr, err)
	}
	// The flag: given empty turns it off, given an address moves it.
	for arg, on := range map[string]bool{"--metrics-addr=": false, "--metrics-addr=127.0.0.1:9999": true} {
		c := DefaultConfig()
		fs := flag.NewFlagSet("skills", flag.ContinueOnError)
		c.AddFlags(fs)
		if err := fs.Parse([]string{arg}); err != nil {
			t.Fatal(err)
		}
		if c.Observability.MetricsAddr.OnHTTP() || c.Observability.MetricsAddr.On() != on {
			t.Fatalf("%s: %+v", arg, c.Observability.MetricsAddr)
		}
	}
}

// Every bad observability setting stops the start with what was wrong
// and what was expected.
func TestObservabilityKeysAreValidated(t *testing.T) {
	for yaml, want := range map[string]string{
		`metrics_addr: 9464`:                              `metrics_addr "9464"`,
		`metrics_addr: [a]`:                               `metrics_addr (line 1): expected host:port`,
		`usage: {flush_interval: 10}`:                     `usage.flush_interval 10: a duration needs its unit: write "10s"`,
		`usage: {flush_interval: 100ms}`:                  `expected at least 1s`,
		`usage: {max_clients: -1}`:                        `usage.max_clients`,
		`usage: {days: 1000}`:                             `usage.days 1000`,
		`usage: {dayz: 3}`:                                `unknown key usage.dayz; did you mean usage.days?`,
		`tracing: {endpoint: "collector:4318"}`:           `tracing: endpoint "collector:4318" is not an http or https URL`,
		`tracing: {protocol: grpc}`:                       `given without an endpoint`,
		`webhooks: [{url: "ftp://x", secret: s}]`:         `webhooks[0]`,
		`webhooks: [{url: "https://h/x", secret: nope}]`:  `secret must start with "whsec_"`,
		`webhooks: [{url: "https://u:p@h/x", secret: s}]`: `credentials in the URL are refused`,
		`webhooks: [{url: "https://h/x", secret: ` + testSecret + `, events: [publish]}]`:                                `unknown event "publish"`,
		`webhooks: [{url: "https://h/x", secret: ` + testSecret + `}, {url: "https://h/x", secret: ` + testSecret + `}]`: `listed twice`,
		`webhooks: [{url: "https://h/x", sekret: x}]`:                                                                    `unknown key webhooks[0].sekret; did you mean webhooks[0].secret?`,
		`webhook_retry: {initial: 1m, max: 1s}`:                                                                          `max 1s is below initial 1m0s`,
		`node_name: "a/b"`:                                                                                               `node_name "a/b"`,
	} {
		cfg, err := Load(writeConfig(t, yaml))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", yaml, err, want)
		}
	}
}

// The node name is kept in the data folder, so a restart writes the same
// rows and delivers the same webhook queue; a configured one wins.
func TestNodeNameIsKept(t *testing.T) {
	dir := t.TempDir()
	o := ObservabilityConfig{}
	first, err := o.nodeName(dir)
	if err != nil || !nodeNameRe.MatchString(first) {
		t.Fatalf("%q %v", first, err)
	}
	again, err := o.nodeName(dir)
	if err != nil || again != first {
		t.Fatalf("after a restart %q (%v); want %q", again, err, first)
	}
	if other, _ := o.nodeName(t.TempDir()); other == first {
		t.Fatalf("two data folders got the same node name %q", first)
	}
	if n, _ := (ObservabilityConfig{NodeName: "b"}).nodeName(dir); n != "b" {
		t.Fatalf("configured name: %q", n)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeNameFile), []byte("a b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := o.nodeName(dir); err == nil || !strings.Contains(err.Error(), "does not hold a node name") {
		t.Fatalf("a damaged file: %v", err)
	}
}

// Every kind of change the registry tells is a webhook event, by the same
// name (a new kind in core with no event would never be delivered).
func TestEveryChangeIsAWebhookEvent(t *testing.T) {
	for _, op := range []string{core.EventRegister, core.EventVersion, core.EventLabel, core.EventRollback, core.EventUnregister,
		core.EventYank, core.EventUnyank, core.EventDeprecate} {
		if !slices.Contains(webhooks.Events, webhooks.Event(op)) {
			t.Errorf("core event %q is not a webhook event", op)
		}
	}
}
