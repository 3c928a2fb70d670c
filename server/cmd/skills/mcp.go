package main

// The MCP surface of the binary:
//
//	skills mcp --stdio [--url URL]               serve one MCP client over stdin/stdout
//	skills mcp --http-addr ADDR [--url URL]      serve Streamable HTTP at http://ADDR/mcp
//	skills --standalone [--http-addr ADDR]       also serve http://ADDR/mcp (default 127.0.0.1:49135)
//
// `skills mcp` takes the server's flags and config keys for the settings
// they share (app.Config.AddMCPFlags): --url, --engine-token, --log-level,
// --http-addr and the --mcp-… flags, and their keys in config.yaml.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/health"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
)

// engineConnected is the readiness of `skills mcp`: it serves what the
// registry answers through the engine, so it is ready while connected.
func engineConnected(client *iii.Client) health.Check {
	return func() error {
		if !client.Connected() {
			return errors.New("not connected to the iii engine")
		}
		return nil
	}
}

// mcpCommand is what `skills mcp` is told: the settings it shares with the
// server, and its own.
type mcpCommand struct {
	cfg            app.Config
	configPath     string
	stdio          bool
	connectTimeout time.Duration
}

// renamedMCPFlags are the names `skills mcp` had before it took the
// server's: still accepted (MCP clients' configs hold them), with a
// warning naming the flag to write instead.
var renamedMCPFlags = []struct{ old, name string }{
	{"http", "http-addr"}, {"token", "mcp-token"}, {"max-sessions", "mcp-max-sessions"},
	{"idle-timeout", "mcp-idle-timeout"}, {"allow-origin", "mcp-allow-origin"}, {"allow-host", "mcp-allow-host"},
	{"no-skill-tools", "mcp-no-skill-tools"}, {"allow-side-effects", "mcp-allow-side-effects"},
}

// newMCPCommand is `skills mcp` with cfg and its own defaults. The HTTP
// listener is off unless a flag asks for it: the file's http_addr is the
// address of the server that reads the same file.
func newMCPCommand(cfg app.Config) mcpCommand {
	cfg.HTTP.Addr = ""
	return mcpCommand{cfg: cfg, configPath: "./config.yaml", connectTimeout: 15 * time.Second}
}

// flags is the flag set of `skills mcp`, bound to c.
func (c *mcpCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("skills mcp", flag.ContinueOnError)
	c.declare(fs)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage:\n  skills mcp --stdio [--url URL]\n  skills mcp --http-addr ADDR [--url URL] [--mcp-token T]\n\n"+
			"The flags and config keys are the server's for the same settings (docs/configuration.md).\n\nFlags:\n")
		// The defaults as they are before the environment and the file
		// (a token from the environment is no default to print).
		help := newMCPCommand(app.DefaultConfig())
		printFlags(out, help.declare, func(f *flag.Flag) bool { return strings.HasPrefix(f.Usage, olderName) })
		renamed := make([]string, len(renamedMCPFlags))
		for i, r := range renamedMCPFlags {
			renamed[i] = "--" + r.old + " (--" + r.name + ")"
		}
		fmt.Fprintf(out, "\nOlder names still accepted: %s\n", strings.Join(renamed, ", "))
	}
	return fs
}

const olderName = "older name of --"

// declare declares the flags of `skills mcp` on fs, bound to c.
func (c *mcpCommand) declare(fs *flag.FlagSet) {
	c.cfg.AddMCPFlags(fs)
	fs.BoolVar(&c.stdio, "stdio", c.stdio, "Serve one MCP client over stdin/stdout (for clients that launch a command)")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", c.connectTimeout, "How long to wait for the engine at start-up")
	fs.StringVar(&c.configPath, "config", c.configPath, "Path to the server's config.yaml, for the settings these flags have (http_addr excepted: "+
		"the server's listener has it); a missing file keeps the defaults")
	for _, r := range renamedMCPFlags {
		fs.Var(fs.Lookup(r.name).Value, r.old, olderName+r.name)
	}
}

