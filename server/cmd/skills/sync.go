package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/skillsync"
)

// syncUsage is the synopsis of `skills sync` (docs/sync.md).
const syncUsage = `Usage: skills sync --url URL [--token T] (--dir DIR | --agent NAME[,NAME…] [--scope project|user])
                   [--lock FILE] [--frozen | --check | --watch] [--force] [--query "words"]… [SELECTOR…]

Mirror skills of a registry into the folders agents read, and record them in a lock file.
URL is the registry's HTTP listener (http(s)://host:port, its MCP endpoint) or an iii
engine running it (ws(s)://host:port). A SELECTOR is an id, a namespace ending in '/',
@label (every selected skill at that label), id@N or id@sha256:<hex>; none selects every
skill. skills.yaml in the current folder (or --file) gives the same settings; flags win.

Exit codes: 0 in sync, 1 differs or failed, 2 usage.

Flags:
`

// stringList is a repeatable flag; a comma-separated value adds each part
// (with split).
type stringList struct {
	list  []string
	split bool
}

func (s *stringList) String() string { return strings.Join(s.list, ",") }
func (s *stringList) Set(v string) error {
	if !s.split {
		s.list = append(s.list, v)
		return nil
	}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			s.list = append(s.list, p)
		}
	}
	return nil
}

// syncFlags are the flags of `skills sync`.
type syncFlags struct {
	fs                           *flag.FlagSet
	url, token, dir, scope, lock *string
	file, yank                   *string
	agents, queries              stringList
	frozen, check, watch, force  *bool
	limit                        *int
	timeout, interval            *time.Duration
	selectors                    []string
	stdout, stderr               io.Writer
	targetsGiven                 bool
}

func newSyncFlags(stdout, stderr io.Writer) *syncFlags {
	fs := flag.NewFlagSet("skills sync", flag.ContinueOnError)
	f := &syncFlags{fs: fs, stdout: stdout, stderr: stderr, agents: stringList{split: true}}
	f.url = fs.String("url", "", "The registry: its HTTP listener (http://host:port, the MCP endpoint) or an iii engine running it (ws://host:port)")
	f.token = fs.String("token", "", "Bearer token of the HTTP listener (env "+mcpTokenEnv+"), or the engine's worker token for ws:// (env "+engineTokenEnv+")")
	f.dir = fs.String("dir", "", "Write the skills into this folder")
	fs.Var(&f.agents, "agent", "Write the skills into these agents' folders (comma-separated or repeated; skills sync --help-agents lists them)")
	f.scope = fs.String("scope", "", "Which folders of the agents: project (under the project's root, the default) or user (your home's, for every project)")
	f.lock = fs.String("lock", "", "The lock file (default "+skillsync.DefaultLockFile+" in the current folder)")
	f.file = fs.String("file", "", "The project file (default "+skillsync.DefaultProjectFile+" in the current folder, when there is one)")
	f.frozen = fs.Bool("frozen", false, "Write exactly what the lock says; fail, naming the skill and file, where the registry's content differs")
	f.check = fs.Bool("check", false, "Only compare the folders with the lock (no registry needed): for CI")
	f.watch = fs.Bool("watch", false, "Keep the folders current as the registry changes, until interrupted")
	f.force = fs.Bool("force", false, "Overwrite files edited since the last sync, and files the sync did not write that are in the way")
	fs.Var(&f.queries, "query", "Select the skills the registry's search ranks for these words (repeatable)")
	f.limit = fs.Int("limit", 0, fmt.Sprintf("Most skills one --query selects (default %d, at most %d)", skillsync.DefaultQueryLimit, skillsync.MaxQueryLimit))
	f.yank = fs.String("yank-policy", "", "What to do with a synced version the registry yanked or no longer has: replace (default) or remove")
	f.timeout = fs.Duration("timeout", 10*time.Minute, "How long one sync may take (each round with --watch)")
	f.interval = fs.Duration("interval", time.Minute, "With --watch: a full round this often even without a change notification")
	fs.Bool("help-agents", false, "List the agents --agent takes, with their folders, and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), syncUsage)
		fs.PrintDefaults()
	}
	return f
}

// parse reads flags and selectors in any order.
func (f *syncFlags) parse(args []string) (code int, ok bool) {
	for {
		if code, ok := parseFlags(f.fs, args, f.stdout, f.stderr); !ok {
			return code, false
		}
		if f.fs.NArg() == 0 {
			break
		}
		f.selectors, args = append(f.selectors, f.fs.Arg(0)), f.fs.Args()[1:]
	}
	if flagGiven(f.fs, "help-agents") {
		printAgents(f.stdout)
		return 0, false
	}
	n := 0
	for _, b := range []*bool{f.frozen, f.check, f.watch} {
		if *b {
			n++
		}
	}
	if n > 1 {
		return f.usage("give at most one of --frozen, --check and --watch")
	}
	if *f.dir != "" && len(f.agents.list) > 0 {
		return f.usage("give --dir or --agent, not both")
	}
	if *f.dir != "" && *f.scope != "" {
		return f.usage("--scope chooses among an agent's folders; it goes with --agent, not --dir")
	}
	f.targetsGiven = *f.dir != "" || len(f.agents.list) > 0
	return 0, true
}

