// Package progress notices a loop that has stopped making progress.
//
// A progress key fingerprints only what represents progress: for an action,
// the tool, its canonical arguments and a hash of its result, with what
// changes between two runs of the same command blanked (durations, times,
// addresses, fresh temporary names); for an attempt, the set of failing
// checks and the hash of the candidate without surrounding space. The Monitor watches the
// stream of keys and reports a Pattern:
//
//   - repeating: the last Window keys are all equal;
//   - oscillating: the last four keys alternate A B A B;
//   - stagnating: Patience keys in a row brought nothing never seen before;
//   - waiting: MaxWaits steps that only polled tools declared in Config.Waits
//     saw no change (such steps are otherwise neither repeats nor stagnation).
//
// When a pattern fires, the caller climbs the intervention Ladder: reflect,
// then widen, then stop (stall or escalate). Everything here is pure.
package progress

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Key fingerprints one observation of progress.
type Key string

// Pattern is a kind of stuck loop; the empty Pattern means none.
type Pattern string

const (
	None        Pattern = ""
	Repeating   Pattern = "repeating"
	Oscillating Pattern = "oscillating"
	Stagnating  Pattern = "stagnating"
	// Waiting: Config.MaxWaits polls of declared tools saw no change.
	Waiting Pattern = "waiting"
)

// Patterns are the patterns a Monitor reports, in the order reports list
// them.
var Patterns = []Pattern{Repeating, Oscillating, Stagnating, Waiting}

// Kind says what an Observation records.
type Kind string

const (
	Action    Kind = "action"    // a tool call and its result
	Attempt   Kind = "attempt"   // a verified candidate
	Malformed Kind = "malformed" // a reply that broke the protocol
)

// Observation is what the loop saw in one step, the input to a KeyFunc.
// For a turn with several tool calls, Calls holds them in call order.
type Observation struct {
	Kind  Kind   `json:"kind"`
	Calls []Call `json:"calls,omitempty"`
	// For attempts: the names of the failing checks and the candidate.
	Failing   []string `json:"failing,omitempty"`
	Candidate string   `json:"candidate,omitempty"`
	// For malformed replies: what was wrong, e.g. "empty_reply".
	Problem string `json:"problem,omitempty"`
}

// Call is one tool call as seen by progress detection.
type Call struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Result string          `json:"result"`
}

// KeyFunc maps an observation to a progress key. It must be a pure function,
// and must not keep the observation's slices: the loop reuses them.
type KeyFunc func(Observation) Key

// DefaultKey is the KeyFunc described in the package doc. Arguments are
// canonicalised (object keys sorted, whitespace dropped) so that the same
// call written twice yields the same key; the calls of one turn are keyed as
// a set, and failing checks as a set.
func DefaultKey(o Observation) Key {
	// One buffer of the right size: canonicalising recursive JSON makes the
	// compiler move any buffer to the heap, so it should at least be small.
	size := 4 + len(o.Kind) + 8 + len(o.Problem) + len(o.Candidate)
	for _, c := range o.Calls {
		size += 12 + len(c.Tool) + len(c.Args) + len(c.Result)
	}
	for _, f := range o.Failing {
		size += 4 + len(f)
	}
	b := field(make([]byte, 0, size), string(o.Kind))
	switch o.Kind {
	case Action:
		calls := o.Calls
		if len(calls) > 1 {
			calls = slices.Clone(calls)
			slices.SortFunc(calls, func(a, b Call) int {
				if c := strings.Compare(a.Tool, b.Tool); c != 0 {
					return c
				}
				if c := bytes.Compare(Canonical(a.Args), Canonical(b.Args)); c != 0 {
					return c
				}
				return strings.Compare(a.Result, b.Result)
			})
		}
		for _, c := range calls {
			b = field(b, c.Tool)
			mark := len(b)
			b = AppendCanonical(append(b, 0, 0, 0, 0), c.Args)
			binary.BigEndian.PutUint32(b[mark:], uint32(len(b)-mark-4)) // the length, known now
			b = field(b, steady(c.Result))
		}
	case Attempt:
		failing := slices.Clone(o.Failing)
		slices.Sort(failing)
		for _, f := range failing {
			b = field(b, f)
		}
		b = field(b, "\x02")
		b = field(b, strings.TrimSpace(o.Candidate))
	default:
		b = field(b, o.Problem)
	}
	sum := sha256.Sum256(b)
	var key [24]byte
	hex.Encode(key[:], sum[:12])
	return Key(key[:])
}

