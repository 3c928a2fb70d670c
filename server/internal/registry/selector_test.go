package registry

import "testing"

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
