package engine

import "testing"

func TestShouldRelieve(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name                          string
		spare, allocated, sinceRelief uint64
		want                          bool
	}{
		{"after a burst, quiet tick", 500 * mib, 10 << 10, 2000 * mib, true},
		{"under load (allocating as much as is spare)", 500 * mib, 400 * mib, 2000 * mib, false},
		{"small spare: the scavenger's business", 2 * mib, 0, 2000 * mib, false},
		{"idle after a relief: nothing new to return", 6 * mib, 0, 1 * mib, false},
		{"light steady load", 6 * mib, 3 * mib, 100 * mib, false},
	}
	for _, c := range cases {
		if got := shouldRelieve(c.spare, c.allocated, c.sinceRelief); got != c.want {
			t.Errorf("%s: shouldRelieve(%d, %d, %d) = %v; want %v", c.name, c.spare, c.allocated, c.sinceRelief, got, c.want)
		}
	}
}