// volatile matches what changes between two runs of the same command while
// meaning the same: durations (0.004s, 12ms), clock times and timestamps,
// machine addresses (0x4a1b2c), and the names of fresh temporary directories
// (go-build2817346511, Python's tmpa1b2c3d4). A rerun that differs only in
// these is a repeat, not news.
var volatile = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h)\b` +
	`|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?` +
	`|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b` +
	`|\b0x[0-9a-fA-F]{4,}\b` +
	`|\bgo-build\d+|\btmp[a-z0-9_]{8}\b`)

// steady is result with its volatile parts blanked. Every volatile part has
// a digit, so a result without one skips the expression.
func steady(result string) string {
	if !strings.ContainsAny(result, "0123456789") || !volatile.MatchString(result) {
		return result
	}
	return volatile.ReplaceAllLiteralString(result, "#")
}

// field appends p length-prefixed, so that fields cannot run together.
func field(b []byte, p string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	return append(b, p...)
}

// Config tunes the Monitor. Zero fields take defaults.
type Config struct {
	// Window is how many equal keys in a row count as repeating (default 3;
	// at least 2).
	Window int `json:"window,omitempty"`
	// Patience is how many keys in a row without a new one count as
	// stagnating (default 6).
	Patience int `json:"patience,omitempty"`
	// Waits names the tools that are polled or retried by design (a job's
	// status, a flaky API): a step that calls only these and sees nothing
	// new is waiting, not repeating. Without it, three identical polls look
	// exactly like a stuck loop, because from the outside they are one.
	Waits []string `json:"waits,omitempty"`
	// MaxWaits is how many waiting steps since anything new fire Waiting
	// (default 20), so that a job that never finishes still ends the wait.
	MaxWaits int `json:"max_waits,omitempty"`
}

// DefaultMaxWaits is MaxWaits when unset. It is applied where it is used,
// not by WithDefaults, so that a task without Waits records no such field.
const DefaultMaxWaits = 20

// waiting reports whether o is a step that only called tools in c.Waits.
func (c Config) waiting(o Observation) bool {
	if len(c.Waits) == 0 || o.Kind != Action || len(o.Calls) == 0 {
		return false
	}
	for _, call := range o.Calls {
		if !slices.Contains(c.Waits, call.Tool) {
			return false
		}
	}
	return true
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Window == 0 {
		c.Window = 3
	}
	if c.Patience == 0 {
		c.Patience = 6
	}
	return c
}

// Monitor holds the recent keys. The zero value is not ready; use NewMonitor.
// It is a plain value: copy it, serialise it as JSON, restore it.
type Monitor struct {
	Config Config `json:"config"`
	// Recent holds the last keys, at most max(Window, 4).
	Recent []Key `json:"recent"`
	// Seen records every key observed in the run.
	Seen map[Key]bool `json:"seen"`
	// SinceNew counts keys observed since the last never-seen key.
	SinceNew int `json:"since_new"`
	// Waited counts waiting steps (see Config.Waits) since the last
	// never-seen key.
	Waited int `json:"waited,omitempty"`
}

// NewMonitor returns a monitor with cfg's defaults applied.
func NewMonitor(cfg Config) Monitor {
	return Monitor{Config: cfg.WithDefaults(), Seen: map[Key]bool{}}
}

// See records k, the key of o, and reports the pattern it completes, if any.
// A waiting step (one that only called tools in Config.Waits) that brings
// nothing new leaves the recent window and the stagnation count alone and
// counts towards MaxWaits, where it fires Waiting; one that brings something
// new is progress like any other.
func (m *Monitor) See(k Key, o Observation) Pattern {
	if !m.Config.waiting(o) || !m.Seen[k] {
		return m.Observe(k)
	}
	m.Waited++
	if m.Waited >= cmp.Or(m.Config.MaxWaits, DefaultMaxWaits) {
		return Waiting
	}
	return None
}

// Observe records k and reports the pattern it completes, if any.
func (m *Monitor) Observe(k Key) Pattern {
	keep := max(m.Config.Window, 4)
	m.Recent = append(m.Recent, k)
	if len(m.Recent) > keep {
		m.Recent = append(m.Recent[:0], m.Recent[len(m.Recent)-keep:]...)
	}
	if m.Seen[k] {
		m.SinceNew++
	} else {
		m.Seen[k] = true
		m.SinceNew = 0
		m.Waited = 0
	}
	if n := m.Config.Window; len(m.Recent) >= n {
		last := m.Recent[len(m.Recent)-n:]
		if allEqual(last) {
			return Repeating
		}
	}
	if n := len(m.Recent); n >= 4 {
		a, b, c, d := m.Recent[n-4], m.Recent[n-3], m.Recent[n-2], m.Recent[n-1]
		if a == c && b == d && a != b {
			return Oscillating
		}
	}
	if m.SinceNew >= m.Config.Patience {
		return Stagnating
	}
	return None
}

// Reset forgets the recent window and the stagnation count after an
// intervention, so that the next fire needs fresh evidence. Seen keys are kept:
// returning to an old state is still not progress.
func (m *Monitor) Reset() {
	m.Recent = m.Recent[:0]
	m.SinceNew = 0
	m.Waited = 0
}

func allEqual(ks []Key) bool {
	for _, k := range ks[1:] {
		if k != ks[0] {
			return false
		}
	}
	return true
}

// Intervention is a rung of the ladder the loop climbs when a pattern fires.
type Intervention string

const (
	Reflect Intervention = "reflect" // name what repeated and ask the model to step back
	Widen   Intervention = "widen"   // ask for a fundamentally different approach
	Stop    Intervention = "stop"    // exit stalled, or escalate where a person is reachable
)

// Ladder returns the intervention for the n-th fire of a run (n from 1).
func Ladder(n int) Intervention {
	switch {
	case n <= 1:
		return Reflect
	case n == 2:
		return Widen
	default:
		return Stop
	}
}
