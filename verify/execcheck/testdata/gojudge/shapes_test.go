package shapes

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every kind of signature judge isolation of Go serves, each called from
// the tests' process and answered by the candidate's.
func TestSignatures(t *testing.T) {
	if Sum() != 0 || Sum(1, 2, 3) != 6 {
		t.Error("Sum")
	}
	if got := Split(" a  b c "); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("Split = %q", got)
	}
	if got := Count([]string{"x", "y", "x"}); !reflect.DeepEqual(got, map[string]int{"x": 2, "y": 1}) {
		t.Errorf("Count = %v", got)
	}
	if got := Mid(Point{0, 0, "a"}, Point{4, 2, "b"}); got != (Point{2, 1, "ab"}) {
		t.Errorf("Mid = %+v", got)
	}
	if got := Next(&Point{X: 1}); got == nil || got.X != 2 || Next(nil) != nil {
		t.Errorf("Next = %+v", got)
	}
	if q, err := Div(7, 2); q != 3 || err != nil {
		t.Errorf("Div(7, 2) = %d, %v", q, err)
	}
	if _, err := Div(1, 0); err == nil || err.Error() != "division by zero" {
		t.Errorf("Div(1, 0) error %v", err)
	}
	if Warm(Celsius(20.5)) != 21.5 || Later(time.Second) != 2*time.Second {
		t.Error("named types")
	}
	if tenfold(4) != 40 || Limit != 3 {
		t.Error("unexported function or constant")
	}
	if n, s := Pair(); n != 1 || s != "one" {
		t.Errorf("Pair = %d, %q", n, s)
	}
	Nothing()
	if got := Diagonal([][]float64{{1, 2}, {3, 4}}); got != [2]float64{1, 4} {
		t.Errorf("Diagonal = %v", got)
	}
	// The candidate keeps its state between calls, in its own process.
	if Calls() != 2 {
		t.Errorf("Calls = %d, want 2", Calls())
	}
}

// A function argument cannot cross: the call panics, naming why.
func TestUnservable(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "parameter f is a function") {
			t.Errorf("recovered %v", p)
		}
	}()
	Apply(func(x int) int { return x }, 1)
}