// parseMCP reads the settings of `skills mcp` as the server reads its own:
// the defaults, the config file, the environment (III_URL too), the flags.
// ok false: exit with code (help, a bad flag, a bad file named by --config).
func parseMCP(args []string, stdout, stderr io.Writer) (c mcpCommand, warnings []string, code int, ok bool) {
	c = newMCPCommand(app.DefaultConfig())
	c.cfg.ApplyEnv()
	fs := c.flags()
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return c, nil, code, false
	}
	if fs.NArg() > 0 || (!c.stdio && c.cfg.HTTP.Addr == "") {
		fmt.Fprintln(stderr, "skills mcp: give --stdio, --http-addr ADDR or both (skills mcp --help lists every flag)")
		return c, nil, 2, false
	}
	// The same file as the server's, refused on the same grounds when
	// named with --config. The default ./config.yaml is the working
	// directory's, which for `skills mcp` is often whatever project an MCP
	// client runs in: a file there that is not a skills config is skipped
	// with a warning, so the client's server still starts.
	loaded, err := app.Load(c.configPath)
	switch {
	case err == nil, errors.Is(err, app.ErrNoFile):
	case flagGiven(fs, "config"):
		fmt.Fprintf(stderr, "skills mcp: %v\n", err)
		return c, nil, 2, false
	default:
		warnings = append(warnings, "skills mcp: ./config.yaml is not a skills config; using the defaults (name one with --config): "+err.Error())
		loaded = app.DefaultConfig()
	}
	loaded.ApplyEnv()
	if u := os.Getenv("III_URL"); u != "" {
		loaded.Engine.URL = u
	}
	again := newMCPCommand(loaded)
	fs = again.flags()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "skills mcp: %v\n", err)
		return c, nil, 2, false
	}
	for _, r := range renamedMCPFlags {
		if flagGiven(fs, r.old) {
			warnings = append(warnings, fmt.Sprintf("skills mcp: --%s is the older name of --%s (the server's); write --%s", r.old, r.name, r.name))
		}
	}
	if err := again.cfg.ValidateMCP(); err != nil {
		fmt.Fprintf(stderr, "skills mcp: %v\n", err)
		return c, nil, 2, false
	}
	return again, warnings, 0, true
}

func runMCP(args []string, stdout, stderr io.Writer) int {
	c, warnings, code, ok := parseMCP(args, stdout, stderr)
	if !ok {
		return code
	}
	cfg := c.cfg
	log := newLogger(stderr, cfg.LogLevel)
	for _, w := range warnings {
		log.Warn(w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serveMCP(ctx, c, log); err != nil {
		fmt.Fprintf(stderr, "skills mcp: %v\n", err)
		return 1
	}
	return 0
}

// serveMCP serves the registry behind c.cfg.Engine.URL over MCP until ctx
// ends (or the stdio client leaves).
func serveMCP(ctx context.Context, c mcpCommand, log *slog.Logger) error {
	cfg := c.cfg
	// Worker names are unique per engine: several MCP servers may share one.
	var b [3]byte
	_, _ = rand.Read(b[:])
	client := iii.RegisterWorker(cfg.Engine.URL, iii.WithName("skills-mcp-"+hex.EncodeToString(b[:])),
		iii.WithDescription("MCP server of the skills registry"), iii.WithLogger(log), withEngineToken(cfg.Engine.Token))
	defer client.Close()
	cctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	err := client.Connect(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("cannot reach the iii engine at %s: %w", cfg.Engine.URL, err)
	}

	// The registry runs in another process: every registry read goes over
	// iii (its functions, the catalog included: skills::catalog-*).
	reg := core.NewRemote(client, core.RemoteOptions{Logger: log})
	tools := cfg.MCPTools()
	if cfg.HTTP.Addr != "" {
		_, stopHTTP, err := app.StartHTTP(ctx, app.HTTPServer{Addr: cfg.HTTP.Addr, Client: client, Registry: reg, Door: cfg.HTTP.Door(),
			MCP: tools, Ready: engineConnected(client), Logger: log})
		if err != nil {
			return fmt.Errorf("cannot start the MCP endpoint on %s: %w", cfg.HTTP.Addr, err)
		}
		defer stopHTTP()
	}
	if c.stdio {
		srv := skillsmcp.New(client, app.MCPOptions(tools, reg, log))
		if err := srv.Start(ctx); err != nil {
			return fmt.Errorf("cannot subscribe to the skills registry: %w", err)
		}
		defer srv.Close()
		log.Info("serving MCP over stdio", "engine", cfg.Engine.URL)
		if err := srv.ServeStdio(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("MCP stdio session ended: %w", err)
		}
		return nil
	}
	<-ctx.Done()
	return nil
}
