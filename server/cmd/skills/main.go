// Command skills is the iii skills registry worker.
//
//	skills [--config PATH] [--url URL]           worker mode: dial an iii engine
//	skills --standalone [--url URL] [--data DIR] embedded engine + worker in one process
//	skills --manifest                            print the module manifest and exit
//	skills trigger --function-id ID [--payload JSON|@FILE|-] [--url URL]
//	                                             call any function and print its result
//	skills search [--limit N] [--namespace NS] QUERY... rank the registry's skills
//	skills mcp --stdio | --http ADDR [--url URL] serve the registry over MCP
//	skills sp-tools [--format F]                 print the Skills Protocol tool definitions
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/catalog"
	"github.com/iii-skills/skills/server/engine"
	skillsmcp "github.com/iii-skills/skills/server/mcp"
	"github.com/iii-skills/skills/server/skillsext"
	"github.com/iii-skills/skills/server/skillsprotocol"
	"github.com/iii-skills/skills/server/worker"
)

func main() {
	// The registry's live heap is mostly skill bodies: strings the collector
	// never scans. Collecting at 50 % growth instead of 100 % costs little
	// CPU and keeps the resident size near 1.5x the bodies instead of 2x.
	// GOGC, when set, still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageCommands is the command list of `skills --help`: one entry per
// subcommand (TestHelpListsEverySubcommand holds it to the table below).
const usageCommands = `  skills [flags]                                          the registry worker (--standalone: with its own engine)
  skills trigger --function-id ID [--payload JSON|@FILE|-] [--url URL] [--timeout D]
                                                          call any function and print its result
  skills search [--limit N] [--namespace NS] [--json] [--url URL] QUERY...
                                                          rank the registry's skills for a task (skills::search)
  skills mcp --stdio | --http ADDR [--url URL] [--token T]
                                                          serve the registry to MCP clients (stdin/stdout or
                                                          Streamable HTTP at http://ADDR/mcp; both flags: both)
  skills sp-tools [--format schema|openai|anthropic]      print the Skills Protocol tool definitions
  skills check [--format text|github|json] [--strict] [--url URL] PATH...
                                                          check folders of skills and skill files offline
  skills versions [--prompt] ID                           list a skill's (or prompt's) versions and labels
  skills diff [--prompt] ID FROM TO                       unified diff between two versions or labels
  skills label [--prompt] ID LABEL VERSION                point a label at a version (--admin-token if protected)
  skills rollback [--prompt] ID VERSION                   make a version's content the newest version again
`

// subcommands are the first arguments run dispatches on; anything else is a
// flag of the worker itself.
var subcommands = []struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
}{
	{"trigger", func(args []string, stdout, stderr io.Writer) int { return runTrigger(args, os.Stdin, stdout, stderr) }},
	{"search", runSearch},
	{"mcp", runMCP},
	{"sp-tools", runSPTools},
	{"check", runCheck},
}

// subcommandNames is "trigger, mcp, sp-tools", for the error on a stray argument.
func subcommandNames() string {
	names := make([]string, len(subcommands))
	for i, c := range subcommands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		for _, c := range subcommands {
			if args[0] == c.name {
				return c.run(args[1:], stdout, stderr)
			}
		}
	}
	return runWorker(args, stdout, stderr)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}))
}

