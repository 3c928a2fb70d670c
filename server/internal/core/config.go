package core

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

// Config is the registry worker's runtime configuration (config.yaml). Every
// key is optional; missing keys keep their defaults. The iii-directory keys
// of the same file (skills_folder, registry_url, download_*) are not the
// worker's: server/internal/app reads them (app.DirectoryConfig).
type Config struct {
	Scopes Scopes `yaml:"scopes" json:"scopes"`
	// StateTimeoutMS bounds every state::* call and every section-function or
	// prompt-handler trigger, like upstream.
	StateTimeoutMS int64 `yaml:"state_timeout_ms" json:"state_timeout_ms"`

	// MCP configures the MCP endpoint (`skills --mcp-addr`, `skills mcp`).
	MCP MCPConfig `yaml:"mcp" json:"-"`
	// Versions configures the history of skills and prompts (versions.go).
	Versions VersionsConfig `yaml:"versions" json:"-"`
	// Signing configures signed versions (signing.go, docs/trust.md).
	Signing SigningConfig `yaml:"signing" json:"-"`
	// Published caps the skills published over iii (caps.go).
	Published PublishedConfig `yaml:"published" json:"-"`
}

// MCPConfig is the mcp section of config.yaml.
type MCPConfig struct {
	// AllowSideEffects exposes MCP tools that are not read-only
	// (--mcp-allow-side-effects on `skills` and `skills mcp`).
	AllowSideEffects bool `yaml:"allow_side_effects"`
}

// DefaultConfig is what upstream v0.2.2 ships.
func DefaultConfig() Config {
	return Config{Scopes: Scopes{Skills: "skills", Prompts: "prompts"}, StateTimeoutMS: 10000}
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

// Validate checks the values LoadConfig refuses: empty scope names, a
// non-positive timeout and bad versions settings.
func (c Config) Validate() error {
	if c.Scopes.Skills == "" || c.Scopes.Prompts == "" {
		return errors.New("scopes.skills and scopes.prompts must be non-empty strings")
	}
	if c.StateTimeoutMS <= 0 {
		return fmt.Errorf("state_timeout_ms must be a positive number of milliseconds, got %d", c.StateTimeoutMS)
	}
	if err := c.Versions.check(); err != nil {
		return err
	}
	if err := c.Published.check(); err != nil {
		return err
	}
	return c.Signing.check()
}
