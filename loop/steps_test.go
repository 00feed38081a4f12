package loop

import (
	"testing"
	"time"
)

// stepper returns a function that feeds one event to m, at a fixed time,
// and returns (and acknowledges) what m made ready; a refused event ends
// the test.
func stepper(t testing.TB, m *Machine) func(Event) Ready {
	at := time.Unix(0, 0)
	return func(ev Event) Ready {
		t.Helper()
		ev.At = at
		if err := m.Step(ev); err != nil {
			t.Fatalf("Step %s %s: %v", ev.Type, ev.Call, err)
		}
		rd := m.Ready()
		m.Advance()
		return rd
	}
}
