// Command gotestsummary turns `go test -json` on stdin into what plain
// `go test` prints (one line per package, and the whole output of every test
// that failed) followed by the counts plain `go test` does not give:
//
//	go test: 445 tests passed, 0 failed, 3 skipped (303 Ginkgo specs) in 30 packages
//
// `make test-go` pipes into it so that the `make test` line of the Go suite
// shows its own test count. Lines on stdin that are not test events (build
// errors on stderr, say) are copied as they are. It exits 0; the caller keeps
// go test's exit status (set -o pipefail).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// ranSpecs matches Ginkgo's suite summary, "Ran 147 of 150 Specs in 3.2 seconds",
// once its terminal colours (ansi) are taken out.
var (
	ranSpecs = regexp.MustCompile(`^Ran (\d+) of \d+ Specs? in `)
	ansi     = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

type counts struct {
	passed, failed, skipped, specs, packages int
}

func main() {
	c := summarize(os.Stdin, os.Stdout)
	fmt.Fprintln(os.Stdout, c.line())
}

// line is the summary, the one line `make test` shows for a Go suite.
func (c counts) line() string {
	s := fmt.Sprintf("go test: %d tests passed, %d failed, %d skipped", c.passed, c.failed, c.skipped)
	if c.specs > 0 {
		s += fmt.Sprintf(" (%d Ginkgo specs)", c.specs)
	}
	if c.packages == 1 {
		return s + " in 1 package"
	}
	return s + fmt.Sprintf(" in %d packages", c.packages)
}

// summarize copies what a reader of a failing run needs from in to out and
// counts top-level tests (subtests are part of their test).
func summarize(in io.Reader, out io.Writer) counts {
	var c counts
	// Output of each running test, printed only if it fails (or its package
	// ends without it finishing: a panic or a timeout).
	pending := map[string][]string{}
	key := func(e event) string { return e.Package + "\x00" + e.Test }
	flushPackage := func(pkg string) {
		for k, lines := range pending {
			if strings.HasPrefix(k, pkg+"\x00") {
				io.WriteString(out, strings.Join(lines, ""))
				delete(pending, k)
			}
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			fmt.Fprintln(out, line)
			continue
		}
		if m := ranSpecs.FindStringSubmatch(strings.TrimSpace(ansi.ReplaceAllString(e.Output, ""))); m != nil {
			n, _ := strconv.Atoi(m[1])
			c.specs += n
		}
		topLevel := e.Test != "" && !strings.Contains(e.Test, "/")
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Test == "" && e.Action == "output":
			// Package lines: "ok  pkg 1.2s", "FAIL pkg", "? pkg [no test files]",
			// and whatever ran outside a test (TestMain, a panic).
			if o := e.Output; o != "PASS\n" && o != "FAIL\n" && !strings.HasPrefix(o, "testing: warning: no tests to run") {
				io.WriteString(out, o)
			}
		case e.Test == "" && e.Action == "skip": // no test files
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			c.packages++
			if e.Action == "fail" {
				flushPackage(e.Package)
			}
		case e.Action == "output":
			pending[key(e)] = append(pending[key(e)], e.Output)
		case e.Action == "pass" || e.Action == "skip":
			delete(pending, key(e))
			if topLevel && e.Action == "pass" {
				c.passed++
			} else if topLevel {
				c.skipped++
			}
		case e.Action == "fail":
			io.WriteString(out, strings.Join(pending[key(e)], ""))
			delete(pending, key(e))
			if topLevel {
				c.failed++
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "gotestsummary: reading go test -json:", err)
	}
	for k := range pending {
		io.WriteString(out, strings.Join(pending[k], ""))
	}
	return c
}