func runWorker(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "./config.yaml", "Path to config.yaml")
	engineURL := fs.String("url", iii.DefaultEngineURL, "WebSocket URL of the iii engine")
	manifest := fs.Bool("manifest", false, "Output the module manifest as JSON and exit")
	standalone := fs.Bool("standalone", false, "Start an embedded iii engine on the --url address and run the worker against it")
	resultHold := fs.Duration("result-hold", 0, "Against an external engine, send each function result no sooner than this after its call arrived (iii 0.23 loses faster results: docs/upstream-engine-race.md); 0 disables")
	resultResend := fs.Duration("result-resend", 50*time.Millisecond, "Against an external engine, send each function result again this long after the first (iii 0.23 drops a result that beat its bookkeeping and drops the copy of one it delivered: docs/upstream-engine-race.md); 0 disables")
	engineOnly := fs.Bool("engine-only", false, "With --standalone: run only the embedded engine, without the registry worker (to host another registry, e.g. upstream's)")
	dataDir := fs.String("data", ".data", "Directory of durable state: the embedded engine's (with --standalone) and the Skills Protocol store (blobs, published bundles) of the worker")
	strictFetch := fs.Bool("strict-fetch", false, "Reject bare skill paths in skill::fetch, exactly like upstream v0.2.2")
	logLevel := fs.String("log-level", envOr("SKILLS_LOG", "info"), "Log level: debug, info, warn or error")
	mcpAddr := fs.String("mcp-addr", defaultMCPAddr, "Serve MCP Streamable HTTP at http://ADDR/mcp and the Skills Protocol at http://ADDR/rpc (empty disables)")
	mcpToken := fs.String("mcp-token", os.Getenv(mcpTokenEnv), "Bearer token required by the MCP and Skills Protocol endpoints (env "+mcpTokenEnv+")")
	mcpNoSkillTools := fs.Bool("mcp-no-skill-tools", false, "Leave out the MCP tools list_skills and read_skill (for clients that read skill:// resources themselves)")
	mcpAllowSideEffects := fs.Bool("mcp-allow-side-effects", false, sideEffectsUsage)
	rpcPath := fs.String("rpc-path", skillsprotocol.Path, "Path of the Skills Protocol JSON-RPC endpoint on the --mcp-addr listener (empty disables)")
	spBundles := fs.String("sp-bundles", "", "Comma-separated folders of Skills Protocol bundles (skill.toml) to serve")
	mcpLimits := mcpSessionFlags(fs, "mcp-")
	engineToken := fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token: with --standalone every worker must present it to the embedded engine (Authorization: Bearer, or ?token= in its URL); this worker presents it to the engine it dials (env "+engineTokenEnv+")")
	sectionDepth := fs.Int("section-max-depth", worker.DefaultSectionMaxDepth, "How many section reads (iii://fn/…) may nest; a cycle is refused at once")
	sectionBytes := fs.Int("section-max-bytes", worker.DefaultSectionMaxBytes, "Largest section output served; larger ones fail with \"section output too large (N bytes; max M)\"")
	engineHosts := fs.String("engine-allow-host", "", "With --standalone: comma-separated Host names the engine socket answers to besides loopback names and the listen address (iii.example.com, *.example.com, *) (config engine_allow_host)")
	allowOrigins := fs.String("engine-allow-origin", "", "With --standalone: comma-separated browser origins (https://app.example) allowed to open the engine socket besides loopback pages; clients that send no Origin are always allowed")
	maxConns := fs.Int("engine-max-connections", engine.DefaultMaxConnections, "With --standalone: most sockets the embedded engine keeps open at once; more are refused with 503 until some close")
	claimTimeout := fs.Duration("claim-timeout", DefaultClaimTimeout, "How long the worker keeps asking for function ids another worker holds before it exits non-zero (it is not ready until it owns all of them)")
	pprofAddr := fs.String("pprof-addr", "", "Serve Go runtime profiles at http://ADDR/debug/pprof/ (loopback addresses only; empty disables)")
	applyVersionFlags := versionFlags(fs)
	var skillsFolders folderFlags
	fs.Var(&skillsFolders, "skills-folder", "Serve skills from this folder (repeatable, earlier wins; overrides config skills_folder)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nUsage:\n%s\nFlags:\n", worker.About, usageCommands)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "skills: unexpected argument %q (subcommands: %s)\n", fs.Arg(0), subcommandNames())
		return 2
	}
	if *manifest {
		fmt.Fprintln(stdout, string(worker.ManifestJSON()))
		return 0
	}
	log := newLogger(stderr, *logLevel)

	cfg, err := worker.LoadConfig(*configPath)
	if err != nil {
		log.Warn("failed to load config, using defaults", "path", *configPath, "err", err)
	} else {
		log.Info("loaded config from " + *configPath)
	}

	hostsCfg, err := loadHostsConfig(*configPath)
	if err != nil {
		// Like the rest of the config: warn and go on; the listeners then
		// answer loopback names only (403 names the setting).
		log.Warn("host names of the config ignored", "path", *configPath, "err", err)
	}
	httpOpts, err := mcpLimits.withHosts(fs, mcpLimits.options(*mcpToken), hostsCfg)
	if err != nil {
		fmt.Fprintf(stderr, "skills: %v\n", err)
		return 2
	}
	engineAllowHosts, err := allowedHosts(fs, "engine-allow-host", *engineHosts, hostsCfg.EngineAllowHost, "engine_allow_host")
	if err != nil {
		fmt.Fprintf(stderr, "skills: %v\n", err)
		return 2
	}

	if *pprofAddr != "" {
		stopPprof, err := startPprof(*pprofAddr, log)
		if err != nil {
			fmt.Fprintf(stderr, "skills: %v\n", err)
			return 2
		}
		defer stopPprof()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	target := *engineURL
	var eng *engine.Engine
	if *standalone {
		addr, err := listenAddr(*engineURL)
		if err != nil {
			log.Error("invalid --url for --standalone", "url", *engineURL, "err", err)
			return 2
		}
		scoped, err := loadScopedTokens(*configPath, *engineToken)
		if err != nil {
			log.Error("invalid engine_tokens", "err", err)
			return 2
		}
		// Sockets are held until the registry owns its functions
		// (AcceptSockets below): no client can race it for its ids.
		eng, err = engine.New(engine.Config{Addr: addr, DataDir: *dataDir, Logger: log,
			Token: *engineToken, AllowedOrigins: splitList(*allowOrigins), AllowedOriginsSetting: "--engine-allow-origin", MaxConnections: *maxConns,
			AllowedHosts: engineAllowHosts, AllowedHostsSetting: "--engine-allow-host (config engine_allow_host)",
			ScopedTokens: scoped, HoldSockets: !*engineOnly})
		if err != nil {
			log.Error("cannot open the embedded engine", "data", *dataDir, "err", err)
			return 1
		}
		if err := eng.Start(); err != nil {
			log.Error("cannot start the embedded engine", "addr", addr, "err", err)
			_ = eng.Close()
			return 1
		}
		defer eng.Close()
		target = eng.URL()
		if *engineOnly {
			log.Info("embedded engine only (no registry worker)", "url", target)
			<-ctx.Done()
			log.Info("skills shutting down")
			return 0
		}
	}

	opts := []iii.Option{iii.WithName(worker.Name), iii.WithDescription(worker.Description), iii.WithLogger(log),
		withEngineToken(*engineToken)}
	if eng != nil {
		// The worker reaches its own engine through an in-process
		// connection: the same frames through the same client and engine
		// code, without two loopback hops per call. Other workers still
		// dial the socket.
		opts = append(opts, iii.WithNetDialer(eng.DialContext))
	} else {
		opts = append(opts, iii.WithResultHold(*resultHold), iii.WithResultResend(*resultResend))
	}
	// New, not RegisterWorker: the first handshake already carries every
	// function and trigger type, so no caller ever sees a half-registered
	// registry.
	client := iii.New(target, opts...)
	// The catalog every surface reads; its MCP Skills extension view is
	// served in-process and, for `skills mcp`, over iii.
	cat := catalog.New()
	view := skillsext.NewView(cat)
	defer view.Close()
	defer trimAfterChanges(cat, trimBytes, trimQuiet)()
	wopts := worker.Options{StrictFetch: *strictFetch, Logger: log, Catalog: cat,
		SectionMaxDepth: *sectionDepth, SectionMaxBytes: *sectionBytes}
	if eng != nil {
		// Cold loads read the embedded store directly (see ListState).
		wopts.ListState = eng.ListState
	}
	applyVersionFlags(&wopts, eng)
	w := worker.New(client, cfg, wopts)
	if err := w.Register(); err != nil {
		log.Error("cannot register the registry functions", "err", err)
		return 1
	}
	defer w.Close()
	if err := registerCallerProbe(client); err != nil {
		log.Error("cannot register the registry functions", "err", err)
		return 1
	}
	if err := skillsext.Register(ctx, client, view, log); err != nil {
		log.Error("cannot register the catalog functions", "err", err)
		return 1
	}
	if *rpcPath != "" && !strings.HasPrefix(*rpcPath, "/") {
		fmt.Fprintf(stderr, "skills: --rpc-path %q must start with / (e.g. /rpc), or be empty to disable the endpoint\n", *rpcPath)
		return 2
	}
	sp, spStore, err := newSkillsProtocol(client, cat, *spBundles, *configPath, *dataDir, log)
	if err != nil {
		log.Error("cannot start the Skills Protocol runtime", "err", err)
		return 1
	}
	defer spStore.Close()
	defer sp.Close()
	sp.SetSkillHistory(w.SkillVersionBody) // describe_skill / read_skill_file `version` (docs/versions.md)
	stopFolders, err := startFolders(client, cat, cfg, skillsFolders, sp, log)
	if err != nil {
		log.Error("cannot serve the skills folders", "err", err)
		return 1
	}
	defer stopFolders()
	log.Info("connecting to the iii engine", "url", target)
	if err := client.Connect(ctx); err != nil {
		if ctx.Err() != nil {
			log.Info("skills shutting down")
			return 0
		}
		log.Error("cannot connect to the iii engine", "url", target, "err", err)
		return 1
	}
	claimed, err := claimFunctions(ctx, client, *claimTimeout, log)
	if err != nil {
		if ctx.Err() != nil {
			log.Info("skills shutting down")
			return 0
		}
		log.Error("skills cannot serve: "+err.Error(), "url", target)
		fmt.Fprintf(stderr, "skills: not ready: %v\n", err)
		return 1
	}
	// Our engine stamps the caller on every invocation; the registry's
	// ownership rules trust that stamp only then.
	w.SetCallerStamped(claimed.stampsCaller)
	if eng != nil {
		if err := eng.AcceptSockets(); err != nil {
			log.Error("cannot open the embedded engine to other workers", "err", err)
			return 1
		}
	}
	w.Start(ctx)
	lost := reclaimOnReconnect(ctx, client, *claimTimeout, log)
	log.Info("skills ready: 13 functions + skills::search / skill::search + 2 custom trigger types")
	if *standalone {
		log.Info("publish into it with III_URL=" + target + " (for example: make example-go)")
	}
	if *mcpAddr != "" {
		tools := skillsmcp.Options{NoSkillTools: *mcpNoSkillTools, AllowSideEffects: *mcpAllowSideEffects || cfg.MCP.AllowSideEffects,
			AllowSideEffectsSetting: "--mcp-allow-side-effects (or mcp.allow_side_effects: true in config.yaml)"}
		if stopMCP, err := startMCPHTTP(ctx, client, *mcpAddr, httpOpts, view, tools, log, sp, *rpcPath, cat, w.Ready); err != nil {
			log.Warn("HTTP endpoints (MCP, Skills Protocol) not started (the registry runs without them; choose another --mcp-addr)", "addr", *mcpAddr, "err", err)
		} else {
			defer stopMCP()
		}
	}
	select {
	case <-ctx.Done():
	case err := <-lost:
		log.Error("skills cannot serve after reconnecting: "+err.Error(), "url", target)
		fmt.Fprintf(stderr, "skills: lost its functions: %v\n", err)
		_ = client.Close()
		return 1
	}
	log.Info("skills shutting down")
	_ = client.Close()
	return 0
}

