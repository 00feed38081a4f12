package chunk

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSizerDoublesToLimit(t *testing.T) {
	var z Sizer
	var got []int
	for range 7 {
		got = append(got, z.Next())
	}
	if diff := cmp.Diff([]int{4, 8, 16, 16, 16, 16, 16}, got); diff != "" {
		t.Errorf("sizes (-want +got):\n%s", diff)
	}
	small := Sizer{Limit: 8}
	got = got[:0]
	for range 4 {
		got = append(got, small.Next())
	}
	if diff := cmp.Diff([]int{4, 8, 8, 8}, got); diff != "" {
		t.Errorf("sizes with Limit 8 (-want +got):\n%s", diff)
	}
}

func TestReserveNeverMovesWhatIsPast(t *testing.T) {
	var z Sizer
	var s []int
	var seen []*int // pointers into earlier arrays, as a log keeps them
	for i := range 200 {
		s = Reserve(s, 1, &z)
		before := cap(s)
		s = append(s, i)
		if cap(s) != before {
			t.Fatalf("append %d reallocated after Reserve", i)
		}
		seen = append(seen, &s[len(s)-1])
		s = s[len(s):] // consumed: the next element goes past it
	}
	for i, p := range seen {
		if *p != i {
			t.Fatalf("element %d changed to %d", i, *p)
		}
	}
}

func TestReserveKeepsPendingAndFitsLargeN(t *testing.T) {
	var z Sizer
	s := Reserve([]int{7, 8}, 100, &z)
	if len(s) != 2 || s[0] != 7 || s[1] != 8 || cap(s)-len(s) < 100 {
		t.Errorf("Reserve = %v (cap %d), want [7 8] with room for 100", s, cap(s))
	}
}
