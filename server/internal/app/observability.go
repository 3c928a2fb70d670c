package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/iii-skills/skills/server/internal/tracing"
	"github.com/iii-skills/skills/server/internal/webhooks"
)

// ObservabilityConfig is what the server tells operators and skill authors
// about itself (docs/observability.md): Prometheus metrics, reads per skill
// and version, OpenTelemetry traces, webhooks of every change.
//
//	metrics_addr: 127.0.0.1:9464      # absent: GET /metrics on the HTTP listener; "": off
//	usage: {flush_interval: 10s, max_pending: 20000, max_clients: 16, days: 30}
//	tracing: {endpoint: http://collector:4318, protocol: http/protobuf, headers: {…}, sample_ratio: 1}
//	webhooks:
//	  - {url: https://hooks.example.com/skills, secret: whsec_…, events: [version, label]}
//	webhook_retry: {attempts: 12, initial: 5s, max: 2h}
//	node_name: registry-a              # this instance in shared state (default: kept in --data)
type ObservabilityConfig struct {
	MetricsAddr  MetricsAddr         `yaml:"metrics_addr"`
	Usage        UsageConfig         `yaml:"usage"`
	Tracing      tracing.Config      `yaml:"tracing"`
	Webhooks     []webhooks.Endpoint `yaml:"webhooks"`
	WebhookRetry WebhookRetryConfig  `yaml:"webhook_retry"`
	// NodeName names this registry instance in the rows it alone writes
	// (usage counts, webhook queues, change feed entries); instances
	// sharing state need different ones. Empty: a name kept in the data
	// folder (<data>/node-name), made once from the host name.
	NodeName string `yaml:"node_name"`
}

// MetricsAddr is metrics_addr (--metrics-addr): absent serves GET /metrics
// on the HTTP listener, an address serves it on a listener of its own, an
// empty value turns it off.
type MetricsAddr struct {
	Addr  string
	Given bool // metrics_addr was set (to Addr, maybe "")
}

// UnmarshalYAML takes a string (an address, or "" for off); null is absent.
func (m *MetricsAddr) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		*m = MetricsAddr{}
		return nil
	}
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return fmt.Errorf("metrics_addr (line %d): expected host:port, or \"\" to turn /metrics off", n.Line)
	}
	*m = MetricsAddr{Addr: s, Given: true}
	return nil
}

// String and Set make it a flag.Value.
func (m *MetricsAddr) String() string {
	if m == nil || !m.Given {
		return ""
	}
	return m.Addr
}

func (m *MetricsAddr) Set(v string) error {
	*m = MetricsAddr{Addr: v, Given: true}
	return nil
}

// OnHTTP reports whether /metrics is served on the HTTP listener.
func (m MetricsAddr) OnHTTP() bool { return !m.Given }

// On reports whether /metrics is served anywhere (and so metrics kept).
func (m MetricsAddr) On() bool { return !m.Given || m.Addr != "" }

// UsageConfig is usage: the counting of reads per skill and version.
type UsageConfig struct {
	// Disabled turns counting off (skills::usage then says so).
	Disabled bool `yaml:"disabled"`
	// FlushInterval is how often counts are written to state (default
	// 10s); a crash loses at most that much.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// MaxPending bounds the (skill, version, day) entries counted between
	// flushes (default 20 000); MaxClients the clients named per entry and
	// row (default 16); Days the day buckets a row keeps (default 30).
	MaxPending int `yaml:"max_pending"`
	MaxClients int `yaml:"max_clients"`
	Days       int `yaml:"days"`
}

// WebhookRetryConfig is webhook_retry: how deliveries are tried again.
type WebhookRetryConfig struct {
	// Attempts before a delivery becomes a dead letter (default 12).
	Attempts int `yaml:"attempts"`
	// Initial is the first wait (default 5s), ×3 each time, at most Max
	// (default 2h).
	Initial time.Duration `yaml:"initial"`
	Max     time.Duration `yaml:"max"`
}

