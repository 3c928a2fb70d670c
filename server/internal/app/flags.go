package app

import (
	"flag"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// sideEffectsUsage is the help of --mcp-allow-side-effects.
const sideEffectsUsage = "Expose MCP tools that have side effects (directory downloads, writes, dialing out, functions of other workers " +
	"that do not declare metadata mcp.readOnlyHint); by default only read-only tools are (config: mcp.allow_side_effects)"

// AddFlags declares on fs one flag per setting of the server, each bound to
// its field of c: the field's current value is the flag's default, a flag
// given on the command line overwrites it. This is the one place flags and
// config keys meet (the key is in parentheses where it is not the flag's
// name with _ for -).
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.addClientFlags(fs)
	c.addHTTPFlags(fs)
	e, r, h, sp := &c.Engine, &c.Registry, &c.HTTP, &c.SkillsProtocol
	fs.BoolVar(&e.Standalone, "standalone", e.Standalone, "Start an embedded iii engine on the --url address and run the worker against it")
	fs.BoolVar(&e.Only, "engine-only", e.Only, "With --standalone: run only the embedded engine, without the registry worker (to host another registry, e.g. upstream's)")
	fs.StringVar(&e.DataDir, "data", e.DataDir, "Directory of durable state: the embedded engine's (with --standalone) and the Skills Protocol store (blobs, published bundles) of the worker")
	fs.BoolVar(&r.StrictFetch, "strict-fetch", r.StrictFetch, "Reject bare skill paths in "+rules.FnSkillFetch+", exactly like upstream v0.2.2")
	fs.StringVar(&h.Addr, "mcp-addr", h.Addr, "Alias of --http-addr")
	fs.BoolVar(&h.WebAdminLabels, "web-admin-labels", h.WebAdminLabels, "Let the web page move protected labels with --admin-token: for a team whose engine token (engine_tokens) is entered, on the team's own ids, or, without teams, for whoever holds --mcp-token (by default the page holds no admin token and protected labels move only with the admin token itself)")
	fs.StringVar(&h.RPCPath, "rpc-path", h.RPCPath, "Path of the Skills Protocol JSON-RPC endpoint on the --http-addr listener (empty disables)")
	fs.Var(listFlag{(*[]string)(&sp.Bundles)}, "sp-bundles", "Comma-separated folders of Skills Protocol bundles (skill.toml) to serve (config skills_protocol.bundles)")
	fs.StringVar(&h.PublicURL, "public-url", h.PublicURL, "The URL browsers use when a reverse proxy that terminates TLS serves this server (https://skills.example.com): the web page accepts its forms from that origin, marks its cookies Secure, and the HTTP endpoints answer to its host (config public_url)")
	fs.IntVar(&r.SectionMaxDepth, "section-max-depth", r.SectionMaxDepth, "How many section reads (iii://fn/…) may nest; a cycle is refused at once")
	fs.IntVar(&r.SectionMaxBytes, "section-max-bytes", r.SectionMaxBytes, "Largest section output served; larger ones fail with \"section output too large (N bytes; max M)\"")
	fs.Var(listFlag{(*[]string)(&e.AllowHost)}, "engine-allow-host", "With --standalone: comma-separated Host names the engine socket answers to besides loopback names and the listen address (iii.example.com, *.example.com, *) (config engine_allow_host)")
	fs.Var(listFlag{(*[]string)(&e.AllowOrigin)}, "engine-allow-origin", "With --standalone: comma-separated browser origins (https://app.example) allowed to open the engine socket besides loopback pages; clients that send no Origin are always allowed")
	fs.IntVar(&e.MaxConnections, "engine-max-connections", e.MaxConnections, "With --standalone: most sockets the embedded engine keeps open at once; more are refused with 503 until some close")
	fs.IntVar(&e.MaxConnectionsPerClient, "engine-max-connections-per-client", e.MaxConnectionsPerClient, "With --standalone: most sockets one client holds (one scoped token, else one remote address); more are refused with 429; 0 means an eighth of --engine-max-connections")
	fs.DurationVar(&r.ResultHold, "result-hold", r.ResultHold, "Against an external engine, send each function result no sooner than this after its call arrived (iii 0.23 loses faster results: docs/upstream-engine-race.md); 0 disables")
	fs.DurationVar(&r.ResultResend, "result-resend", r.ResultResend, "Against an external engine, send each function result again this long after the first (iii 0.23 drops a result that beat its bookkeeping and drops the copy of one it delivered: docs/upstream-engine-race.md); 0 disables")
	fs.DurationVar(&r.ClaimTimeout, "claim-timeout", r.ClaimTimeout, "How long the worker keeps asking for function ids another worker holds before it exits non-zero (it is not ready until it owns all of them)")
	fs.Var(&c.Observability.MetricsAddr, "metrics-addr", "Serve GET /metrics on this address instead of the --http-addr listener (same token and Host rules; empty turns /metrics off; config metrics_addr)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", c.PprofAddr, "Serve Go runtime profiles at http://ADDR/debug/pprof/ (loopback addresses only; empty disables)")
	fs.StringVar(&r.Versions.ServeLabel, "serve-label", r.Versions.ServeLabel, "Reads without a version selector serve this label where a skill or prompt has it, else the newest version (config versions.serve_label)")
	fs.StringVar(&r.AdminToken, "admin-token", r.AdminToken, "Token that unlocks moving protected labels ("+rules.FnSkillsLabel+" admin_token; env "+EnvAdminToken+")")
	fs.Var(listFlag{&r.Versions.ProtectedLabels}, "protected-labels", "Comma-separated labels that move only with --admin-token (config versions.protected_labels)")
	fs.Var(&folderFlag{list: (*[]string)(&c.Directory.SkillsFolder)}, "skills-folder", "Serve skills from this folder (repeatable, earlier wins; replaces config skills_folder)")
}

