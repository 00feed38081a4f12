package setup

import (
	"testing"

	"example.com/sample/missing"
)

func TestMissing(t *testing.T) { missing.Do() }
