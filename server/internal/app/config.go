package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/directory"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/httpguard"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/sections"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// Config is everything the skills server can be told, in config.yaml or
// by a flag. The Go struct is nested per subsystem; in the file most keys
// sit at the top level, named like their flag (--engine-allow-host:
// engine_allow_host), because that is where the keys users already have
// live. The exceptions predate this package: scopes, versions, mcp and
// skills_protocol are sections.
//
// Durations have one rule: a setting of ours is a time.Duration, written
// as a Go duration string ("30s", "24h") in the file and on the command
// line (load.go, checkDuration); a key upstream's config.yaml defines
// keeps upstream's name and unit (state_timeout_ms, download_timeout_ms,
// registry_cache_ttl_ms: integers of milliseconds).
type Config struct {
	Engine         EngineConfig         `yaml:",inline"`
	Registry       RegistryConfig       `yaml:",inline"`
	Directory      DirectoryConfig      `yaml:",inline"`
	HTTP           HTTPConfig           `yaml:",inline"`
	SkillsProtocol SkillsProtocolConfig `yaml:"skills_protocol"`
	// Observability: metrics_addr, usage, tracing, webhooks,
	// webhook_retry, node_name (observability.go).
	Observability ObservabilityConfig `yaml:",inline"`
	// LogLevel is debug, info, warn or error (--log-level, env SKILLS_LOG).
	LogLevel string `yaml:"log_level"`
	// PprofAddr serves Go runtime profiles (loopback only; empty: off).
	PprofAddr string `yaml:"pprof_addr"`

	// Path is the file Load read (empty: none); errors name it.
	Path string `yaml:"-"`
	// Logger receives every log line of the server (nil: slog.Default).
	Logger *slog.Logger `yaml:"-"`
}

// EngineConfig is where the worker finds its iii engine, and with
// Standalone the embedded engine it runs itself.
type EngineConfig struct {
	// URL is the engine to dial; with Standalone, the address to listen on.
	URL        string `yaml:"url"`
	Standalone bool   `yaml:"standalone"`
	// Only runs the embedded engine without the registry worker.
	Only bool `yaml:"engine_only"`
	// DataDir holds the embedded engine's state and the Skills Protocol store.
	DataDir string `yaml:"data"`
	// Token is the shared worker token (env III_ENGINE_TOKEN).
	Token          string   `yaml:"engine_token"`
	AllowHost      HostList `yaml:"engine_allow_host"`
	AllowOrigin    HostList `yaml:"engine_allow_origin"`
	MaxConnections int      `yaml:"engine_max_connections"`
	// MaxConnectionsPerClient is one client's share of MaxConnections
	// (one scoped token, else one remote address); 0: an eighth of it.
	MaxConnectionsPerClient int `yaml:"engine_max_connections_per_client"`
	// Tokens are per-publisher tokens limited to namespaces.
	Tokens TokenList `yaml:"engine_tokens"`
}

// TokenList is engine_tokens: per-publisher tokens of the embedded engine,
// each limited to its namespaces.
//
//	engine_tokens:
//	  - name: acme                 # shown in refusals and logs
//	    token_env: ACME_III_TOKEN  # or token: "…" (at least 16 characters)
//	    namespaces: [acme]         # acme::* functions, acme/… skills, acme-… prompts
type TokenList []TokenConfig

// UnmarshalYAML says what engine_tokens must be when it is something else.
func (l *TokenList) UnmarshalYAML(n *yaml.Node) error {
	const want = "engine_tokens (line %d): expected a list of {name, token or token_env, namespaces}"
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		*l = nil
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf(want, n.Line)
	}
	var list []TokenConfig
	if err := n.Decode(&list); err != nil {
		return fmt.Errorf(want+": %w", n.Line, err)
	}
	*l = list
	return nil
}

// TokenConfig is one entry of engine_tokens.
type TokenConfig struct {
	Name       string   `yaml:"name"`
	Token      string   `yaml:"token"`
	TokenEnv   string   `yaml:"token_env"`
	Namespaces []string `yaml:"namespaces"`
}

// RegistryConfig is the registry: upstream's keys (core.Config: scopes,
// state_timeout_ms, versions) and the registry's own options.
type RegistryConfig struct {
	core.Config     `yaml:",inline"`
	StrictFetch     bool          `yaml:"strict_fetch"`
	SectionMaxDepth int           `yaml:"section_max_depth"`
	SectionMaxBytes int           `yaml:"section_max_bytes"`
	ClaimTimeout    time.Duration `yaml:"claim_timeout"`
	// ResultHold and ResultResend work around the real engine's lost-result
	// race (docs/upstream-engine-race.md); they apply against an external
	// engine only.
	ResultHold   time.Duration `yaml:"result_hold"`
	ResultResend time.Duration `yaml:"result_resend"`
	// AdminToken unlocks protected labels (env SKILLS_ADMIN_TOKEN).
	AdminToken string `yaml:"admin_token"`
}

