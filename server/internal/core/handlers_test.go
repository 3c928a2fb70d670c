package core

import (
	"os"
	"strings"
	"testing"
)

// A node's name is shown to every caller and stored in shared state: the
// engine URL goes without credentials.
func TestNodeNameKeepsNoCredentials(t *testing.T) {
	host, _ := os.Hostname()
	for in, want := range map[string]string{
		"ws://10.0.0.5:49134":                      " (ws://10.0.0.5:49134)",
		"ws://user:secret@10.0.0.5:49134/?t=abc#x": " (ws://10.0.0.5:49134/)",
		"":          "",
		"ws://[::1": " (an engine URL that does not parse)",
	} {
		got := nodeName(in)
		if got != host+want || strings.Contains(got, "secret") || strings.Contains(got, "abc") {
			t.Errorf("nodeName(%q) = %q; want %q", in, got, host+want)
		}
	}
}