// nodeNameRe is what a node name may hold: it becomes part of state keys.
var nodeNameRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validate checks every key, naming the first bad one with what was
// expected.
func (o ObservabilityConfig) validate(in string) error {
	if o.MetricsAddr.Given && o.MetricsAddr.Addr != "" {
		if _, _, err := net.SplitHostPort(o.MetricsAddr.Addr); err != nil {
			return fmt.Errorf("metrics_addr %q%s: expected host:port (127.0.0.1:9464), or \"\" to turn /metrics off", o.MetricsAddr.Addr, in)
		}
	}
	u := o.Usage
	for _, f := range []struct {
		key string
		v   int64
	}{{"flush_interval", int64(u.FlushInterval)}, {"max_pending", int64(u.MaxPending)}, {"max_clients", int64(u.MaxClients)}, {"days", int64(u.Days)}} {
		if f.v < 0 {
			return fmt.Errorf("usage.%s%s: expected a positive value (0 or absent: the default)", f.key, in)
		}
	}
	if u.FlushInterval > 0 && u.FlushInterval < time.Second {
		return fmt.Errorf("usage.flush_interval %s%s: expected at least 1s (each flush writes one row per skill read)", u.FlushInterval, in)
	}
	if u.Days > 366 {
		return fmt.Errorf("usage.days %d%s: expected at most 366", u.Days, in)
	}
	if err := o.Tracing.Validate(); err != nil {
		return fmt.Errorf("%w%s", err, in)
	}
	seen := map[string]bool{}
	for i, ep := range o.Webhooks {
		if err := ep.Validate(); err != nil {
			return fmt.Errorf("webhooks[%d]%s: %w", i, in, err)
		}
		if seen[ep.URL] {
			return fmt.Errorf("webhooks[%d]%s: %s is listed twice; list each URL once, with every event it takes", i, in, ep.URL)
		}
		seen[ep.URL] = true
	}
	r := o.WebhookRetry
	if r.Attempts < 0 || r.Initial < 0 || r.Max < 0 {
		return fmt.Errorf("webhook_retry%s: attempts, initial and max must be positive (0 or absent: the defaults 12, 5s, 2h)", in)
	}
	if r.Initial > 0 && r.Max > 0 && r.Max < r.Initial {
		return fmt.Errorf("webhook_retry%s: max %s is below initial %s", in, r.Max, r.Initial)
	}
	if o.NodeName != "" && !nodeNameRe.MatchString(o.NodeName) {
		return fmt.Errorf("node_name %q%s: expected 1 to 64 letters, digits, '.', '_' or '-'", o.NodeName, in)
	}
	return nil
}

// nodeNameFile keeps the node name in the data folder.
const nodeNameFile = "node-name"

// nodeName is this instance's name: configured, else kept in dataDir
// (made once: the host name and a random suffix, so two registries on one
// host sharing state differ).
func (o ObservabilityConfig) nodeName(dataDir string) (string, error) {
	if o.NodeName != "" {
		return o.NodeName, nil
	}
	path := filepath.Join(dataDir, nodeNameFile)
	if b, err := os.ReadFile(path); err == nil {
		if name := strings.TrimSpace(string(b)); nodeNameRe.MatchString(name) {
			return name, nil
		}
		return "", fmt.Errorf("%s does not hold a node name (1 to 64 letters, digits, '.', '_' or '-'); remove it to make a new one, or set node_name", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read the node name: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return r
		}
		return '-'
	}, host)
	if len(host) > 48 {
		host = host[:48]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Trim(host+"-"+hex.EncodeToString(b[:]), "-.")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("keep the node name: %w", err)
	}
	if err := os.WriteFile(path, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the node name: %w", err)
	}
	return name, nil
}

// The state scopes of observability, beside the registry's skills scope.
func usageScope(skills string) string    { return skills + ".usage" }
func webhooksScope(skills string) string { return skills + ".webhooks" }
func changesScope(skills string) string  { return skills + ".changes" }