func (f *syncFlags) usage(msg string) (int, bool) {
	fmt.Fprintf(f.stderr, "skills sync: %s (skills sync --help)\n", msg)
	return 2, false
}

// printAgents is --help-agents: the agent table and its source.
func printAgents(w io.Writer) {
	fmt.Fprintf(w, "Agents for --agent (from %s):\n\n", skillsync.AgentsSource)
	fmt.Fprintf(w, "  %-16s %-22s %s\n", "NAME", "PROJECT FOLDER", "USER FOLDER")
	for _, a := range append([]skillsync.Agent{skillsync.Universal}, skillsync.Agents...) {
		user := a.User
		if len(a.UserElse) > 0 {
			user += " (else " + strings.Join(a.UserElse, ", else ") + ")"
		}
		fmt.Fprintf(w, "  %-16s %-22s %s\n", a.Name, a.Project, user)
	}
}

// runSync is `skills sync`.
func runSync(args []string, stdout, stderr io.Writer) int {
	f := newSyncFlags(stdout, stderr)
	if code, ok := f.parse(args); !ok {
		return code
	}
	opts, code, ok := f.options()
	if !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "skills sync: %v\n", err)
		return 1
	}
	if *f.check {
		rep, err := skillsync.Check(opts)
		if err != nil {
			return fail(err)
		}
		return f.finish(rep, "check")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	token := f.tokenFor(opts.SourceURL)
	open := func(ctx context.Context) (skillsync.Source, error) {
		return skillsync.Open(ctx, opts.SourceURL, token)
	}
	if *f.watch {
		fmt.Fprintf(stdout, "watching %s (interrupt to stop)\n", opts.SourceURL)
		err := skillsync.Watch(ctx, skillsync.WatchOptions{Options: opts, Open: func(ctx context.Context) (skillsync.Source, error) {
			cctx, cancel := context.WithTimeout(ctx, *f.timeout)
			defer cancel()
			return open(cctx)
		}, Interval: *f.interval, RoundTimeout: *f.timeout, Round: func(rep *skillsync.Report, err error) {
			if err != nil {
				fmt.Fprintf(stderr, "skills sync: %v (trying again)\n", err)
				return
			}
			f.printReport(rep)
			fmt.Fprintf(stdout, "%s synced: %s\n", time.Now().Format("15:04:05"), rep.Summary())
		}})
		if err != nil {
			return fail(err)
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	defer cancel()
	src, err := open(ctx)
	if err != nil {
		return fail(err)
	}
	defer src.Close()
	opts.Source = src
	run, what := skillsync.Sync, "sync"
	if *f.frozen {
		run, what = skillsync.Frozen, "frozen sync"
	}
	rep, err := run(ctx, opts)
	if rep != nil && err != nil {
		f.printReport(rep)
	}
	if err != nil {
		return fail(err)
	}
	return f.finish(rep, what)
}

// finish prints the report and its summary and returns the exit code.
func (f *syncFlags) finish(rep *skillsync.Report, what string) int {
	f.printReport(rep)
	if rep.InSync() {
		fmt.Fprintf(f.stdout, "skills %s: in sync (%s)\n", what, rep.Summary())
		return 0
	}
	fmt.Fprintf(f.stderr, "skills %s: not in sync (%s)\n", what, rep.Summary())
	return 1
}

func (f *syncFlags) printReport(rep *skillsync.Report) {
	for _, n := range rep.Notes {
		fmt.Fprintf(f.stdout, "note: %s\n", n)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(f.stderr, "skills sync: %s\n", p)
	}
}

// tokenFor is --token, else the environment's token for the URL's kind.
func (f *syncFlags) tokenFor(url string) string {
	if *f.token != "" {
		return *f.token
	}
	if strings.HasPrefix(url, "ws") {
		return os.Getenv(engineTokenEnv)
	}
	return os.Getenv(mcpTokenEnv)
}

// options merges the project file and the flags into a run's Options.
func (f *syncFlags) options() (skillsync.Options, int, bool) {
	var opts skillsync.Options
	bad := func(err error) (skillsync.Options, int, bool) {
		code, ok := f.usage(err.Error())
		return opts, code, ok
	}
	path, optional := *f.file, false
	if path == "" {
		path, optional = skillsync.DefaultProjectFile, true
	}
	p, err := skillsync.ReadProject(path, optional)
	if err != nil {
		return bad(err)
	}
	if p == nil {
		cwd, err := os.Getwd()
		if err != nil {
			return bad(err)
		}
		p = &skillsync.Project{Root: cwd}
	}

	// The lock: --lock, else the file's, else ./skills.lock.
	switch {
	case *f.lock != "":
		opts.LockPath = *f.lock
	case p.Lock != "":
		opts.LockPath = p.Resolve(p.Lock)
	default:
		opts.LockPath = skillsync.DefaultLockFile
	}
	yank := *f.yank
	if yank == "" {
		yank = p.YankPolicy
	}
	if yank != "" {
		if opts.YankPolicy, err = skillsync.ParseYankPolicy(yank); err != nil {
			return bad(err)
		}
	}
	opts.Force = *f.force
	opts.Log = f.stdout

	// The source: --url, else the file's, else (--frozen) the lock's only one.
	raw := *f.url
	if raw == "" {
		raw = p.URL
	}
	if raw == "" && *f.frozen {
		if lock, _, err := skillsync.ReadLock(opts.LockPath); err == nil && len(lock.Sources) == 1 {
			for u := range lock.Sources {
				raw = u
			}
		}
	}
	if raw != "" {
		u, err := skillsync.ParseSourceURL(raw)
		if err != nil {
			return bad(err)
		}
		opts.SourceURL = u.String()
	} else if !*f.check {
		return bad(errors.New("say which registry with --url (http://host:port for its HTTP listener, ws://host:port for an iii engine) or url: in " + skillsync.DefaultProjectFile))
	}

	// The selection: selectors and queries on the command line replace the file's.
	selectors, queries := p.Selectors, p.Queries
	if len(f.selectors) > 0 || len(f.queries.list) > 0 {
		selectors, queries = f.selectors, f.queries.list
	}
	limit := *f.limit
	if limit == 0 {
		limit = p.QueryLimit
	}
	if opts.Selection, err = skillsync.NewSelection(selectors, queries, limit); err != nil {
		return bad(err)
	}

	// The targets: --dir or --agent, else the file's.
	if opts.Targets, err = f.targets(p); err != nil {
		var unknown *skillsync.UnknownAgentError
		if errors.As(err, &unknown) {
			msg := fmt.Sprintf("unknown agent %q", unknown.Name)
			if near := suggestAgent(unknown.Name); near != "" {
				msg += "; did you mean " + near + "?"
			}
			fmt.Fprintf(f.stderr, "skills sync: %s (skills sync --help-agents lists them)\n", msg)
			return opts, 2, false
		}
		return bad(err)
	}
	if len(opts.Targets) == 0 && !*f.check && !*f.frozen {
		return bad(errors.New("say where to write with --dir DIR or --agent NAME (e.g. --agent claude-code), or dir: / agents: in " + skillsync.DefaultProjectFile))
	}
	return opts, 0, true
}

// suggestAgent is the agent name meant by a near miss ("claude" →
// claude-code).
func suggestAgent(name string) string {
	if near := app.Suggest(name, skillsync.AgentNames()); near != "" {
		return near
	}
	for _, n := range skillsync.AgentNames() {
		if strings.HasPrefix(n, name+"-") {
			return n
		}
	}
	return ""
}

// targets resolves --dir / --agent (or the project file's) to folders.
func (f *syncFlags) targets(p *skillsync.Project) ([]skillsync.Target, error) {
	dir, agents, scopeName := *f.dir, f.agents.list, *f.scope
	fromFile := !f.targetsGiven
	if fromFile {
		dir, agents = p.Resolve(p.Dir), p.Agents
	}
	if scopeName == "" {
		scopeName = p.Scope
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		return []skillsync.Target{{Path: abs}}, nil
	}
	if len(agents) == 0 {
		return nil, nil
	}
	scope := skillsync.ScopeProject
	if scopeName != "" {
		var err error
		if scope, err = skillsync.ParseScope(scopeName); err != nil {
			return nil, err
		}
	}
	// In a project, no folder between its root and the target may be a
	// link (a repository could point .claude at ~/.ssh); in the home
	// folder, links above the target are the user's own (dotfile managers).
	env, base := skillsync.Env{}, p.Root
	if scope == skillsync.ScopeUser {
		var err error
		if env, err = skillsync.OSEnv(); err != nil {
			return nil, err
		}
		base = ""
	}
	seen := map[string]bool{}
	var out []skillsync.Target
	for _, name := range agents {
		a, ok := skillsync.FindAgent(name)
		if !ok {
			return nil, &skillsync.UnknownAgentError{Name: name}
		}
		folder := a.Folder(scope, p.Root, env)
		if !seen[folder] {
			seen[folder] = true
			t := skillsync.Target{Path: folder}
			if base != "" && strings.HasPrefix(folder, base+string(filepath.Separator)) {
				t.Base = base
			}
			out = append(out, t)
		}
	}
	return out, nil
}
