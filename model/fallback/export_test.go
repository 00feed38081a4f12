package fallback

import "time"

// SetClock makes m tell time by now.
func SetClock(m *Model, now func() time.Time) { m.now = now }
