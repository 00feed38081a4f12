package primes

import "testing"

func TestSmallPrimes(t *testing.T) {
	for _, n := range []int{2, 3, 5, 13} {
		if !IsPrime(n) {
			t.Errorf("IsPrime(%d) = false, want true", n)
		}
	}
}

func TestNonPrimes(t *testing.T) {
	for _, n := range []int{0, 1, 4, 9, 91} {
		if IsPrime(n) {
			t.Errorf("IsPrime(%d) = true, want false", n)
		}
	}
}

func TestNegatives(t *testing.T) {
	for _, n := range []int{-1, -2, -7} {
		if IsPrime(n) {
			t.Errorf("IsPrime(%d) = true, want false", n)
		}
	}
}

func TestLargePrime(t *testing.T) {
	if !IsPrime(7919) {
		t.Error("IsPrime(7919) = false, want true")
	}
}