// DirectoryConfig is the skills folders and the iii-directory v0.5 surface
// that serves them (upstream iii-directory's keys, at the top level of the
// file). Every key is optional, with upstream's defaults.
type DirectoryConfig struct {
	// SkillsFolder lists the skills folders in precedence order (a path or
	// a list; relative to the working directory). Empty: no folders, and
	// no directory::* functions.
	SkillsFolder FolderList `yaml:"skills_folder"`
	// RegistryURL is the base of registry downloads and of the public
	// registry proxy (directory::registry::workers::*).
	RegistryURL string `yaml:"registry_url"`
	// DownloadTimeoutMS bounds git clones, registry HTTP calls and the
	// iii://fn/… section triggers of directory::skills::fetch-skill.
	DownloadTimeoutMS int64 `yaml:"download_timeout_ms"`
	// RegistryCacheTTLMS keeps registry proxy answers; 0 disables the cache.
	RegistryCacheTTLMS int64 `yaml:"registry_cache_ttl_ms"`
	// DownloadHosts are the only hosts directory::skills::download may
	// dial (host: its default port, host:port: that port); empty, the
	// default, refuses every download.
	DownloadHosts []string `yaml:"download_hosts"`
}

// FolderList is skills_folder: one path or a list of paths. Unlike
// HostList a single value is not split at commas (a path may hold one).
type FolderList []string

// UnmarshalYAML accepts a string or a list of strings.
func (f *FolderList) UnmarshalYAML(n *yaml.Node) error {
	list, err := decodeStrings(n, func(s string) []string { return []string{s} })
	if err != nil {
		return listError(fmt.Sprintf("skills_folder (line %d): expected a path or a list of paths", n.Line), err)
	}
	*f = list
	return nil
}

// decodeStrings decodes a scalar (through one) or a list of strings;
// null is none. A node of another kind is errNotStrings.
func decodeStrings(n *yaml.Node, one func(string) []string) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		var s string
		if err := n.Decode(&s); err != nil {
			return nil, err
		}
		return one(s), nil
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return nil, err
		}
		return list, nil
	}
	return nil, errNotStrings
}

var errNotStrings = errors.New("neither a string nor a list of strings")

// listError is expected (what the key takes, where), with the decoder's
// reason unless the node simply had the wrong kind.
func listError(expected string, err error) error {
	if errors.Is(err, errNotStrings) {
		return errors.New(expected)
	}
	return fmt.Errorf("%s: %w", expected, err)
}

// validate refuses a non-positive download timeout, a negative cache TTL
// and a malformed download_hosts.
func (d DirectoryConfig) validate() error {
	if d.DownloadTimeoutMS <= 0 {
		return fmt.Errorf("download_timeout_ms must be a positive number of milliseconds, got %d", d.DownloadTimeoutMS)
	}
	if d.RegistryCacheTTLMS < 0 {
		return fmt.Errorf("registry_cache_ttl_ms must be 0 (no cache) or a positive number of milliseconds, got %d", d.RegistryCacheTTLMS)
	}
	return directory.CheckDownloadHosts(d.DownloadHosts)
}

// runtime is the directory's own Config for these settings.
func (d DirectoryConfig) runtime() directory.Config {
	return directory.Config{
		RegistryURL:      d.RegistryURL,
		DownloadTimeout:  time.Duration(d.DownloadTimeoutMS) * time.Millisecond,
		RegistryCacheTTL: time.Duration(d.RegistryCacheTTLMS) * time.Millisecond,
		DownloadHosts:    d.DownloadHosts,
	}
}

