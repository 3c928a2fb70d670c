package worker

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestServedDescriptionsMatchTheReference: every function and trigger type
// description the worker registers (from the embedded api.json) is the
// one the v0.2.2 reference table in docs/reference/skills-worker.md pins,
// byte for byte, and api.json serves every id of that table.
func TestServedDescriptionsMatchTheReference(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/reference/skills-worker.md")
	if err != nil {
		t.Fatal(err)
	}
	// Rows "| `id` | `description` |"; a description holding backticks is
	// fenced with two (``…``).
	row := regexp.MustCompile("(?m)^\\| `([a-z_:-]+)` \\| (``?)(.+?)``?\\s?\\|$")
	want := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		want[m[1]] = strings.TrimSpace(strings.TrimSuffix(m[3], "`"))
	}
	if len(want) != 15 {
		t.Fatalf("the reference table has %d descriptions, want the 13 functions and 2 trigger types: %v", len(want), want)
	}
	var api apiReference
	if err := json.Unmarshal(apiJSON, &api); err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	for _, f := range api.Functions {
		served[f.ID] = f.Description
	}
	for _, tt := range api.TriggerTypes {
		served[tt.ID] = tt.Description
	}
	for id, d := range want {
		got, ok := served[id]
		if !ok {
			t.Errorf("%s: not in api.json", id)
		} else if got != d {
			t.Errorf("%s: api.json serves %q, the reference says %q", id, got, d)
		}
	}
}
