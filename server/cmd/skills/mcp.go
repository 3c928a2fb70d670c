package main

// The MCP surface of the binary:
//
//	skills mcp --stdio [--url URL]          serve one MCP client over stdin/stdout
//	skills mcp --http ADDR [--url URL]      serve Streamable HTTP at http://ADDR/mcp
//	skills --standalone [--mcp-addr ADDR]   also serve http://ADDR/mcp (default 127.0.0.1:49135)

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/health"
	"github.com/iii-skills/skills/server/httpguard"
	skillsmcp "github.com/iii-skills/skills/server/mcp"
	"github.com/iii-skills/skills/server/skillsext"
	"github.com/iii-skills/skills/server/skillsprotocol"
	"github.com/iii-skills/skills/server/worker"
)

// defaultMCPAddr is where --standalone serves MCP unless --mcp-addr says
// otherwise (loopback only: the endpoint gives access to every function).
const defaultMCPAddr = "127.0.0.1:49135"

// mcpTokenEnv supplies --mcp-token / --token when the flag is not given.
const mcpTokenEnv = "SKILLS_MCP_TOKEN"

// startMCPHTTP serves the MCP endpoint for client on addr until ctx ends and
// returns a func that stops it and waits. backend (nil: iii:// only)
// serves the skill:// catalog; tools carries the tool options
// (NoSkillTools, AllowSideEffects and its setting's name). With rt set, the same listener serves the
// Skills Protocol endpoint at rpcPath (and its tool definitions at
// rpcPath/tools) behind the same guard. With page set, it also serves the
// web page of its catalog at / (server/web).
func startMCPHTTP(ctx context.Context, client *iii.Client, addr string, opts skillsmcp.HTTPOptions, backend skillsmcp.Backend,
	tools skillsmcp.Options, log *slog.Logger, rt *skillsprotocol.Runtime, rpcPath string, page *webSource, ready health.Check) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := skillsmcp.New(client, mcpOptions(tools, backend, log))
	ctx, cancel := context.WithCancel(ctx)
	if err := srv.Start(ctx); err != nil {
		cancel()
		_ = ln.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveHTTP(ctx, ln, srv, opts, rt, rpcPath, webPage(page, client, log), ready); err != nil {
			log.Error("MCP endpoint stopped", "err", err)
		}
	}()
	log.Info(fmt.Sprintf("MCP endpoint http://%s%s", ln.Addr(), skillsmcp.Path), "auth", opts.Token != "")
	logAllowedHosts(log, "the HTTP endpoint", opts.AllowedHosts)
	if rt != nil && rpcPath != "" {
		log.Info(fmt.Sprintf("Skills Protocol endpoint http://%s%s", ln.Addr(), rpcPath), "auth", opts.Token != "", "sandbox", sandboxState(rt))
	}
	if page != nil {
		log.Info(fmt.Sprintf("web page http://%s/", ln.Addr()), "auth", opts.Token != "")
	}
	if !httpguard.IsLoopbackAddr(ln.Addr().String()) && opts.Token == "" {
		log.Warn("SECURITY: the MCP endpoint listens on a non-loopback address without a token: anyone who can reach "+
			ln.Addr().String()+" can call every visible function; set --mcp-token / "+mcpTokenEnv+" or bind 127.0.0.1", "addr", ln.Addr().String())
	}
	return func() {
		cancel()
		<-done
		_ = srv.Close()
	}, nil
}

// sideEffectsUsage is the help of --mcp-allow-side-effects and
// `skills mcp --allow-side-effects`.
const sideEffectsUsage = "Expose MCP tools that have side effects (directory downloads, writes, dialing out, functions of other workers " +
	"that do not declare metadata mcp.readOnlyHint); by default only read-only tools are (config: mcp.allow_side_effects)"

// mcpOptions completes the tool options of an MCP server.
func mcpOptions(tools skillsmcp.Options, backend skillsmcp.Backend, log *slog.Logger) skillsmcp.Options {
	tools.Version, tools.Logger, tools.Backend = worker.Version, log, backend
	return tools
}

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
	fs.SetOutput(stderr)
	engineURL := fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of an iii engine running the skills registry")
	stdio := fs.Bool("stdio", false, "Serve one MCP client over stdin/stdout (for clients that launch a command)")
	httpAddr := fs.String("http", "", "Serve MCP Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:49135)")
	token := fs.String("token", os.Getenv(mcpTokenEnv), "Bearer token required on every HTTP request (env "+mcpTokenEnv+")")
	limits := mcpSessionFlags(fs, "")
	engineToken := fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")")
	connectTimeout := fs.Duration("connect-timeout", 15*time.Second, "How long to wait for the engine at start-up")
	logLevel := fs.String("log-level", envOr("SKILLS_LOG", "info"), "Log level: debug, info, warn or error (logs go to stderr)")
	noSkillTools := fs.Bool("no-skill-tools", false, "Leave out the list_skills and read_skill tools (for clients without resource support)")
	allowSideEffects := fs.Bool("allow-side-effects", false, sideEffectsUsage)
	configPath := fs.String("config", "./config.yaml", "Path to config.yaml (its mcp section and mcp_allow_host; a missing file keeps the defaults)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  skills mcp --stdio [--url URL]\n  skills mcp --http ADDR [--url URL] [--token T]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || (!*stdio && *httpAddr == "") {
		fmt.Fprintln(stderr, "skills mcp: give --stdio, --http ADDR or both")
		fs.Usage()
		return 2
	}
	log := newLogger(stderr, *logLevel)
	cfg, err := worker.LoadConfig(*configPath)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		log.Warn("failed to load config, using defaults", "path", *configPath, "err", err)
	}
	tools := skillsmcp.Options{NoSkillTools: *noSkillTools, AllowSideEffects: *allowSideEffects || cfg.MCP.AllowSideEffects,
		AllowSideEffectsSetting: "--allow-side-effects (or mcp.allow_side_effects: true in config.yaml)"}
	hostsCfg, err := loadHostsConfig(*configPath)
	if err != nil {
		log.Warn("host names of the config ignored", "path", *configPath, "err", err)
	}
	httpOpts, err := limits.withHosts(fs, limits.options(*token), hostsCfg)
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

	// The registry publishes its catalog over iii (skillsext.Register).
	backend := &skillsext.Remote{Client: client}
	if *httpAddr != "" {
		stopHTTP, err := startMCPHTTP(ctx, client, *httpAddr, httpOpts, backend, tools, log, nil, "", nil, engineConnected(client))
		if err != nil {
			log.Error("cannot start the MCP endpoint", "addr", *httpAddr, "err", err)
			return 1
		}
		defer stopHTTP()
	}
	if *stdio {
		srv := skillsmcp.New(client, mcpOptions(tools, backend, log))
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
