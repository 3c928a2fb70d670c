package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/history"
)

// adminTokenEnv supplies --admin-token when the flag is not given.
const adminTokenEnv = "SKILLS_ADMIN_TOKEN"

// subcommand is the type of main.go's subcommands table.
type subcommand = struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) int
}

// The version subcommands join the table here, so main.go keeps one line
// of usage per command and nothing else.
func init() {
	subcommands = append(subcommands, subcommand{"versions", runVersions}, subcommand{"diff", runDiff},
		subcommand{"label", runLabel}, subcommand{"rollback", runRollback},
		subcommand{"yank", runYank}, subcommand{"unyank", runUnyank}, subcommand{"deprecate", runDeprecate})
}

// versionCmd is what the version subcommands share: the engine flags, the
// --prompt switch and positional arguments anywhere among the flags.
type versionCmd struct {
	name   string
	fs     *flag.FlagSet
	url    *string
	token  *string
	prompt *bool
	asJSON *bool
	wait   *time.Duration
	stdout io.Writer
	stderr io.Writer
}

func newVersionCmd(name, usage string, stdout, stderr io.Writer) *versionCmd {
	fs := flag.NewFlagSet("skills "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &versionCmd{name: name, fs: fs, stdout: stdout, stderr: stderr,
		url:    fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of the iii engine"),
		token:  fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")"),
		prompt: fs.Bool("prompt", false, "Act on a prompt (by name) instead of a skill"),
		asJSON: fs.Bool("json", false, "Print the function's JSON answer"),
		wait:   fs.Duration("timeout", 30*time.Second, "How long to wait for the engine and the result"),
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: skills %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return c
}

// parse reads flags and positional arguments in any order; want is the
// number of positional arguments.
func (c *versionCmd) parse(args []string, want int) ([]string, int) {
	pos, rc := c.positional(args)
	if rc >= 0 {
		return nil, rc
	}
	if len(pos) != want {
		fmt.Fprintf(c.stderr, "skills %s: expected %d argument(s), got %d (see skills %s --help)\n", c.name, want, len(pos), c.name)
		return nil, 2
	}
	return pos, -1
}

// positional reads flags and returns the positional arguments, in any
// order; rc >= 0 ends the command.
func (c *versionCmd) positional(args []string) ([]string, int) {
	var pos []string
	for {
		if code, ok := parseFlags(c.fs, args, c.stdout, c.stderr); !ok {
			return nil, code
		}
		args = c.fs.Args()
		if len(args) == 0 {
			return pos, -1
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// fn is the function id of op for a skill or a prompt.
func (c *versionCmd) fn(op string) string {
	if *c.prompt {
		return core.KindPrompt.Function(op)
	}
	return core.KindSkill.Function(op)
}

// key is the payload key naming the skill or prompt.
func (c *versionCmd) key() string {
	if *c.prompt {
		return "name"
	}
	return "id"
}

// call triggers fn with payload and returns the result.
func (c *versionCmd) call(fn string, payload map[string]any) (json.RawMessage, int) {
	body, err := json.Marshal(payload)
	if err != nil {
		fmt.Fprintf(c.stderr, "skills %s: %v\n", c.name, err)
		return nil, 2
	}
	if err := probeEngine(*c.url); err != nil {
		fmt.Fprintf(c.stderr, "skills %s: %v\n", c.name, err)
		return nil, 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *c.wait)
	defer cancel()
	client := iii.RegisterWorker(*c.url, iii.WithName("skills-"+c.name), iii.WithAnonymous(),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), withEngineToken(*c.token))
	defer client.Close()
	if err := client.Connect(ctx); err != nil {
		fmt.Fprintf(c.stderr, "skills %s: cannot reach the iii engine at %s: %v\n", c.name, *c.url, err)
		return nil, 1
	}
	out, err := client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: body, Timeout: *c.wait})
	if err != nil {
		fmt.Fprintf(c.stderr, "skills %s: %s: %v\n", c.name, fn, err)
		return nil, 1
	}
	return out, 0
}

// selectorArg turns a VERSION argument into the payload value: a number
// when it is one, else a label or sha256:<hex>.
func selectorArg(s string) any {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return s
}

func runVersions(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("versions", "versions [--prompt] ID", stdout, stderr)
	pos, rc := c.parse(args, 1)
	if rc >= 0 {
		return rc
	}
	out, rc := c.call(c.fn("versions"), map[string]any{c.key(): pos[0]})
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var l history.Listing
	if err := json.Unmarshal(out, &l); err != nil {
		fmt.Fprintf(stderr, "skills versions: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	if l.Deprecated != "" {
		fmt.Fprintf(stdout, "%s is deprecated: %s\n", l.ID, l.Deprecated)
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tREGISTERED_AT\tBYTES\tSHA256\tSIGNED\tLABELS\tMESSAGE\tYANKED")
	for _, v := range l.Versions {
		msg := v.Message
		if v.Author != "" {
			msg = strings.TrimSpace(msg + " (" + v.Author + ")")
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", v.Version, v.RegisteredAt, v.Bytes, clip(v.SHA256, 12), signedText(v),
			strings.Join(v.Labels, ","), msg, v.Yanked)
	}
	_ = tw.Flush()
	return 0
}

// signedText is a version's signature verdict in a listing.
func signedText(v history.Version) string {
	switch {
	case v.SignedBy != nil:
		return *v.SignedBy + " (" + v.Key + ")"
	case v.Key != "":
		return "untrusted key " + v.Key
	}
	return "unsigned"
}

// runYank and runUnyank take a version out of service and put it back.
func runYank(args []string, stdout, stderr io.Writer) int {
	return yankCmd("yank", "yank [--prompt] [--admin-token T] ID VERSION REASON", 3, args, stdout, stderr)
}

func runUnyank(args []string, stdout, stderr io.Writer) int {
	return yankCmd("unyank", "unyank [--prompt] [--admin-token T] ID VERSION", 2, args, stdout, stderr)
}

func yankCmd(name, usage string, want int, args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd(name, usage, stdout, stderr)
	admin := c.fs.String("admin-token", os.Getenv(adminTokenEnv), "Admin token, for a version under a protected label (env "+adminTokenEnv+")")
	pos, rc := c.parse(args, want)
	if rc >= 0 {
		return rc
	}
	payload := map[string]any{c.key(): pos[0], "version": selectorArg(pos[1])}
	if want == 3 {
		payload["reason"] = pos[2]
	}
	if *admin != "" {
		payload["admin_token"] = *admin
	}
	out, rc := c.call(c.fn(name), payload)
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var r core.YankResult
	if err := json.Unmarshal(out, &r); err != nil {
		fmt.Fprintf(stderr, "skills %s: unexpected answer %s: %v\n", name, clip(string(out), 200), err)
		return 1
	}
	state := "in service"
	if r.Yanked != nil {
		state = "yanked (" + *r.Yanked + ")"
	}
	served := "nothing: every version is yanked"
	if r.Served != nil {
		served = "version " + strconv.Itoa(*r.Served)
	}
	note := ""
	if !r.Changed {
		note = ", unchanged"
	}
	fmt.Fprintf(stdout, "%s: version %d is %s%s; reads without a version serve %s\n", r.ID, r.Version, state, note, served)
	return 0
}

// runDeprecate deprecates a skill (or prompt), or with --undo undeprecates it.
func runDeprecate(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("deprecate", "deprecate [--prompt] ID MESSAGE | deprecate [--prompt] --undo ID", stdout, stderr)
	undo := c.fs.Bool("undo", false, "Remove the deprecation")
	want := 2
	for _, a := range args {
		if a == "--undo" || a == "-undo" || a == "--undo=true" {
			want = 1
		}
	}
	pos, rc := c.parse(args, want)
	if rc >= 0 {
		return rc
	}
	payload := map[string]any{c.key(): pos[0], "message": nil}
	if !*undo {
		payload["message"] = pos[1]
	}
	out, rc := c.call(c.fn("deprecate"), payload)
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var r core.DeprecateResult
	if err := json.Unmarshal(out, &r); err != nil {
		fmt.Fprintf(stderr, "skills deprecate: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	if r.Deprecated == nil {
		fmt.Fprintf(stdout, "%s is not deprecated\n", r.ID)
		return 0
	}
	fmt.Fprintf(stdout, "%s is deprecated: %s\n", r.ID, *r.Deprecated)
	return 0
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("diff", "diff [--prompt] ID FROM TO   (versions or labels)", stdout, stderr)
	pos, rc := c.parse(args, 3)
	if rc >= 0 {
		return rc
	}
	out, rc := c.call(c.fn("diff"), map[string]any{c.key(): pos[0], "from": selectorArg(pos[1]), "to": selectorArg(pos[2])})
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var d core.DiffResult
	if err := json.Unmarshal(out, &d); err != nil {
		fmt.Fprintf(stderr, "skills diff: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	if d.Diff == "" {
		fmt.Fprintf(stderr, "%s: versions %d and %d are identical\n", d.ID, d.From, d.To)
		return 0
	}
	fmt.Fprint(stdout, d.Diff)
	return 0
}

func runLabel(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("label", "label [--prompt] [--admin-token T] ID LABEL VERSION", stdout, stderr)
	admin := c.fs.String("admin-token", os.Getenv(adminTokenEnv), "Admin token, for a protected label (env "+adminTokenEnv+")")
	pos, rc := c.parse(args, 3)
	if rc >= 0 {
		return rc
	}
	payload := map[string]any{c.key(): pos[0], "label": pos[1], "version": selectorArg(pos[2])}
	if *admin != "" {
		payload["admin_token"] = *admin
	}
	out, rc := c.call(c.fn("label"), payload)
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var m history.LabelMove
	if err := json.Unmarshal(out, &m); err != nil {
		fmt.Fprintf(stderr, "skills label: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	was := "new label"
	if m.Previous != 0 {
		was = fmt.Sprintf("was %d", m.Previous)
	}
	fmt.Fprintf(stdout, "%s: %s → version %d (%s)\n", m.ID, m.Label, m.Version, was)
	return 0
}

func runRollback(args []string, stdout, stderr io.Writer) int {
	c := newVersionCmd("rollback", "rollback [--prompt] [--message M] [--author A] ID VERSION", stdout, stderr)
	message := c.fs.String("message", "", "Message of the new version (default: rollback to version N)")
	author := c.fs.String("author", "", "Author of the new version")
	pos, rc := c.parse(args, 2)
	if rc >= 0 {
		return rc
	}
	payload := map[string]any{c.key(): pos[0], "version": selectorArg(pos[1])}
	if *message != "" {
		payload["message"] = *message
	}
	if *author != "" {
		payload["author"] = *author
	}
	out, rc := c.call(c.fn("rollback"), payload)
	if rc != 0 {
		return rc
	}
	if *c.asJSON {
		fmt.Fprintln(stdout, prettyOrRaw(out))
		return 0
	}
	var r core.RollbackResult
	if err := json.Unmarshal(out, &r); err != nil {
		fmt.Fprintf(stderr, "skills rollback: unexpected answer %s: %v\n", clip(string(out), 200), err)
		return 1
	}
	if !r.Created {
		fmt.Fprintf(stdout, "%s: version %d already holds version %d's content; nothing changed\n", r.ID, r.Version, r.RolledBack)
		return 0
	}
	fmt.Fprintf(stdout, "%s: version %d now holds version %d's content\n", r.ID, r.Version, r.RolledBack)
	return 0
}
