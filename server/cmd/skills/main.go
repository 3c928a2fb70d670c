// Command skills is the iii skills registry worker.
//
//	skills [--config PATH] [--url URL]           worker mode: dial an iii engine
//	skills --standalone [--url URL] [--data DIR] embedded engine + worker in one process
//	skills --manifest                            print the module manifest and exit
//	skills trigger --function-id ID [--payload JSON|@FILE|-] [--url URL]
//	                                             call any function and print its result
//	skills search [--limit N] [--namespace NS] QUERY... rank the registry's skills
//	skills mcp --stdio | --http-addr ADDR [--url URL]  serve the registry over MCP
//	skills sp-tools [--format F]                 print the Skills Protocol tool definitions
//	skills add [--url URL] SOURCE…               register the skills of folders, archives, git repositories
//	skills sign --key FILE [FILE|-]              print the SSH signature of a skill body
//	skills verify --allowed-signers FILE ID[@V]  check a version's signature on the reader's side
//	skills help [COMMAND]                        usage of skills or of one command (stdout)
//
// This file only dispatches: the server itself is assembled by package
// server/internal/app (Config, Load, Start); each subcommand lives in its own file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/worker"
)

func main() {
	// A registry on an external engine keeps every skill body in its heap:
	// strings the collector never scans. Collecting at 50 % growth instead
	// of 100 % costs little CPU and keeps the resident size near 1.5x the
	// bodies instead of 2x. The standalone registry keeps bodies in its
	// store (runWorker raises it to standaloneGCPercent). GOGC, when set,
	// still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// standaloneGCPercent is the collector's growth target of `skills
// --standalone`, whose heap holds no skill bodies (they stay in the
// store): at 50 % its small heap would be collected twice as often as the
// bodies' did, for the same CPU it takes 75 % (docs/benchmarks.md, "Memory
// right after a burst").
const standaloneGCPercent = 75

// usageCommands is the command list of `skills --help`: one entry per
// subcommand (TestHelpListsEverySubcommand holds it to the table below).
const usageCommands = `  skills [flags]                                          the registry worker (--standalone: with its own engine)
  skills trigger --function-id ID [--payload JSON|@FILE|-] [--url URL] [--timeout D]
                                                          call any function and print its result
  skills search [--limit N] [--namespace NS] [--json] [--url URL] QUERY...
                                                          rank the registry's skills for a task (` + rules.FnSkillsSearch + `)
  skills mcp --stdio | --http-addr ADDR [--url URL] [--mcp-token T]
                                                          serve the registry to MCP clients (stdin/stdout or
                                                          Streamable HTTP at http://ADDR/mcp; both flags: both)
  skills sp-tools [--format schema|openai|anthropic]      print the Skills Protocol tool definitions
  skills check [--format text|github|json] [--strict] [--url URL] PATH...
                                                          check folders of skills and skill files offline
  skills sync --url URL (--dir DIR | --agent NAME[,NAME…] [--scope project|user]) [--lock FILE]
              [--frozen | --check | --watch] [SELECTOR…]
                                                          mirror registry skills into agents' folders, with a lock
  skills add [--url URL] [--token T] [--dry-run] [--sign-key FILE] SOURCE…
                                                          register the skills of folders, archives (.zip, .tar.gz) and
                                                          git repositories (URL or owner/repo, #ref, :subfolder)
  skills sign --key FILE [--prompt] [FILE|-]              print the SSH signature of a skill body (or of a prompt
                                                          definition's canonical JSON) for signature
  skills verify --allowed-signers FILE [--prompt] ID[@VERSION]
                                                          check a version's signature against your own allowed_signers
  skills versions [--prompt] ID                           list a skill's (or prompt's) versions and labels
  skills diff [--prompt] ID FROM TO                       unified diff between two versions or labels
  skills label [--prompt] ID LABEL VERSION                point a label at a version (--admin-token if protected)
  skills rollback [--prompt] ID VERSION                   make a version's content the newest version again
  skills unregister [--prompt] ID                         remove a published skill (or prompt), as its owner
  skills usage [--prompt] [--since DAY] [--limit N] [ID]  reads per skill and version, by surface, client and day
  skills yank [--prompt] ID VERSION REASON                take a version out of service
  skills unyank [--prompt] ID VERSION                     put a yanked version back in service
  skills deprecate [--prompt] ID MESSAGE | --undo ID      mark a skill deprecated (it stays served)
  skills help [COMMAND]                                   this text, or the flags of one command
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
	{"sync", runSync},
	{"add", runAdd},
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

// workerFlags is the flag set of `skills`: --config and --manifest, and
// every setting of the server bound to cfg (app.Config.AddFlags).
func workerFlags(cfg *app.Config) (fs *flag.FlagSet, configPath *string, manifest *bool) {
	fs = flag.NewFlagSet("skills", flag.ContinueOnError)
	configPath, manifest = new(string), new(bool)
	declareWorkerFlags(fs, cfg, configPath, manifest)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nUsage:\n%s\nFlags:\n", worker.About, usageCommands)
		// The defaults as they are before the environment and the file
		// (a token from the environment is no default to print).
		printFlags(fs.Output(), func(help *flag.FlagSet) {
			fresh := app.DefaultConfig()
			declareWorkerFlags(help, &fresh, new(string), new(bool))
		}, nil)
	}
	return fs, configPath, manifest
}

func declareWorkerFlags(fs *flag.FlagSet, cfg *app.Config, configPath *string, manifest *bool) {
	fs.StringVar(configPath, "config", "./config.yaml", "Path to config.yaml (a missing file keeps the defaults; a malformed one, unknown keys or another program's config stop the start)")
	fs.BoolVar(manifest, "manifest", false, "Output the module manifest as JSON and exit")
	cfg.AddFlags(fs)
}

// runWorker is `skills [flags]`: defaults, then config.yaml, then the
// environment, then the flags, then app.Start.
func runWorker(args []string, stdout, stderr io.Writer) int {
	cfg := app.DefaultConfig()
	cfg.ApplyEnv()
	fs, configPath, manifest := workerFlags(&cfg)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		unknownCommand(stderr, fs.Arg(0))
		return 2
	}
	if *manifest {
		fmt.Fprintln(stdout, string(worker.ManifestJSON()))
		return 0
	}
	loaded, loadErr := app.Load(*configPath)
	if loadErr != nil && !errors.Is(loadErr, app.ErrNoFile) {
		fmt.Fprintf(stderr, "skills: %v\n", loadErr)
		return 2
	}
	// The flags again, over the file: a flag given wins over its key.
	loaded.ApplyEnv()
	again, _, _ := workerFlags(&loaded)
	again.SetOutput(io.Discard)
	if err := again.Parse(args); err != nil {
		fmt.Fprintf(stderr, "skills: %v\n", err)
		return 2
	}
	cfg = loaded
	log := newLogger(stderr, cfg.LogLevel)
	if loadErr != nil {
		log.Warn("failed to load config, using defaults", "path", *configPath, "err", loadErr)
	} else {
		log.Info("loaded config from " + *configPath)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "skills: %v\n", err)
		return 2
	}
	cfg.Logger = log
	if cfg.Engine.Standalone && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(standaloneGCPercent)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			log.Info("skills shutting down")
			return 0
		}
		// Start logs nothing of its errors: this is the one line that says
		// why, plain like every other error that stops skills (a log
		// line would quote and escape it).
		fmt.Fprintf(stderr, "skills: %v\n", err)
		return 1
	}
	defer srv.Close()
	select {
	case <-ctx.Done():
	case err := <-srv.Lost():
		log.Error("skills cannot serve after reconnecting: "+err.Error(), "url", srv.EngineURL)
		fmt.Fprintf(stderr, "skills: lost its functions: %v\n", err)
		return 1
	}
	log.Info("skills shutting down")
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
