package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/skillcheck"
)

const checkUsage = `Usage: skills check [--format text|github|json] [--strict] [--url URL] PATH...

Checks skills before they are served, with the registry's own rules and no server:
every PATH is a folder of skills (in precedence order, like --skills-folder: the
earlier wins), a .md skill body a worker publishes (id: the file name without .md)
or a .json ` + rules.FnSkillsRegister + ` payload (or a list of them). It reports what the
server would not serve (Agent Skills frontmatter and folder names, iii id rules,
size caps, frontmatter YAML, skill.toml manifests), what it serves with a
caveat or the Agent Skills specification would not accept (warnings: metadata
that is not a map of strings, a skill file named skill.md, frontmatter keys
outside the specification with the harnesses that read them, a SKILL.md
without a body), relative links to files that do not exist (warnings; errors
with --strict), iii:// links to skills outside the checked set (or, with --url,
not on that registry), section URIs into hidden namespaces, and ids served by
more than one folder with the folder that wins.

Output: one line per problem (FILE:LINE: error|warning: message) and a summary.
Exit status: 1 when there is an error (or a warning with --strict), 2 on a usage
error, else 0.

Flags:
`

// checkRemote resolves links against a running registry (--url).
type checkRemote struct {
	client  *iii.Client
	timeout time.Duration
	fns     map[string]bool // engine::functions::list, read once
}

func (r *checkRemote) HasSkill(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	payload, _ := json.Marshal(map[string]string{"uri": "iii://" + id})
	_, err := r.client.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnSkillFetch, Data: payload, Timeout: r.timeout})
	if err == nil {
		return true, nil
	}
	// Our registry says NOT_FOUND; an upstream one only says it in words.
	var ie *iii.InvocationError
	if errors.As(err, &ie) && (ie.Code == rules.CodeNotFound || strings.HasPrefix(ie.Message, "Skill not found: ")) {
		return false, nil
	}
	return false, err
}

func (r *checkRemote) HasFunction(ctx context.Context, id string) (bool, error) {
	if r.fns == nil {
		ctx, cancel := context.WithTimeout(ctx, r.timeout)
		defer cancel()
		raw, err := r.client.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.FnListFunctions,
			Data: json.RawMessage(`{}`), Timeout: r.timeout})
		if err != nil {
			return false, err
		}
		var out struct {
			Functions []iii.FunctionInfo `json:"functions"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return false, fmt.Errorf("%s: %w", iii.FnListFunctions, err)
		}
		r.fns = map[string]bool{}
		for _, f := range out.Functions {
			r.fns[f.FunctionID] = true
		}
	}
	return r.fns[id], nil
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "text", "output: text (FILE:LINE: severity: message), github (workflow annotations) or json")
	strict := fs.Bool("strict", false, "exit non-zero on warnings too, and report relative links to missing files as errors")
	engineURL := fs.String("url", "", "WebSocket URL of an iii engine with the registry: iii:// links and sections outside the checked set are looked up there")
	timeout := fs.Duration("timeout", 30*time.Second, "with --url: how long to wait for the engine and each answer")
	engineToken := fs.String("engine-token", "", "with --url: worker token the engine requires (env "+engineTokenEnv+")")
	fs.Usage = func() {}
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, checkUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintln(stderr, flagError(fs, err))
		return 2
	}
	switch *format {
	case "text", "github", "json":
	default:
		fmt.Fprintf(stderr, "skills check: --format %q: expected text, github or json\n", *format)
		return 2
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "skills check: no PATH given (for example: skills check .claude/skills)")
		return 2
	}
	ctx := context.Background()
	opts := skillcheck.Options{Paths: paths, Strict: *strict}
	if *engineURL != "" {
		if *engineToken == "" {
			*engineToken = envOr(engineTokenEnv, "")
		}
		if err := probeEngine(*engineURL); err != nil {
			fmt.Fprintf(stderr, "skills check: %v\n", err)
			return 1
		}
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		client := iii.RegisterWorker(*engineURL, iii.WithName("skills-check"), iii.WithAnonymous(),
			iii.WithLogger(slog.New(slog.DiscardHandler)), withEngineToken(*engineToken))
		err := client.Connect(cctx)
		cancel()
		if err != nil {
			client.Close()
			fmt.Fprintf(stderr, "skills check: cannot reach the iii engine at %s: %v\n", *engineURL, err)
			return 1
		}
		defer client.Close()
		opts.Remote = &checkRemote{client: client, timeout: *timeout}
	}
	rep, err := skillcheck.Check(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "skills check: %v\n", err)
		return 1
	}
	rep.Write(stdout, *format)
	if rep.Errors > 0 || *strict && rep.Warnings > 0 {
		return 1
	}
	return 0
}

// parseInterspersed parses flags anywhere among the paths
// (skills check DIR --format github); after "--" everything is a path.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var paths []string
	for {
		if len(args) > 0 && args[0] == "--" {
			return append(paths, args[1:]...), nil
		}
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return paths, nil
		}
		// Parse stops at the first path, or after a "--" it consumed.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(paths, rest...), nil
		}
		paths = append(paths, rest[0])
		args = rest[1:]
	}
}