// AddMCPFlags declares on fs the flags of `skills mcp`: the settings it
// shares with the server (the engine it dials, the MCP endpoint), under
// the server's names and bound to the same fields, so that one setting
// has one flag and one config key everywhere.
func (c *Config) AddMCPFlags(fs *flag.FlagSet) {
	c.addClientFlags(fs)
	c.addHTTPFlags(fs)
}

// addClientFlags are the settings of a process that dials an engine.
func (c *Config) addClientFlags(fs *flag.FlagSet) {
	e := &c.Engine
	fs.StringVar(&e.URL, "url", e.URL, "WebSocket URL of the iii engine")
	fs.StringVar(&e.Token, "engine-token", e.Token, "Worker token presented to the engine dialed; with --standalone, the token every worker must present to the embedded engine (Authorization: Bearer, or ?token= in its URL) (env "+EnvEngineToken+")")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "Log level: debug, info, warn or error (env "+EnvLogLevel+"; logs go to stderr)")
}

// addHTTPFlags are the settings of the MCP endpoint on the HTTP listener.
func (c *Config) addHTTPFlags(fs *flag.FlagSet) {
	h, r := &c.HTTP, &c.Registry
	fs.StringVar(&h.Addr, "http-addr", h.Addr, "Serve MCP Streamable HTTP at http://ADDR/mcp and the probes; the server serves the Skills Protocol (/rpc) and the web page there too (empty disables)")
	fs.StringVar(&h.Token, "mcp-token", h.Token, "Bearer token required by the MCP and Skills Protocol endpoints (env "+EnvMCPToken+")")
	fs.BoolVar(&h.NoSkillTools, "mcp-no-skill-tools", h.NoSkillTools, "Leave out the MCP tools list_skills and read_skill (for clients that read skill:// resources themselves)")
	fs.BoolVar(&r.MCP.AllowSideEffects, "mcp-allow-side-effects", r.MCP.AllowSideEffects, sideEffectsUsage)
	fs.IntVar(&h.MaxSessions, "mcp-max-sessions", h.MaxSessions,
		"Cap on live MCP 2025-11-25 sessions; a new one past it closes the session idle the longest (negative: no cap)")
	fs.DurationVar(&h.IdleTimeout, "mcp-idle-timeout", h.IdleTimeout,
		"Close an MCP 2025-11-25 session after this long with no request and no open stream (negative: never)")
	fs.Var(listFlag{(*[]string)(&h.AllowOrigin)}, "mcp-allow-origin",
		"Comma-separated browser origins (https://app.example) allowed to use the HTTP endpoints (MCP, Skills Protocol) besides loopback pages; clients that send no Origin are always allowed")
	fs.Var(listFlag{(*[]string)(&h.AllowHost)}, "mcp-allow-host",
		"Comma-separated Host names the HTTP endpoints (MCP, Skills Protocol) answer to besides loopback names and the listen address: the public name a reverse proxy forwards (skills.example.com), *.example.com for every subdomain, * for any (config mcp_allow_host)")
}

// listFlag is a comma-separated list flag; given, it replaces the list
// (a flag is never merged with its config key).
type listFlag struct{ list *[]string }

func (l listFlag) String() string {
	if l.list == nil {
		return ""
	}
	return strings.Join(*l.list, ",")
}

func (l listFlag) Set(v string) error {
	*l.list = SplitList(v)
	return nil
}

// folderFlag is the repeatable --skills-folder: its first use replaces the
// config's folders, later uses append.
type folderFlag struct {
	list *[]string
	set  bool
}

func (f *folderFlag) String() string { return "" }

func (f *folderFlag) Set(v string) error {
	if !f.set {
		*f.list, f.set = nil, true
	}
	*f.list = append(*f.list, v)
	return nil
}
