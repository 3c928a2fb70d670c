package main

// The MCP surface of the binary:
//
//	skills mcp --stdio [--url URL]          serve one MCP client over stdin/stdout
//	skills mcp --http ADDR [--url URL]      serve Streamable HTTP at http://ADDR/mcp
//	skills --standalone [--http-addr ADDR]  also serve http://ADDR/mcp (default 127.0.0.1:49135)

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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

func runMCP(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills mcp", flag.ContinueOnError)
	engineURL := fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of an iii engine running the skills registry")
	stdio := fs.Bool("stdio", false, "Serve one MCP client over stdin/stdout (for clients that launch a command)")
	httpAddr := fs.String("http", "", "Serve MCP Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:49135)")
	fs.StringVar(httpAddr, "http-addr", "", "Alias of --http, the name `skills` itself uses")
	token := fs.String("token", os.Getenv(mcpTokenEnv), "Bearer token required on every HTTP request (env "+mcpTokenEnv+")")
	limits := mcpSessionFlags(fs, "")
	engineToken := fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")")
	connectTimeout := fs.Duration("connect-timeout", 15*time.Second, "How long to wait for the engine at start-up")
	logLevel := fs.String("log-level", envOr(app.EnvLogLevel, "info"), "Log level: debug, info, warn or error (logs go to stderr)")
	noSkillTools := fs.Bool("no-skill-tools", false, "Leave out the list_skills and read_skill tools (for clients without resource support)")
	allowSideEffects := fs.Bool("allow-side-effects", false, app.SideEffectsUsage)
	configPath := fs.String("config", "./config.yaml", "Path to config.yaml (its mcp section and mcp_allow_host; a missing file keeps the defaults)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  skills mcp --stdio [--url URL]\n  skills mcp --http ADDR [--url URL] [--token T]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 || (!*stdio && *httpAddr == "") {
		fmt.Fprintln(stderr, "skills mcp: give --stdio, --http ADDR or both (skills mcp --help lists every flag)")
		return 2
	}
	log := newLogger(stderr, *logLevel)
	// The same file as the server's, refused on the same grounds when
	// named with --config. The default ./config.yaml is the working
	// directory's, which for `skills mcp` is often whatever project an MCP
	// client runs in: a file there that is not a skills config is skipped
	// with a warning, so the client's server still starts.
	cfg, err := app.Load(*configPath)
	if err != nil && !errors.Is(err, app.ErrNoFile) {
		if flagGiven(fs, "config") {
			fmt.Fprintf(stderr, "skills mcp: %v\n", err)
			return 2
		}
		log.Warn("skills mcp: ./config.yaml is not a skills config; using the defaults (name one with --config)", "err", err)
		cfg = app.DefaultConfig()
	}
	tools := skillsmcp.Options{NoSkillTools: *noSkillTools, AllowSideEffects: *allowSideEffects || cfg.Registry.MCP.AllowSideEffects,
		AllowSideEffectsSetting: "--allow-side-effects (or mcp.allow_side_effects: true in config.yaml)"}
	httpOpts, err := limits.withHosts(fs, limits.options(*token), cfg.HTTP.AllowHost)
	if err != nil {
		fmt.Fprintf(stderr, "skills mcp: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Worker names are unique per engine: several MCP servers may share one.
	var b [3]byte
	_, _ = rand.Read(b[:])
	client := iii.RegisterWorker(*engineURL, iii.WithName("skills-mcp-"+hex.EncodeToString(b[:])),
		iii.WithDescription("MCP server of the skills registry"), iii.WithLogger(log), withEngineToken(*engineToken))
	defer client.Close()
	cctx, cancel := context.WithTimeout(ctx, *connectTimeout)
	err = client.Connect(cctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "skills mcp: cannot reach the iii engine at %s: %v\n", *engineURL, err)
		return 1
	}

	// The registry runs in another process: every registry read goes over
	// iii (its functions, the catalog included: skills::catalog-*).
	reg := core.NewRemote(client, core.RemoteOptions{Logger: log})
	if *httpAddr != "" {
		_, stopHTTP, err := app.StartHTTP(ctx, app.HTTPServer{Addr: *httpAddr, Client: client, Registry: reg, Door: httpOpts,
			MCP: tools, Ready: engineConnected(client), Logger: log})
		if err != nil {
			log.Error("cannot start the MCP endpoint", "addr", *httpAddr, "err", err)
			return 1
		}
		defer stopHTTP()
	}
	if *stdio {
		srv := skillsmcp.New(client, app.MCPOptions(tools, reg, log))
		if err := srv.Start(ctx); err != nil {
			log.Error("cannot subscribe to the skills registry", "err", err)
			return 1
		}
		defer srv.Close()
		log.Info("serving MCP over stdio", "engine", *engineURL)
		if err := srv.ServeStdio(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
			log.Error("MCP stdio session ended", "err", err)
			return 1
		}
		return 0
	}
	<-ctx.Done()
	return 0
}