// HTTPConfig is the one HTTP listener: /mcp, /rpc, the web page, probes.
// mcp.allow_side_effects lives in RegistryConfig (core.Config.MCP), where
// config files have always had it.
type HTTPConfig struct {
	// Addr is host:port (empty: no listener). Flags --http-addr, --mcp-addr.
	Addr string `yaml:"http_addr"`
	// Token is required by every endpoint but the probes (env SKILLS_MCP_TOKEN).
	Token        string        `yaml:"mcp_token"`
	NoSkillTools bool          `yaml:"mcp_no_skill_tools"`
	MaxSessions  int           `yaml:"mcp_max_sessions"`
	IdleTimeout  time.Duration `yaml:"mcp_idle_timeout"`
	AllowOrigin  HostList      `yaml:"mcp_allow_origin"`
	AllowHost    HostList      `yaml:"mcp_allow_host"`
	// RPCPath is the Skills Protocol endpoint (empty: off).
	RPCPath string `yaml:"rpc_path"`
	// WebAdminLabels gives the web page the registry's admin token, so
	// that a team token entered on the page may move protected labels of
	// the team's ids (docs/web.md).
	WebAdminLabels bool `yaml:"web_admin_labels"`
	// PublicURL is the URL browsers use behind a reverse proxy that
	// terminates TLS (https://skills.example.com): the web page's origin,
	// its cookies Secure, its host answered to (docs/deploy.md).
	PublicURL string `yaml:"public_url"`
}

// SkillsProtocolConfig is the skills_protocol section (every key optional):
//
//	skills_protocol:
//	  secrets: {SALESFORCE_API_KEY: "…"}   # values of secrets manifests may name (else the environment)
//	  work_dir: /var/tmp/skills-protocol    # run folders and materialized bundles
//	  blob_ttl: 24h                         # how long a blob is kept after it is created
//	  blob_store_max_bytes: 1073741824      # all blobs together; the oldest go first
//	  run_memory_bytes: 536870912           # memory of one run, all its processes (cgroup mode)
//	  cgroups: auto                         # auto (a cgroup per run when the host allows it) or off
//	  cgroup_parent: /skills.slice          # where run cgroups are created (default: see sandbox.Config)
//	  secret_grants:                        # which bundles receive which secrets (none by default)
//	    - {bundle: "acme.crm.*", origin: folder, names: [CRM_TOKEN]}
//	  published_may_shadow_folders: false   # may a published bundle take a name a folder serves
//	  published_max_bundles: 1000           # bundle versions published over iii
//	  published_bundle_max_bytes: 16777216  # one published bundle
//	  published_max_bytes: 1073741824       # all published bundles together
//	  tmpfs_bytes: 67108864                 # size of each tmpfs a run writes: /workspace, /tmp, /dev/shm
//	  max_input_blobs: 16                   # distinct blobs one run may name in input_blobs
//	  max_input_blob_bytes: 33554432        # their sizes together
//	  max_blob_load_bytes: 16777216         # blob contents read from the store at once
//	  max_batch_requests: 100               # requests in one JSON-RPC batch
//	  max_batch_response_bytes: 33554432    # a batch's answers together
//	  bundles: [./bundles]                  # folders of bundles (skill.toml) to serve (--sp-bundles)
type SkillsProtocolConfig struct {
	Bundles                   HostList                     `yaml:"bundles"`
	Secrets                   map[string]string            `yaml:"secrets"`
	SecretGrants              []skillsprotocol.SecretGrant `yaml:"secret_grants"`
	PublishedMayShadowFolders bool                         `yaml:"published_may_shadow_folders"`
	PublishedMaxBundles       int                          `yaml:"published_max_bundles"`
	PublishedBundleMaxBytes   int64                        `yaml:"published_bundle_max_bytes"`
	PublishedMaxBytes         int64                        `yaml:"published_max_bytes"`
	WorkDir                   string                       `yaml:"work_dir"`
	BlobTTL                   time.Duration                `yaml:"blob_ttl"`
	BlobStoreMaxBytes         int64                        `yaml:"blob_store_max_bytes"`
	RunMemoryBytes            int64                        `yaml:"run_memory_bytes"`
	Cgroups                   string                       `yaml:"cgroups"`
	CgroupParent              string                       `yaml:"cgroup_parent"`
	TmpfsBytes                int64                        `yaml:"tmpfs_bytes"`
	MaxInputBlobs             int                          `yaml:"max_input_blobs"`
	MaxInputBlobBytes         int64                        `yaml:"max_input_blob_bytes"`
	MaxBlobLoadBytes          int64                        `yaml:"max_blob_load_bytes"`
	MaxBatchRequests          int                          `yaml:"max_batch_requests"`
	MaxBatchResponseBytes     int                          `yaml:"max_batch_response_bytes"`
}

// HostList is a comma-separated string or a list of strings (host names,
// origins, folders).
type HostList []string

// UnmarshalYAML accepts one string (split at commas) or a list.
func (h *HostList) UnmarshalYAML(n *yaml.Node) error {
	list, err := decodeStrings(n, SplitList)
	if err != nil {
		return listError(fmt.Sprintf("line %d: expected a host name or a list of host names", n.Line), err)
	}
	*h = list
	return nil
}

