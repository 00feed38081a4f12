package observe

import (
	"fmt"
	"strings"
	"time"
)

// OneLine puts s on one line (runs of whitespace become one space) of at
// most n characters, the last of them "…" when s was cut. It does not
// escape: a terminal caller passes Escape's result or escapes after.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Age is a duration as run lists show it: one unit, the largest that fits
// ("42s", "7m", "36h", "3d"); hours up to two days read better than "1d".
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
