package loop_test

import (
	"testing"

	"github.com/ratchetloop/ratchet/loop"
)

// driver returns a function that feeds one event to m and returns (and
// acknowledges) what m made ready; a refused event ends the test.
func driver(tb testing.TB, m *loop.Machine) func(loop.Event) loop.Ready {
	return func(ev loop.Event) loop.Ready {
		tb.Helper()
		if err := m.Step(ev); err != nil {
			tb.Fatal(err)
		}
		rd := m.Ready()
		m.Advance()
		return rd
	}
}