// SplitList splits a comma-separated value, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Defaults of the settings that are not upstream's (core.DefaultConfig,
// and the directory's in DefaultConfig).
const (
	// DefaultHTTPAddr is where the HTTP listener serves unless told
	// otherwise (loopback only: the endpoint gives access to every function).
	DefaultHTTPAddr = "127.0.0.1:49135"
	// DefaultDataDir holds the durable state.
	DefaultDataDir = ".data"
)

// Environment variables that supply a setting when its flag is not given
// (ApplyEnv); they win over the config file.
const (
	EnvEngineToken = "III_ENGINE_TOKEN"
	EnvMCPToken    = "SKILLS_MCP_TOKEN"
	EnvAdminToken  = "SKILLS_ADMIN_TOKEN"
	EnvLogLevel    = "SKILLS_LOG"
)

// DefaultConfig is the server with no config file and no flags.
func DefaultConfig() Config {
	return Config{
		Engine: EngineConfig{URL: iii.DefaultEngineURL, DataDir: DefaultDataDir, MaxConnections: engine.DefaultMaxConnections},
		Registry: RegistryConfig{Config: core.DefaultConfig(), SectionMaxDepth: sections.DefaultMaxDepth,
			SectionMaxBytes: sections.DefaultMaxBytes, ClaimTimeout: DefaultClaimTimeout,
			ResultResend: DefaultResultResend},
		Directory: DirectoryConfig{RegistryURL: directory.DefaultRegistryURL, DownloadTimeoutMS: directory.DefaultDownloadTimeout,
			RegistryCacheTTLMS: directory.DefaultRegistryCacheTTL},
		HTTP: HTTPConfig{Addr: DefaultHTTPAddr, MaxSessions: skillsmcp.DefaultMaxSessions,
			IdleTimeout: skillsmcp.DefaultIdleSessionTimeout, RPCPath: skillsprotocol.Path},
		SkillsProtocol: SkillsProtocolConfig{BlobTTL: skillsprotocol.DefaultBlobTTL},
		LogLevel:       "info",
	}
}

// ApplyEnv takes the settings the environment supplies (tokens, log level)
// over what the file said; flags parsed afterwards still win.
func (c *Config) ApplyEnv() {
	for env, field := range map[string]*string{EnvEngineToken: &c.Engine.Token, EnvMCPToken: &c.HTTP.Token,
		EnvAdminToken: &c.Registry.AdminToken, EnvLogLevel: &c.LogLevel} {
		if v := os.Getenv(env); v != "" {
			*field = v
		}
	}
}

// in is " in PATH" for error messages (nothing without a file).
func (c *Config) in() string {
	if c.Path == "" {
		return ""
	}
	return " in " + c.Path
}

// Validate checks every setting and names the first bad one with what was
// expected. Start calls it too.
func (c *Config) Validate() error {
	if err := c.Registry.Config.Validate(); err != nil {
		return err
	}
	if err := c.Directory.validate(); err != nil {
		return err
	}
	if err := c.ValidateMCP(); err != nil {
		return err
	}
	if c.PprofAddr != "" {
		if err := checkPprofAddr(c.PprofAddr); err != nil {
			return err
		}
	}
	if c.Engine.Standalone {
		if _, err := ListenAddr(c.Engine.URL); err != nil {
			return fmt.Errorf("invalid --url for --standalone: %q: %w", c.Engine.URL, err)
		}
	}
	if c.Engine.MaxConnections < 0 {
		return fmt.Errorf("engine_max_connections %d: expected a positive number of sockets", c.Engine.MaxConnections)
	}
	if c.Engine.MaxConnectionsPerClient < 0 {
		return fmt.Errorf("engine_max_connections_per_client %d: expected a positive number of sockets (0: an eighth of engine_max_connections)", c.Engine.MaxConnectionsPerClient)
	}
	if _, err := c.ScopedTokens(); err != nil {
		return err
	}
	if err := httpguard.CheckHostPatterns("engine_allow_host", c.Engine.AllowHost); err != nil {
		return err
	}
	if c.HTTP.PublicURL != "" {
		if _, _, err := httpguard.PublicOrigin("--public-url (config public_url)", c.HTTP.PublicURL); err != nil {
			return err
		}
	}
	if c.HTTP.RPCPath != "" && !strings.HasPrefix(c.HTTP.RPCPath, "/") {
		return fmt.Errorf("--rpc-path %q must start with / (e.g. /rpc), or be empty to disable the endpoint", c.HTTP.RPCPath)
	}
	if c.Registry.SectionMaxDepth < 0 || c.Registry.SectionMaxBytes < 0 {
		return fmt.Errorf("section_max_depth %d / section_max_bytes %d: expected positive numbers", c.Registry.SectionMaxDepth, c.Registry.SectionMaxBytes)
	}
	if err := c.Observability.validate(c.in()); err != nil {
		return err
	}
	return c.SkillsProtocol.validate(c.in())
}

