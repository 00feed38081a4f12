package eval

import (
	"strconv"
	"strings"
)

func trim(s string) string { return strings.TrimSpace(s) }

// ftoa formats a bin edge: 0, 0.1, … 1.
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) }
