package boom

import "testing"

func TestBeforePanic(t *testing.T) {}

func TestIndex(t *testing.T) {
	var s []int
	_ = s[3]
}

func TestNeverRuns(t *testing.T) {}
