package worker

import (
	"errors"
	"fmt"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

// Scopes names the two state scopes the registries live in.
type Scopes struct {
	Skills  string `yaml:"skills" json:"skills"`
	Prompts string `yaml:"prompts" json:"prompts"`
}

// Config is the worker's runtime configuration (config.yaml). Every key is
// optional; missing keys keep their defaults.
type Config struct {
	Scopes Scopes `yaml:"scopes" json:"scopes"`
	// StateTimeoutMS bounds every state::* call and every section-function or
	// prompt-handler trigger, like upstream.
	StateTimeoutMS int64 `yaml:"state_timeout_ms" json:"state_timeout_ms"`

	// SkillsFolder lists the skills folders in precedence order (a path or
	// a list; relative to the working directory). Empty: folders are off.
	SkillsFolder Folders `yaml:"skills_folder" json:"-"`
	// RegistryURL, DownloadTimeoutMS and RegistryCacheTTLMS configure the
	// iii-directory surface (downloads, the registry proxy, its cache;
	// 0 disables the cache), with upstream's defaults. They stay out of
	// the v0.2.2 manifest's default_config (json:"-").
	RegistryURL        string `yaml:"registry_url" json:"-"`
	DownloadTimeoutMS  int64  `yaml:"download_timeout_ms" json:"-"`
	RegistryCacheTTLMS int64  `yaml:"registry_cache_ttl_ms" json:"-"`
	// DownloadHosts are the only hosts directory::skills::download may
	// dial (host: its default port, host:port: that port); empty, the
	// default, refuses every download.
	DownloadHosts []string `yaml:"download_hosts" json:"-"`
	// MCP configures the MCP endpoint (`skills --mcp-addr`, `skills mcp`).
	MCP MCPConfig `yaml:"mcp" json:"-"`
	// Versions configures the history of skills and prompts (versions.go).
	Versions VersionsConfig `yaml:"versions" json:"-"`
}

// MCPConfig is the mcp section of config.yaml.
type MCPConfig struct {
	// AllowSideEffects exposes MCP tools that are not read-only
	// (--mcp-allow-side-effects, `skills mcp --allow-side-effects`).
	AllowSideEffects bool `yaml:"allow_side_effects"`
}

// Folders is skills_folder: one path or a list of paths.
type Folders []string

// UnmarshalYAML accepts a string or a list of strings.
func (f *Folders) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*f = nil
			return nil
		}
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*f = Folders{s}
		return nil
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return fmt.Errorf("skills_folder: expected a path or a list of paths: %w", err)
		}
		*f = list
		return nil
	}
	return fmt.Errorf("skills_folder (line %d): expected a path or a list of paths", n.Line)
}

// DefaultConfig is what upstream v0.2.2 ships.
func DefaultConfig() Config {
	return Config{Scopes: Scopes{Skills: "skills", Prompts: "prompts"}, StateTimeoutMS: 10000,
		RegistryURL: "https://api.workers.iii.dev", DownloadTimeoutMS: 60000, RegistryCacheTTLMS: 60000}
}

// StateTimeout is StateTimeoutMS as a duration.
func (c Config) StateTimeout() time.Duration {
	return time.Duration(c.StateTimeoutMS) * time.Millisecond
}

// LoadConfig reads a YAML config file over the defaults. Like upstream, any
// problem (missing file, malformed YAML, a wrongly typed field, an empty scope
// name) rejects the whole file: the caller logs the error and keeps the
// defaults, so a bad config never blocks boot.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	raw, err := os.ReadFile(path)
	if err != nil {
		return DefaultConfig(), err
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return DefaultConfig(), fmt.Errorf("parse %s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return DefaultConfig(), err
	}
	return cfg, nil
}

// Validate checks the values LoadConfig refuses: empty scope names,
// non-positive timeouts, a negative cache TTL and bad versions settings.
func (c Config) Validate() error {
	if c.Scopes.Skills == "" || c.Scopes.Prompts == "" {
		return errors.New("scopes.skills and scopes.prompts must be non-empty strings")
	}
	if c.StateTimeoutMS <= 0 {
		return fmt.Errorf("state_timeout_ms must be a positive number of milliseconds, got %d", c.StateTimeoutMS)
	}
	if c.DownloadTimeoutMS <= 0 {
		return fmt.Errorf("download_timeout_ms must be a positive number of milliseconds, got %d", c.DownloadTimeoutMS)
	}
	if c.RegistryCacheTTLMS < 0 {
		return fmt.Errorf("registry_cache_ttl_ms must be 0 (no cache) or a positive number of milliseconds, got %d", c.RegistryCacheTTLMS)
	}
	if err := c.Versions.check(); err != nil {
		return err
	}
	return nil
}
