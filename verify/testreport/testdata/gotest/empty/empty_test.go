package empty

import "testing"

func helper(t *testing.T) { t.Helper() }