// listenAddr turns ws://host:port into the host:port to listen on.
func listenAddr(raw string) (string, error) {
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func runTrigger(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills trigger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	functionID := fs.String("function-id", "", "Function to call (required)")
	payload := fs.String("payload", "{}", "JSON payload: the JSON text itself, @FILE to read it from a file, or - to read stdin (no size limit)")
	engineURL := fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of the iii engine")
	timeout := fs.Duration("timeout", 30*time.Second, "How long to wait for the engine and the result")
	engineToken := fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *functionID == "" {
		fmt.Fprintln(stderr, "skills trigger: --function-id is required (for example --function-id skills::list)")
		return 2
	}
	body, err := readPayload(*payload, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "skills trigger: %v\n", err)
		return 2
	}
	// Say at once when nothing listens instead of retrying until --timeout.
	if err := probeEngine(*engineURL); err != nil {
		fmt.Fprintf(stderr, "skills trigger: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	client := iii.RegisterWorker(*engineURL, iii.WithName("skills-trigger"),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), withEngineToken(*engineToken))
	defer client.Close()
	if err := client.Connect(ctx); err != nil {
		fmt.Fprintf(stderr, "skills trigger: cannot reach the iii engine at %s: %v\n", *engineURL, err)
		return 1
	}
	out, err := client.Trigger(ctx, iii.TriggerRequest{FunctionID: *functionID, Data: json.RawMessage(body), Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "skills trigger: %s: %v\n", *functionID, err)
		return 1
	}
	fmt.Fprintln(stdout, prettyOrRaw(out))
	return 0
}

// prettyOrRaw indents a JSON result; a string result prints as its text so
// markdown (skill::fetch) reads naturally.
func prettyOrRaw(out json.RawMessage) string {
	if len(bytes.TrimSpace(out)) == 0 {
		return "null"
	}
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Indent(&buf, out, "", "  ") != nil {
		return string(out)
	}
	return strings.TrimRight(buf.String(), "\n")
}
