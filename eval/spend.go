package eval

import (
	"fmt"
	"sync"

	"github.com/ratchetloop/ratchet/budget"
)

// purse is a suite's cost cap shared by its concurrent runs. A run starts
// with a grant: its own cost limit, cut to its share of what the cap has
// left (what is neither spent nor granted to the runs in flight, divided
// among the free run slots), and gives back what it did not spend when it
// ends. The grants in flight never sum past the cap, so the suite spends
// at most the cap plus what each run in flight may overshoot its own limit
// (at most the projected cost of one model call, checked by the loop
// before each call).
type purse struct {
	mu              sync.Mutex
	cap             budget.Micros
	slots           int // runs at once
	spent, inFlight budget.Micros
	running         int
}

// grant reserves what a run whose own limit is own may spend, or reports
// why it cannot start.
func (p *purse) grant(own budget.Micros) (budget.Micros, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	left := p.cap - p.spent - p.inFlight
	g := left / budget.Micros(max(p.slots-p.running, 1))
	if own != budget.Unlimited && own < g {
		g = own
	}
	if g <= 0 {
		return 0, fmt.Errorf("the suite's cost budget (%s) is spent: %s spent, %s granted to runs in flight", p.cap, p.spent, p.inFlight)
	}
	p.inFlight += g
	p.running++
	return g, nil
}

// settle returns a run's grant g and records what it spent.
func (p *purse) settle(g, spent budget.Micros) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight -= g
	p.running--
	p.spent += spent
}
