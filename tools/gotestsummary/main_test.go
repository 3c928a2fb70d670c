package main

import (
	"strings"
	"testing"
)

// A passing package with a Ginkgo suite, a failing package whose failing
// subtest's output must be shown, a package without tests, and a build error
// line that is not JSON.
const run = `# example.com/broken
broken.go:3:1: syntax error
{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestA"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"noise of a passing test\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestA"}
{"Action":"output","Package":"example.com/a","Test":"TestSuite","Output":"\u001b[1mRan 12 of 13 Specs in 0.5 seconds\u001b[0m\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestSuite"}
{"Action":"skip","Package":"example.com/a","Test":"TestSkipped"}
{"Action":"output","Package":"example.com/a","Output":"PASS\n"}
{"Action":"output","Package":"example.com/a","Output":"ok  \texample.com/a\t0.1s\n"}
{"Action":"pass","Package":"example.com/a"}
{"Action":"output","Package":"example.com/b","Test":"TestB/sub","Output":"    b_test.go:9: want 1, got 2\n"}
{"Action":"fail","Package":"example.com/b","Test":"TestB/sub"}
{"Action":"output","Package":"example.com/b","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"example.com/b","Test":"TestB"}
{"Action":"output","Package":"example.com/b","Test":"TestHang","Output":"panic: test timed out\n"}
{"Action":"output","Package":"example.com/b","Output":"FAIL\texample.com/b\t0.2s\n"}
{"Action":"fail","Package":"example.com/b"}
{"Action":"output","Package":"example.com/c","Output":"?   \texample.com/c\t[no test files]\n"}
{"Action":"skip","Package":"example.com/c"}
`

func TestSummarize(t *testing.T) {
	var out strings.Builder
	c := summarize(strings.NewReader(run), &out)
	if want := (counts{passed: 2, failed: 1, skipped: 1, specs: 12, packages: 2}); c != want {
		t.Errorf("counts = %+v, want %+v", c, want)
	}
	if got, want := c.line(), "go test: 2 tests passed, 1 failed, 1 skipped (12 Ginkgo specs) in 2 packages"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	if got, want := (counts{passed: 3, packages: 1}).line(), "go test: 3 tests passed, 0 failed, 0 skipped in 1 package"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	got := out.String()
	for _, want := range []string{"syntax error", "ok  \texample.com/a", "want 1, got 2", "--- FAIL: TestB",
		"panic: test timed out", "FAIL\texample.com/b", "[no test files]"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise of a passing test") {
		t.Errorf("output shows a passing test's log:\n%s", got)
	}
}
