package sections

import (
	"slices"
	"strings"
	"testing"
)

func TestTraceIDOf(t *testing.T) {
	for tp, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":        "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":        "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x":      "",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        "",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future": "4bf92f3577b34da6a3ce929d0e0e4736",
		"": "", "garbage": "",
	} {
		if got := traceIDOf(tp); got != want {
			t.Errorf("traceIDOf(%q) = %q, want %q", tp, got, want)
		}
	}
	if tp := childTraceparent(newTraceID()); traceIDOf(tp) == "" {
		t.Errorf("childTraceparent made an invalid traceparent %q", tp)
	}
}

func TestChainInBaggage(t *testing.T) {
	chain := []string{"a::b", "odd, id;=%+"}
	b := withChain("tenant=acme, iii-skills-section-chain=stale,k=v;prop", chain)
	if got := chainFromBaggage(b); !slices.Equal(got, chain) {
		t.Fatalf("round trip: %q -> %q", b, got)
	}
	if !strings.Contains(b, "tenant=acme") || !strings.Contains(b, "k=v;prop") || strings.Contains(b, "stale") {
		t.Fatalf("members: %q", b)
	}
	// What JavaScript's encodeURIComponent and Python's quote_plus make of
	// the decoded value reads the same.
	js := `iii-skills-section-chain=%5B%22a%3A%3Ab%22%2C%22x%22%5D`
	py := `iii-skills-section-chain=%5B%22a%3A%3Ab%22%2C+%22x%22%5D`
	for _, in := range []string{js, py} {
		if got := chainFromBaggage(in); !slices.Equal(got, []string{"a::b", "x"}) {
			t.Errorf("%s -> %q", in, got)
		}
	}
	for _, junk := range []string{"", "iii-skills-section-chain=%zz", "iii-skills-section-chain=notjson", strings.Repeat("x", maxBaggageBytes+1)} {
		if got := chainFromBaggage(junk); got != nil {
			t.Errorf("%.40q -> %q, want none", junk, got)
		}
	}
	if got := withChain(strings.Repeat("x", maxBaggageBytes+1), chain); strings.Contains(got, "xxx") {
		t.Errorf("oversize baggage passed on")
	}
}
