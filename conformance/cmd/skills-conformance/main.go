// Command skills-conformance is the compiled conformance suite: the
// registry, directory, Skills Protocol and publisher groups of
// conformance/, runnable against any engine URL or /rpc URL with no Go
// toolchain and no clone. It is the same specs as `go test
// ./conformance/...` (importing a group's package declares them), run as
// one Ginkgo suite from main.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	_ "github.com/iii-skills/skills/conformance/directory"
	"github.com/iii-skills/skills/conformance/harness"
	_ "github.com/iii-skills/skills/conformance/publisher"
	_ "github.com/iii-skills/skills/conformance/registry"
	"github.com/iii-skills/skills/conformance/skillsprotocol"
)

const usage = `skills-conformance: the black-box conformance suite of the iii skills registry.

Usage:
  skills-conformance [flags]                 run every group whose target is given (or
                                             the groups --label-filter selects)
  skills-conformance --write-bundles DIR     write the Skills Protocol fixture bundles and exit

Groups (select with --label-filter, e.g. 'registry', 'registry || directory',
'registry && !binary'; each spec also carries finer labels such as skills_fetch):

  registry        the skills registry behind an iii engine (upstream v0.2.2 behaviour).
                  Needs: --iii-url ws://HOST:PORT of an engine with the registry attached,
                  and state access on it (state::*, engine::functions::list): it DELETES
                  every row of the skills and prompts scopes before each spec, so use a
                  dedicated engine. Specs labelled binary launch our own server and need
                  --skills-bin (they are skipped with --iii-url).
  directory       the iii-directory v0.5 surface and folder skills. Needs --iii-url and
                  --skills-folder DIR, the folder that server watches (skipped without it).
  skillsprotocol  the Skills Protocol JSON-RPC endpoint. Needs --rpc-url http://HOST:PORT/rpc
                  of a server serving the fixture bundles (--write-bundles DIR writes them)
                  that grants the folder bundle conf.secret its secret CONF_GRANTED_SECRET
                  (set to "granted-value" in the server's environment; our config:
                  skills_protocol.secret_grants: [{bundle: conf.secret, origin: folder,
                  names: [CONF_GRANTED_SECRET]}]).
  publisher       a publisher SDK through its driver (DRIVER.md). Needs --driver 'CMD ARGS'
                  (run in the working directory with III_URL set) and --iii-url of an engine
                  with a registry; skipped without a driver.

With no --iii-url / --rpc-url and --skills-bin PATH, the suite launches that skills binary
itself (standalone, on free loopback ports) for every group; without either it would need
a repository clone and Go to build one.

Exit status: 0 when every selected spec passed (or was skipped), 1 when one failed, 2 on a
usage error.

Flags:
`

func main() {
	junit := flag.String("junit", "", "write a JUnit XML report to `FILE`")
	jsonReport := flag.String("json", "", "write a Ginkgo JSON report to `FILE`")
	labels := flag.String("label-filter", "", "run only specs whose labels match `EXPR` (Ginkgo label syntax)")
	focus := flag.String("focus", "", "run only specs whose description matches `REGEXP`")
	verbose := flag.Bool("v", false, "print each spec as it runs")
	timeout := flag.Duration("timeout", time.Hour, "fail the run after this `DURATION`")
	writeBundles := flag.String("write-bundles", "", "write the Skills Protocol fixture bundles into `DIR` and exit")
	flag.CommandLine.Usage = func() {} // --help prints below; errors name the flag only
	flag.CommandLine.SetOutput(os.Stderr)
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	if err := flag.CommandLine.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			printUsage(os.Stdout)
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "run skills-conformance --help for the flags")
		os.Exit(2)
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "skills-conformance: unexpected argument %q (every option is a flag; see --help)\n", flag.Arg(0))
		os.Exit(2)
	}
	if *writeBundles != "" {
		if err := skillsprotocol.WriteBundles(*writeBundles); err != nil {
			fmt.Fprintln(os.Stderr, "skills-conformance: write bundles:", err)
			os.Exit(1)
		}
		fmt.Println("wrote the Skills Protocol fixture bundles to", *writeBundles)
		return
	}

	suite, reporter := GinkgoConfiguration()
	if *labels != "" {
		suite.LabelFilter = *labels
	} else if suite.LabelFilter == "" && !suite.DryRun { // a dry run lists every spec
		groups := defaultGroups()
		if len(groups) == 0 {
			fmt.Fprintln(os.Stderr, "skills-conformance: nothing to check: give --iii-url, --rpc-url or --skills-bin (see --help)")
			os.Exit(2)
		}
		suite.LabelFilter = strings.Join(groups, " || ")
		fmt.Fprintf(os.Stderr, "skills-conformance: groups %s (from the targets given; --label-filter chooses)\n", suite.LabelFilter)
	}
	if *focus != "" {
		suite.FocusStrings = append(suite.FocusStrings, *focus)
	}
	suite.Timeout = *timeout
	if *junit != "" {
		reporter.JUnitReport = *junit
	}
	if *jsonReport != "" {
		reporter.JSONReport = *jsonReport
	}
	if *verbose {
		reporter.Verbose = true
	}
	RegisterFailHandler(Fail)
	t := &result{}
	if !RunSpecs(t, "skills conformance", suite, reporter) || t.failed {
		os.Exit(1)
	}
}

var _ = AfterSuite(harness.TearDown)

// defaultGroups are the groups whose target the flags or the environment
// give: with --skills-bin every group can launch our server; otherwise
// registry needs --iii-url, directory --iii-url and --skills-folder,
// skillsprotocol --rpc-url, publisher a driver and an engine.
func defaultGroups() []string {
	given := func(flagName, env string) bool {
		if f := flag.Lookup(flagName); f != nil && f.Value.String() != "" {
			return true
		}
		return env != "" && os.Getenv(env) != ""
	}
	launch := given("skills-bin", "SKILLS_BIN")
	engine := given("iii-url", "III_URL")
	var groups []string
	if engine || launch {
		groups = append(groups, "registry")
	}
	if launch && !engine || engine && given("skills-folder", "CONFORMANCE_SKILLS_FOLDER") {
		groups = append(groups, "directory")
	}
	if launch || given("rpc-url", "SKILLS_RPC_URL") {
		groups = append(groups, "skillsprotocol")
	}
	if (engine || launch) && (given("driver", "CONFORMANCE_DRIVER") || given("sdk", "CONFORMANCE_SDK")) {
		groups = append(groups, "publisher")
	}
	return groups
}

// result is the GinkgoTestingT of a run outside `go test`.
type result struct{ failed bool }

func (r *result) Fail() { r.failed = true }

// printUsage lists our flags, not Ginkgo's own (--ginkgo.* still work).
func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 7 && f.Name[:7] == "ginkgo." {
			return
		}
		name, help := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" {
			help += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n        %s\n", line, help)
	})
	fmt.Fprintln(w, "  --ginkgo.*\n        any Ginkgo flag (e.g. --ginkgo.v, --ginkgo.fail-fast)")
}
