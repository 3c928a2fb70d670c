package sortedset

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// The set agrees with a map plus a sort after any mix of writes and reads.
func TestAgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s Set
	want := map[string]bool{}
	for step := 0; step < 20000; step++ {
		k := "k" + strconv.Itoa(r.IntN(500))
		switch r.IntN(10) {
		case 0, 1, 2, 3, 4:
			s.Add(k)
			want[k] = true
		case 5, 6, 7:
			s.Remove(k)
			delete(want, k)
		case 8:
			if s.Has(k) != want[k] {
				t.Fatalf("step %d: Has(%s) = %v", step, k, !want[k])
			}
		case 9:
			exp := make([]string, 0, len(want))
			for k := range want {
				exp = append(exp, k)
			}
			slices.Sort(exp)
			if got := s.Sorted(); !slices.Equal(got, exp) {
				t.Fatalf("step %d: Sorted = %v; want %v", step, got, exp)
			}
		}
		if s.Len() != len(want) {
			t.Fatalf("step %d: Len = %d; want %d", step, s.Len(), len(want))
		}
	}
}

func TestSortedSliceIsNotChangedByLaterWrites(t *testing.T) {
	var s Set
	s.Replace([]string{"b", "a"})
	first := s.Sorted()
	s.Add("0")
	s.Remove("b")
	if !slices.Equal(first, []string{"a", "b"}) || !slices.Equal(s.Sorted(), []string{"0", "a"}) {
		t.Fatalf("first %v, now %v", first, s.Sorted())
	}
}

// BenchmarkAddThenRead: one registration and one ordered read per op in a
// set of 40 000 members (the catalog's pattern under a register stream).
func BenchmarkAddThenRead(b *testing.B) {
	var s Set
	ids := make([]string, 40000)
	for i := range ids {
		ids[i] = "w" + strconv.Itoa(i%100) + "/s" + strconv.Itoa(i)
	}
	s.Replace(slices.Clone(ids))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Add("x/" + strconv.Itoa(i))
		if i%64 == 0 {
			_ = s.Sorted()
		}
	}
}
