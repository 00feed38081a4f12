package runner

import "time"

// SetLeaseInterval makes heartbeats come every d until restore is called.
func SetLeaseInterval(d time.Duration) (restore func()) {
	old := leaseInterval
	leaseInterval = d
	return func() { leaseInterval = old }
}

// CheckForkPoint is forkPoint, for FuzzForkPoint.
var CheckForkPoint = forkPoint