// ValidateMCP checks the settings `skills mcp` takes (AddMCPFlags): the
// server's other settings in a file they share are not its business.
func (c *Config) ValidateMCP() error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("log level %q: expected debug, info, warn or error", c.LogLevel)
	}
	return httpguard.CheckHostPatterns("mcp_allow_host", c.HTTP.AllowHost)
}

// ScopedTokens resolves engine_tokens (token_env read from the
// environment) and checks them with engine.ValidateScopedTokens: starting
// with a bad one could let the wrong team in.
func (c *Config) ScopedTokens() ([]engine.ScopedToken, error) {
	out := make([]engine.ScopedToken, 0, len(c.Engine.Tokens))
	for i, t := range c.Engine.Tokens {
		token := t.Token
		switch {
		case t.Token != "" && t.TokenEnv != "":
			return nil, fmt.Errorf("engine_tokens[%d] (%s)%s: set token or token_env, not both", i, t.Name, c.in())
		case t.TokenEnv != "":
			token = os.Getenv(t.TokenEnv)
			if token == "" {
				return nil, fmt.Errorf("engine_tokens[%d] (%s)%s: environment variable %s is empty or unset", i, t.Name, c.in(), t.TokenEnv)
			}
		}
		out = append(out, engine.ScopedToken{Name: t.Name, Token: token, Namespaces: t.Namespaces})
	}
	if err := engine.ValidateScopedTokens(out, c.Engine.Token); err != nil {
		if c.Path != "" {
			return nil, fmt.Errorf("%s: %w", c.Path, err)
		}
		return nil, err
	}
	return out, nil
}

func (s SkillsProtocolConfig) validate(in string) error {
	if s.BlobTTL <= 0 {
		return fmt.Errorf("skills_protocol.blob_ttl %s%s: expected a positive duration such as 24h or 90m", s.BlobTTL, in)
	}
	if s.BlobStoreMaxBytes < 0 {
		return fmt.Errorf("skills_protocol.blob_store_max_bytes %d%s: expected a positive number of bytes", s.BlobStoreMaxBytes, in)
	}
	if s.RunMemoryBytes < 0 {
		return fmt.Errorf("skills_protocol.run_memory_bytes %d%s: expected a positive number of bytes", s.RunMemoryBytes, in)
	}
	for _, kv := range []struct {
		key string
		v   int64
	}{{"tmpfs_bytes", s.TmpfsBytes}, {"max_input_blobs", int64(s.MaxInputBlobs)}, {"max_input_blob_bytes", s.MaxInputBlobBytes},
		{"max_blob_load_bytes", s.MaxBlobLoadBytes}, {"max_batch_requests", int64(s.MaxBatchRequests)},
		{"max_batch_response_bytes", int64(s.MaxBatchResponseBytes)}} {
		if kv.v < 0 {
			return fmt.Errorf("skills_protocol.%s %d%s: expected a positive number", kv.key, kv.v, in)
		}
	}
	if s.Cgroups != "" && s.Cgroups != "auto" && s.Cgroups != "off" {
		return fmt.Errorf("skills_protocol.cgroups %q%s: expected auto or off", s.Cgroups, in)
	}
	for i, g := range s.SecretGrants {
		if err := g.Validate(); err != nil {
			return fmt.Errorf("skills_protocol.secret_grants[%d]%s: %w", i, in, err)
		}
	}
	if s.PublishedMaxBundles < 0 {
		return fmt.Errorf("skills_protocol.published_max_bundles %d%s: expected a positive count", s.PublishedMaxBundles, in)
	}
	if b := s.PublishedBundleMaxBytes; b < 0 || b > skillsprotocol.MaxBundleBytes {
		return fmt.Errorf("skills_protocol.published_bundle_max_bytes %d%s: expected a positive number of bytes, at most %d", b, in, skillsprotocol.MaxBundleBytes)
	}
	if s.PublishedMaxBytes < 0 {
		return fmt.Errorf("skills_protocol.published_max_bytes %d%s: expected a positive number of bytes", s.PublishedMaxBytes, in)
	}
	return nil
}

// ListenAddr turns ws://host:port into the host:port to listen on.
func ListenAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "ws" {
		return "", fmt.Errorf("the embedded engine serves plain ws://, got scheme %q", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("missing host:port")
	}
	if u.Port() == "" {
		return u.Host + ":49134", nil
	}
	return u.Host, nil
}
