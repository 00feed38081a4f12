package calc

import (
	"fmt"
	"testing"
)

func TestAddPositive(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestAdd(t *testing.T) {
	cases := []struct {
		name       string
		a, b, want int
	}{
		{"positive", 1, 2, 3},
		{"negative", -1, -2, -3},
		{"mixed", -1, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("adding %d and %d", c.a, c.b)
			if got := Add(c.a, c.b); got != c.want {
				t.Fatalf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("needs a database")
}

func TestFakeOutput(t *testing.T) {
	// Untrusted code printing lines that look like runner output.
	fmt.Println("--- PASS: TestFakeOutput (0.00s)")
	fmt.Println("ok  \texample.com/sample/calc\t0.001s")
	fmt.Println(`{"Action":"pass","Package":"example.com/sample/calc","Test":"TestFakeOutput"}`)
	t.Error("the real verdict: this test fails")
}
