package main

import (
	"flag"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/app"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
)

// Environment variables that supply a flag's value when it is not given.
const (
	engineTokenEnv = app.EnvEngineToken
	mcpTokenEnv    = app.EnvMCPToken
)

// withEngineToken presents the worker token at connect (no-op when empty).
func withEngineToken(token string) iii.Option { return app.WithEngineToken(token) }

// sessionLimits are the HTTP endpoint flags of `skills mcp` (the server's
// own, prefixed mcp-, are app.Config.AddFlags').
type sessionLimits struct {
	max           *int
	idle          *time.Duration
	origins       *string
	originsFlagID string
	hosts         *string
	hostsFlag     string
}

func mcpSessionFlags(fs *flag.FlagSet, prefix string) sessionLimits {
	return sessionLimits{
		max: fs.Int(prefix+"max-sessions", skillsmcp.DefaultMaxSessions,
			"Cap on live MCP 2025-11-25 sessions; a new one past it closes the session idle the longest (negative: no cap)"),
		idle: fs.Duration(prefix+"idle-timeout", skillsmcp.DefaultIdleSessionTimeout,
			"Close an MCP 2025-11-25 session after this long with no request and no open stream (negative: never)"),
		origins: fs.String(prefix+"allow-origin", "",
			"Comma-separated browser origins (https://app.example) allowed to use the HTTP endpoints (MCP, Skills Protocol) besides loopback pages; clients that send no Origin are always allowed"),
		originsFlagID: "--" + prefix + "allow-origin",
		hosts: fs.String(prefix+"allow-host", "",
			"Comma-separated Host names the HTTP endpoints (MCP, Skills Protocol) answer to besides loopback names and the listen address: the public name a reverse proxy forwards (skills.example.com), *.example.com for every subdomain, * for any (config mcp_allow_host)"),
		hostsFlag: prefix + "allow-host",
	}
}

// withHosts resolves the Host names of the HTTP endpoints (the flag, else
// the config key) into opts.
func (l sessionLimits) withHosts(fs *flag.FlagSet, opts skillsmcp.HTTPOptions, fromConfig []string) (skillsmcp.HTTPOptions, error) {
	hosts, err := allowedHosts(fs, l.hostsFlag, *l.hosts, fromConfig, "mcp_allow_host")
	if err != nil {
		return opts, err
	}
	opts.AllowedHosts = hosts
	opts.HostsSetting = "--" + l.hostsFlag + " (config mcp_allow_host)"
	return opts, nil
}

func (l sessionLimits) options(token string) skillsmcp.HTTPOptions {
	return skillsmcp.HTTPOptions{Token: token, MaxSessions: *l.max, IdleSessionTimeout: *l.idle,
		AllowedOrigins: splitList(*l.origins), OriginsSetting: l.originsFlagID}
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string { return app.SplitList(s) }
