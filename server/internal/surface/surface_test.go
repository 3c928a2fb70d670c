package surface_test

import (
	"testing"

	"github.com/iii-skills/skills/server/internal/surface"
)

func TestNamesRoundTrip(t *testing.T) {
	want := []string{"iii", "mcp", "rpc", "web", "download"}
	for i, s := range surface.All() {
		if s.String() != want[i] || !s.Valid() {
			t.Fatalf("surface %d = %q (valid %v); want %q", i, s, s.Valid(), want[i])
		}
		if p, ok := surface.Parse(want[i]); !ok || p != s {
			t.Fatalf("Parse(%q) = %v %v", want[i], p, ok)
		}
	}
	if s := surface.Surface(surface.Count); s.Valid() || s.String() != "unknown" {
		t.Fatalf("out of range: %q valid %v", s, s.Valid())
	}
	if _, ok := surface.Parse("MCP"); ok {
		t.Fatal("Parse is case-insensitive; the label values are lower case")
	}
}
