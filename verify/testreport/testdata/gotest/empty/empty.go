package empty

// One is one.
func One() int { return 1 }
