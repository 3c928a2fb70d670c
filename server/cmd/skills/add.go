package main

// skills add [flags] SOURCE…: register the skills of folders, archives and
// git repositories as published versions (server/internal/skilladd).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/skilladd"
)

// forgeEnv supplies --forge when the flag is not given.
const forgeEnv = "SKILLS_FORGE"

const addUsage = `Usage: skills add [flags] SOURCE…

Registers the skills of each SOURCE as published versions (` + rules.FnSkillsRegister + `),
with where they came from in each version's message. A SOURCE is:
  ./folder             one skill (SKILL.md inside) or a folder of skills, read
                       exactly as the server reads --skills-folder
  skills.zip, .tar.gz  an archive (one skill, or a folder of skills)
  https://host/…/pdf.zip (.tar.gz, .tgz, .tar)
                       an archive to download, such as a registry's own
                       (http://host/archive/acme/pdf@3.zip)
  https://host/o/r, ssh://…, git@host:o/r, owner/repo (on --forge)
                       a git repository, fetched with git (depth 1, no
                       submodules, no checkout)
  any of them + #ref (a branch, tag or commit; not for archives) and/or :subfolder,
  e.g. owner/repo#v1.2:skills/pdf, ./skills.zip:pdf, ./repo#main
Everything is checked before anything is registered; a SOURCE the registry
refuses part-way is undone. With --sign-key every body is signed (SSHSIG,
namespace ` + rules.SignatureNamespace + `) and the signature sent with it, for registries that
require signatures (docs/trust.md). Exit 0: all added; 1: refused or failed;
2: usage.

Flags:
`

func runAdd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills add", flag.ContinueOnError)
	engineURL := fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of the iii engine of the registry")
	var token string
	fs.StringVar(&token, "token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")")
	fs.StringVar(&token, "engine-token", os.Getenv(engineTokenEnv), "Same as --token")
	var o skilladd.Options
	fs.StringVar(&o.Forge, "forge", envOr(forgeEnv, skilladd.DefaultForge), "Where owner/repo points: an https:// URL or git@host: (env "+forgeEnv+")")
	fs.StringVar(&o.Namespace, "namespace", "", "Put NS/ before every id (team → team/pdf)")
	only := fs.String("only", "", "Comma-separated ids (as the source names them): add only these, ignore the rest of the source")
	fs.BoolVar(&o.SkipFiles, "skip-files", false, "Register a skill with supporting files (scripts/, references/, …) as its SKILL.md alone (a published skill holds no files); without it such a skill is refused")
	fs.StringVar(&o.Message, "message", "", "Message of every new version (the provenance line is added after it)")
	fs.StringVar(&o.Author, "author", "", "Author of every new version")
	fs.DurationVar(&o.GitTimeout, "git-timeout", 5*time.Minute, "How long one git fetch or archive download may take")
	fs.Int64Var(&o.MaxDownload, "max-download", 256<<20, "Bytes a repository may take at depth 1, or an archive download")
	fs.DurationVar(&o.OwnerWait, "owner-wait", 5*time.Second, "How long to retry an id another connection still holds (the previous skills add's, until the engine sees it close)")
	signKey := fs.String("sign-key", "", "Sign every skill it registers with this private key file (as ssh-keygen writes it; an encrypted one through the ssh-agent at $SSH_AUTH_SOCK), namespace "+rules.SignatureNamespace)
	dryRun := fs.Bool("dry-run", false, "Check the SOURCEs and print what would be registered, without a registry")
	asJSON := fs.Bool("json", false, "Print the result as JSON (ids, versions, provenance, what was left out)")
	wait := fs.Duration("timeout", 30*time.Second, "How long to wait for the engine and for each call")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), addUsage)
		fs.PrintDefaults()
	}
	var sources []string
	for {
		if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
			return code
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		sources = append(sources, args[0])
		args = args[1:]
	}
	if len(sources) == 0 {
		fmt.Fprintln(stderr, "skills add: give at least one SOURCE: a folder, an archive or a git repository (skills add --help)")
		return 2
	}
	if *only != "" {
		o.Only = app.SplitList(*only)
	}
	if *signKey != "" {
		signer, err := loadCLISigner(*signKey)
		if err != nil {
			fmt.Fprintf(stderr, "skills add: --sign-key: %v\n", err)
			return 1
		}
		o.Signer = signer
	}
	// Say at once when no registry listens, before fetching anything.
	if !*dryRun {
		if err := probeEngine(*engineURL); err != nil {
			fmt.Fprintf(stderr, "skills add: %v\n", err)
			return 1
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plans, err := skilladd.Plan(ctx, sources, o)
	if err != nil {
		fmt.Fprintf(stderr, "skills add: %v\n", err)
		return 1
	}
	if *dryRun {
		return printPlans(stdout, plans, *asJSON)
	}
	cctx, ccancel := context.WithTimeout(ctx, *wait)
	defer ccancel()
	client := iii.RegisterWorker(*engineURL, iii.WithName("skills-add"), iii.WithAnonymous(),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), withEngineToken(token))
	defer client.Close()
	if err := client.Connect(cctx); err != nil {
		fmt.Fprintf(stderr, "skills add: cannot reach the iii engine at %s: %v\n", *engineURL, err)
		return 1
	}
	call := func(ctx context.Context, fn string, payload any) (json.RawMessage, error) {
		body, err := json.Marshal(payload)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, *wait)
		defer cancel()
		return client.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: body, Timeout: *wait})
	}
	rep, err := skilladd.Add(ctx, call, plans, o)
	if rep != nil {
		if *asJSON {
			out, _ := json.MarshalIndent(rep, "", "  ")
			fmt.Fprintln(stdout, string(out))
		} else {
			printReport(stdout, rep)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "skills add: %v\n", err)
		return 1
	}
	return 0
}

// printPlans is --dry-run's output.
func printPlans(w io.Writer, plans []skilladd.Planned, asJSON bool) int {
	if asJSON {
		out, _ := json.MarshalIndent(plans, "", "  ")
		fmt.Fprintln(w, string(out))
		return 0
	}
	for _, p := range plans {
		for _, s := range p.Skills {
			fmt.Fprintf(w, "would register %s (sha256 %s)  %s\n", s.ID, s.SHA256[:12], strings.TrimPrefix(s.Provenance.Line(), "skills add: "))
			printDetails(w, s, "")
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
	return 0
}

func printReport(w io.Writer, rep *skilladd.Report) {
	for _, sr := range rep.Sources {
		for _, a := range sr.Skills {
			switch a.Status {
			case skilladd.StatusUndone:
				fmt.Fprintf(w, "undone %s  %s\n", a.ID, strings.TrimPrefix(a.Provenance.Line(), "skills add: "))
			default:
				fmt.Fprintf(w, "%s %s version %d  %s\n", a.Status, a.ID, a.Version, strings.TrimPrefix(a.Provenance.Line(), "skills add: "))
			}
			printDetails(w, a.Skill, a.Shadows)
		}
		for _, n := range sr.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
}

func printDetails(w io.Writer, s skilladd.Skill, shadows string) {
	for _, l := range s.LeftOut {
		fmt.Fprintf(w, "  left out: %s\n", l)
	}
	for _, x := range s.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	if shadows != "" {
		fmt.Fprintf(w, "  now hides the %s skill at this id (a published skill wins its id)\n", shadows)
	}
}
