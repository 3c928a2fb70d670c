package main

// Host names the listeners answer to: --mcp-allow-host (`skills mcp
// --allow-host`) for /mcp, /rpc and the health endpoints' neighbours, and
// --engine-allow-host for the embedded engine's worker socket, with the
// config keys mcp_allow_host and engine_allow_host. A flag replaces its
// config key (the lists are not merged), like --skills-folder.

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/iii-skills/skills/server/httpguard"
)

// hostsConfig is the part of config.yaml that names hosts (every key
// optional; each is one name, a comma-separated string or a list):
//
//	mcp_allow_host: [skills.example.com, "*.skills.example.com"]
//	engine_allow_host: iii.example.com
type hostsConfig struct {
	MCPAllowHost    hostList `yaml:"mcp_allow_host"`
	EngineAllowHost hostList `yaml:"engine_allow_host"`
}

// hostList is a YAML string (comma-separated) or list of strings.
type hostList []string

func (h *hostList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*h = splitList(s)
		return nil
	case yaml.SequenceNode:
		var list []string
		if err := n.Decode(&list); err != nil {
			return fmt.Errorf("line %d: expected a host name or a list of host names: %w", n.Line, err)
		}
		*h = list
		return nil
	}
	return fmt.Errorf("line %d: expected a host name or a list of host names", n.Line)
}

// loadHostsConfig reads the host keys of the config file; a missing file
// is no hosts, a malformed one an error the caller logs (no hosts then: a
// proxied name is refused with a 403 that names the setting).
func loadHostsConfig(path string) (hostsConfig, error) {
	var c hostsConfig
	raw, err := os.ReadFile(path)
	if err != nil {
		return c, nil
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return hostsConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// allowedHosts is the flag's list when the flag was given, else the config
// key's, checked with httpguard.CheckHostPatterns.
func allowedHosts(fs *flag.FlagSet, flagName, flagValue string, fromConfig []string, configKey string) ([]string, error) {
	hosts, setting := fromConfig, configKey
	if flagGiven(fs, flagName) {
		hosts, setting = splitList(flagValue), "--"+flagName
	}
	if err := httpguard.CheckHostPatterns(setting, hosts); err != nil {
		return nil, err
	}
	return hosts, nil
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// logAllowedHosts says at start which names a listener answers to.
func logAllowedHosts(log *slog.Logger, what string, hosts []string) {
	if len(hosts) > 0 {
		log.Info(what+" also answers to these Host names", "hosts", hosts)
	}
}
