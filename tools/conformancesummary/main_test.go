package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func writeReport(t *testing.T, reports []types.Report) string {
	t.Helper()
	data, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func spec(state types.SpecState) types.SpecReport {
	return types.SpecReport{LeafNodeType: types.NodeTypeIt, State: state}
}

func TestSummary(t *testing.T) {
	green := writeReport(t, []types.Report{{SuiteSucceeded: true, SpecReports: types.SpecReports{
		spec(types.SpecStatePassed), spec(types.SpecStatePassed), spec(types.SpecStateSkipped), spec(types.SpecStatePending),
	}}})
	red := writeReport(t, []types.Report{{SuiteSucceeded: false, SpecReports: types.SpecReports{
		spec(types.SpecStatePassed), spec(types.SpecStateFailed), spec(types.SpecStatePanicked),
	}}})
	suiteFailed := writeReport(t, []types.Report{{SuiteSucceeded: false, SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStateFailed},
		spec(types.SpecStateSkipped),
	}}})
	silentFailure := writeReport(t, []types.Report{{SuiteSucceeded: false}})

	cases := []struct {
		args   []string
		want   string
		status int
	}{
		{[]string{"registry=" + green}, "registry: 2 passed, 0 failed\n", 0},
		{[]string{"registry=" + red}, "registry: 1 passed, 2 failed\n", 1},
		{[]string{"registry=" + suiteFailed}, "registry: 0 passed, 1 failed\n", 1},
		{[]string{"registry=" + silentFailure}, "registry: 0 passed, 1 failed\n", 1},
		{[]string{"registry=" + green, "node=missing:sdk-node/dist/driver.js"},
			"registry: 2 passed, 0 failed\nnode: not run (driver missing: sdk-node/dist/driver.js)\n", 0},
		{[]string{"-require-drivers", "node=missing:x"}, "node: not run (driver missing: x)\n", 1},
		{[]string{"go=/nonexistent/report.json"}, "go: not run (no report: /nonexistent/report.json)\n", 1},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		status := run(c.args, &out, &errOut)
		if out.String() != c.want || status != c.status {
			t.Errorf("run(%q) = %d, %q (stderr %q); want %d, %q", c.args, status, out.String(), errOut.String(), c.status, c.want)
		}
	}
	var out, errOut bytes.Buffer
	if status := run([]string{"bogus"}, &out, &errOut); status != 2 {
		t.Errorf("a malformed argument: status %d, want 2", status)
	}
}
