package registry

import (
	"strings"
	"testing"
)

func TestSplitSelector(t *testing.T) {
	for _, c := range []struct {
		in, base, sel string
		ok, err       bool
	}{
		{"a/b", "a/b", "", false, false},
		{"a/b@3", "a/b", "3", true, false},
		{"a@production", "a", "production", true, false},
		{"a@", "", "", false, true},
	} {
		base, sel, ok, err := SplitSelector(c.in)
		if base != c.base || sel != c.sel || ok != c.ok || (err != nil) != c.err {
			t.Errorf("SplitSelector(%q) = %q %q %v %v", c.in, base, sel, ok, err)
		}
	}
}

func TestCheckSelector(t *testing.T) {
	good := "sha256:" + strings.Repeat("0a", 32)
	for _, sel := range []string{"1", "production", "latest", good} {
		if err := CheckSelector(sel); err != nil {
			t.Errorf("CheckSelector(%q) = %v", sel, err)
		}
	}
	for sel, want := range map[string]string{
		"sha256:":                           "got 0 characters",
		"sha256:abc":                        "got 3 characters",
		"sha256:" + strings.Repeat("A", 64): `got 'A' at position 1`,
		"sha256:" + strings.Repeat("0", 63) + "g": `got 'g' at position 64`,
		"sha256:" + strings.Repeat("0", 65):       "got 65 characters",
		"sha256:" + strings.Repeat("f", 500):      "…",
	} {
		err := CheckSelector(sel)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "expected 64 lowercase hex digits") {
			t.Errorf("CheckSelector(%q) = %v; want it to say %q", sel, err, want)
		}
	}
}
