// Command conformancesummary turns Ginkgo JSON reports into one plain
// line per conformance target and exits non-zero when anything failed
// (`make conformance` prints its lines):
//
//	conformancesummary registry=.conformance/registry.json go=.conformance/go.json node=missing:sdk-node/dist/driver.js
//
// prints
//
//	registry: 147 passed, 0 failed
//	go: 12 passed, 0 failed
//	node: not run (driver missing: sdk-node/dist/driver.js)
//
// A target whose report is missing or unreadable is "not run" and counts as
// a failure (the suite did not even start, e.g. it did not compile). A
// target given as missing:<path> is an SDK whose driver does not exist; it
// is never reported as passed, and it fails the run only with
// -require-drivers.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// Result is one target's outcome.
type Result struct {
	Name    string
	Passed  int
	Failed  int
	NotRun  string // why the target did not run; empty when it ran
	Missing bool   // NotRun because the SDK driver is missing
}

// Line is the summary line of r.
func (r Result) Line() string {
	if r.NotRun != "" {
		return fmt.Sprintf("%s: not run (%s)", r.Name, r.NotRun)
	}
	return fmt.Sprintf("%s: %d passed, %d failed", r.Name, r.Passed, r.Failed)
}

// OK reports whether r lets the run succeed.
func (r Result) OK(requireDrivers bool) bool {
	if r.Missing {
		return !requireDrivers
	}
	return r.NotRun == "" && r.Failed == 0
}

// Count tallies the specs of Ginkgo JSON reports: every It counts as passed
// or failed (skipped and pending ones count as neither); a failed suite-level
// node (BeforeSuite, AfterSuite, …) counts as one failure, and so does a
// suite that reports failure without any failed node.
func Count(reports []types.Report) (passed, failed int) {
	for _, rep := range reports {
		before := failed
		for _, sr := range rep.SpecReports {
			switch {
			case sr.State.Is(types.SpecStateFailureStates):
				failed++
			case sr.LeafNodeType == types.NodeTypeIt && sr.State == types.SpecStatePassed:
				passed++
			}
		}
		if !rep.SuiteSucceeded && failed == before {
			failed++
		}
	}
	return passed, failed
}

// Evaluate reads one "name=report.json" or "name=missing:<driver path>" argument.
func Evaluate(arg string) (Result, error) {
	name, spec, ok := strings.Cut(arg, "=")
	if !ok || name == "" || spec == "" {
		return Result{}, fmt.Errorf("argument %q: want name=report.json or name=missing:<driver path>", arg)
	}
	r := Result{Name: name}
	if path, ok := strings.CutPrefix(spec, "missing:"); ok {
		r.NotRun, r.Missing = "driver missing: "+path, true
		return r, nil
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		r.NotRun = "no report: " + spec
		return r, nil
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil || len(reports) == 0 {
		r.NotRun = "unreadable report: " + spec
		return r, nil
	}
	r.Passed, r.Failed = Count(reports)
	return r, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformancesummary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	requireDrivers := fs.Bool("require-drivers", false, "a missing SDK driver fails the run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: conformancesummary [-require-drivers] name=report.json|name=missing:<driver> ...")
		return 2
	}
	status := 0
	for _, arg := range fs.Args() {
		r, err := Evaluate(arg)
		if err != nil {
			fmt.Fprintln(stderr, "conformancesummary:", err)
			return 2
		}
		fmt.Fprintln(stdout, r.Line())
		if !r.OK(*requireDrivers) {
			status = 1
		}
	}
	return status
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
