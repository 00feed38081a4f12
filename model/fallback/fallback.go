// Package fallback is a model.Model made of a chain of models. A call goes
// to the first; when it fails after that model's own transport retries
// (model/retry) with an error a later call might not meet (rate limited,
// overloaded, a server or transport error, an attempt that timed out), the
// next model takes the same call, and so on down the chain. Each hand-over
// is reported to model.Hooks.OnFallback before the next model is called
// (the runner logs it as a fallback entry), and the reply names the member
// that answered in Response.Via, by which the loop accounts usage per model.
//
// An error that retrying cannot fix (auth, bad request, not found, or any
// error that is not a *model.APIError) fails the call at once, naming the
// model: a chain never hides a broken configuration behind its next model.
// Nor does it fall back once the call's context is done: the run's time
// budget is spent, and the next model would have none.
//
// A member whose call went on to the next model rests for Rest: calls in
// that window start past it (each hand-over says so), sparing each of them
// the failed member's retries while its provider is down; after Rest the
// chain asks it again, and a member that answers no longer rests. The
// last member is never skipped. The chain is safe for concurrent use when
// its members are; its runs share its rests. Wrappers
// that work per call (a response cache) belong outside the chain, so that
// a request is looked up once whichever member would answer it; wrappers
// that work per provider (model/limit) belong inside, on each member.
package fallback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/model"
)

// Rest is how long a member that failed over to the next is skipped.
const Rest = 30 * time.Second

// Member is one model of a chain.
type Member struct {
	// Name is the member's model string (e.g. anthropic:claude-sonnet-4-5):
	// it names the member in errors, fallback entries and per-model usage.
	Name  string
	Model model.Model
}

// Model is a fallback chain; New makes one.
type Model struct {
	members []Member
	now     func() time.Time
	mu      sync.Mutex
	rests   []rest // by member
}

// rest is a member's rest after a failure: until when, and the failure.
type rest struct {
	until  time.Time
	reason string
}

var (
	_ model.Model  = (*Model)(nil)
	_ model.Named  = (*Model)(nil)
	_ model.Priced = (*Model)(nil)
)

// New returns the chain of members, tried in order. It needs at least one
// member, each with a model and a name of its own.
func New(members ...Member) (*Model, error) {
	var problems []string
	seen := map[string]bool{}
	for i, m := range members {
		switch {
		case m.Model == nil:
			problems = append(problems, fmt.Sprintf("member %d (%q) has no model", i+1, m.Name))
		case strings.TrimSpace(m.Name) == "":
			problems = append(problems, fmt.Sprintf("member %d has no name", i+1))
		case seen[m.Name]:
			problems = append(problems, fmt.Sprintf("member %d: %s is already in the chain", i+1, m.Name))
		}
		seen[m.Name] = true
	}
	if len(members) == 0 {
		problems = append(problems, "a chain needs at least one model")
	}
	if len(problems) > 0 {
		return nil, errors.New("fallback: " + strings.Join(problems, "; "))
	}
	return &Model{members: members, now: time.Now, rests: make([]rest, len(members))}, nil
}

// Members returns the chain's members in order.
func (m *Model) Members() []Member { return append([]Member(nil), m.members...) }

// Name is the chain's model string: its members' names joined by commas,
// the form model/provider opens.
func (m *Model) Name() string {
	names := make([]string, len(m.members))
	for i, mem := range m.members {
		names[i] = mem.Name
	}
	return strings.Join(names, ",")
}

// PriceKnown reports whether every member's calls have a known price: a
// cost budget must hold whichever member answers.
func (m *Model) PriceKnown() bool {
	for _, mem := range m.members {
		if p, ok := mem.Model.(model.Priced); ok && !p.PriceKnown() {
			return false
		}
	}
	return true
}

// Generate asks each member in turn, as the package documentation says.
// The error of a call no member answered names every member tried and
// wraps the last one's error.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	var tried []string
	handOver := func(i int, reason string) {
		tried = append(tried, reason)
		if h := model.HooksFrom(ctx); h.OnFallback != nil {
			h.OnFallback(model.Fallback{From: m.members[i].Name, To: m.members[i+1].Name, Reason: reason})
		}
	}
	for i, mem := range m.members {
		last := i == len(m.members)-1
		if why := m.resting(i); why != "" && !last {
			handOver(i, why)
			continue
		}
		resp, err := mem.Model.Generate(ctx, req)
		if err == nil {
			m.setRest(i, rest{})
			resp.Via = mem.Name
			return resp, nil
		}
		err = fmt.Errorf("%s: %w", mem.Name, err)
		if last || !FallsBack(ctx, err) {
			if len(tried) > 0 {
				err = fmt.Errorf("%w (after %s)", err, strings.Join(tried, "; "))
			}
			return model.Response{}, err
		}
		m.setRest(i, rest{until: m.now().Add(Rest), reason: err.Error()})
		handOver(i, err.Error())
	}
	panic("unreachable: New refuses an empty chain")
}

// resting says why member i is skipped now, or "" when it is not.
func (m *Model) resting(i int) string {
	m.mu.Lock()
	r := m.rests[i]
	m.mu.Unlock()
	left := r.until.Sub(m.now())
	if left <= 0 {
		return ""
	}
	return fmt.Sprintf("%s: skipped for %s more, after: %s", m.members[i].Name, left.Round(time.Second), r.reason)
}

func (m *Model) setRest(i int, r rest) {
	m.mu.Lock()
	m.rests[i] = r
	m.mu.Unlock()
}

// FallsBack reports whether a call that failed with err under ctx is
// handed to the chain's next model: its error is a temporary
// *model.APIError and its context is not done.
func FallsBack(ctx context.Context, err error) bool {
	var e *model.APIError
	return ctx.Err() == nil && errors.As(err, &e) && e.Temporary()
}
