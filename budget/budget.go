// Package budget holds a run's limits and usage across every dimension a loop
// can run away on: steps, model calls, tool calls, tokens, cost and wall time.
//
// Everything here is a pure function of plain values: no clock, no I/O. Time
// used is computed by the caller from event timestamps and stored in Usage.
// Cost is integer micro-USD so that sums are exact.
package budget

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Dimension names one budgeted quantity. Its string form appears in exit
// statuses such as "exhausted:tool_calls".
type Dimension string

const (
	Steps        Dimension = "steps"
	ModelCalls   Dimension = "model_calls"
	ToolCalls    Dimension = "tool_calls"
	InputTokens  Dimension = "input_tokens"
	OutputTokens Dimension = "output_tokens"
	TotalTokens  Dimension = "total_tokens"
	Cost         Dimension = "cost"
	Time         Dimension = "time"
)

// Dimensions lists every dimension in the fixed order in which limits are
// checked; the first exhausted one names the exit.
var Dimensions = []Dimension{Steps, ModelCalls, ToolCalls, InputTokens, OutputTokens, TotalTokens, Cost, Time}

// Micros is an amount of money in millionths of a US dollar.
type Micros int64

// USD converts dollars to Micros, rounding to the nearest micro-dollar.
func USD(dollars float64) Micros { return Micros(math.Round(dollars * 1e6)) }

// Dollars returns m as a float for display only; never sum floats.
func (m Micros) Dollars() float64 { return float64(m) / 1e6 }

func (m Micros) String() string {
	sign, u := "", uint64(m)
	if m < 0 {
		sign, u = "-", -u // in uint64 so that the most negative value works too
	}
	return fmt.Sprintf("%s$%d.%06d", sign, u/1e6, u%1e6)
}

// Unlimited disables one dimension of Limits. A run always keeps at least one
// finite limit on steps or model calls (see Limits.Validate).
const Unlimited = -1

// Limits caps a run. A zero field means the default from Defaults; Unlimited
// (-1) means no cap on that dimension.
type Limits struct {
	Steps        int           `json:"steps,omitempty"`         // model turns that may act (default 30)
	ModelCalls   int           `json:"model_calls,omitempty"`   // all model calls incl. closing turns (default 60)
	ToolCalls    int           `json:"tool_calls,omitempty"`    // tool invocations dispatched (default 200)
	InputTokens  int64         `json:"input_tokens,omitempty"`  // default unlimited: total_tokens caps it
	OutputTokens int64         `json:"output_tokens,omitempty"` // default unlimited: total_tokens caps it
	TotalTokens  int64         `json:"total_tokens,omitempty"`  // input + output (default 2,000,000)
	Cost         Micros        `json:"cost_micros,omitempty"`   // default $2.00
	Time         time.Duration `json:"time_ns,omitempty"`       // wall time from the run's start (default 10m)
}

// Defaults are the limits used for zero fields.
var Defaults = Limits{
	Steps:        30,
	ModelCalls:   60,
	ToolCalls:    200,
	InputTokens:  Unlimited,
	OutputTokens: Unlimited,
	TotalTokens:  2_000_000,
	Cost:         USD(2),
	Time:         10 * time.Minute,
}

// WithDefaults returns l with every zero field replaced by its default.
func (l Limits) WithDefaults() Limits {
	def := func(v, d int64) int64 {
		if v == 0 {
			return d
		}
		return v
	}
	return Limits{
		Steps:        int(def(int64(l.Steps), int64(Defaults.Steps))),
		ModelCalls:   int(def(int64(l.ModelCalls), int64(Defaults.ModelCalls))),
		ToolCalls:    int(def(int64(l.ToolCalls), int64(Defaults.ToolCalls))),
		InputTokens:  def(l.InputTokens, Defaults.InputTokens),
		OutputTokens: def(l.OutputTokens, Defaults.OutputTokens),
		TotalTokens:  def(l.TotalTokens, Defaults.TotalTokens),
		Cost:         Micros(def(int64(l.Cost), int64(Defaults.Cost))),
		Time:         time.Duration(def(int64(l.Time), int64(Defaults.Time))),
	}
}

// Limit returns the cap on d as an int64 (nanoseconds for Time, micro-USD for
// Cost); negative means unlimited.
func (l Limits) Limit(d Dimension) int64 {
	switch d {
	case Steps:
		return int64(l.Steps)
	case ModelCalls:
		return int64(l.ModelCalls)
	case ToolCalls:
		return int64(l.ToolCalls)
	case InputTokens:
		return l.InputTokens
	case OutputTokens:
		return l.OutputTokens
	case TotalTokens:
		return l.TotalTokens
	case Cost:
		return int64(l.Cost)
	case Time:
		return int64(l.Time)
	}
	return Unlimited
}

// Set sets dimension d of l to v, the inverse of Limit.
func (l *Limits) Set(d Dimension, v int64) {
	switch d {
	case Steps:
		l.Steps = int(v)
	case ModelCalls:
		l.ModelCalls = int(v)
	case ToolCalls:
		l.ToolCalls = int(v)
	case InputTokens:
		l.InputTokens = v
	case OutputTokens:
		l.OutputTokens = v
	case TotalTokens:
		l.TotalTokens = v
	case Cost:
		l.Cost = Micros(v)
	case Time:
		l.Time = time.Duration(v)
	}
}

// Validate reports every problem with l (after defaults) at once, checking
// that it leaves room for the closing reserve r.
func (l Limits) Validate(r Usage) error {
	problems := l.Problems(r)
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Error()
	}
	return fmt.Errorf("budget: %s", strings.Join(msgs, "; "))
}

// A LimitProblem is one problem with a budget: the dimension it is on, or
// "" when it is about the limits together.
type LimitProblem struct {
	Dimension Dimension
	Msg       string
}

func (p LimitProblem) Error() string {
	if p.Dimension == "" {
		return p.Msg
	}
	return string(p.Dimension) + ": " + p.Msg
}

// Problems lists every problem with l (after defaults), in Dimensions
// order, checking that it leaves room for the closing reserve r.
func (l Limits) Problems(r Usage) []LimitProblem {
	l = l.WithDefaults()
	var problems []LimitProblem
	for _, d := range Dimensions {
		v := l.Limit(d)
		switch {
		case v < Unlimited:
			problems = append(problems, LimitProblem{d, fmt.Sprintf("%d is negative (use -1 for unlimited)", v)})
		case v != Unlimited && v <= r.Get(d):
			problems = append(problems, LimitProblem{d, fmt.Sprintf("limit %s leaves nothing beyond the closing reserve of %s", Format(d, v), Format(d, r.Get(d)))})
		}
	}
	if l.Steps == Unlimited && l.ModelCalls == Unlimited {
		problems = append(problems, LimitProblem{"", "steps and model_calls are both unlimited: a loop needs at least one turn limit"})
	}
	return problems
}

// Usage is what a run has consumed. The same type expresses a reserve.
type Usage struct {
	Steps        int           `json:"steps"`
	ModelCalls   int           `json:"model_calls"`
	ToolCalls    int           `json:"tool_calls"`
	InputTokens  int64         `json:"input_tokens"`
	OutputTokens int64         `json:"output_tokens"`
	Cost         Micros        `json:"cost_micros"`
	CostUnknown  bool          `json:"cost_unknown,omitempty"` // some call had no known price
	Time         time.Duration `json:"time_ns"`
}

// TotalTokens is input plus output tokens.
func (u Usage) TotalTokens() int64 { return u.InputTokens + u.OutputTokens }

// Get returns the amount used on d in the units of Limits.Limit.
func (u Usage) Get(d Dimension) int64 {
	switch d {
	case Steps:
		return int64(u.Steps)
	case ModelCalls:
		return int64(u.ModelCalls)
	case ToolCalls:
		return int64(u.ToolCalls)
	case InputTokens:
		return u.InputTokens
	case OutputTokens:
		return u.OutputTokens
	case TotalTokens:
		return u.TotalTokens()
	case Cost:
		return int64(u.Cost)
	case Time:
		return int64(u.Time)
	}
	return 0
}

// Add returns u plus v. Time is not added: it is elapsed time, not a sum.
func (u Usage) Add(v Usage) Usage {
	u.Steps += v.Steps
	u.ModelCalls += v.ModelCalls
	u.ToolCalls += v.ToolCalls
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.Cost += v.Cost
	u.CostUnknown = u.CostUnknown || v.CostUnknown
	return u
}

// Exceeds returns the first dimension (in Dimensions order) on which used
// plus need would go past the limit. Limits must already have defaults
// applied. Exceeds(l, used, Usage{}) tells whether a limit is already overrun.
func Exceeds(l Limits, used, need Usage) (Dimension, bool) {
	for _, d := range Dimensions {
		lim := l.Limit(d)
		if lim >= 0 && used.Get(d)+need.Get(d) > lim {
			return d, true
		}
	}
	return "", false
}

// Exhausted returns the first dimension on which used has reached its limit.
func Exhausted(l Limits, used Usage) (Dimension, bool) {
	for _, d := range Dimensions {
		lim := l.Limit(d)
		if lim >= 0 && used.Get(d) >= lim {
			return d, true
		}
	}
	return "", false
}

// Remaining returns how much of dimension d is left before the limit
// (negative when overspent); ok is false when d is unlimited.
func Remaining(l Limits, used Usage, d Dimension) (left int64, ok bool) {
	lim := l.Limit(d)
	if lim < 0 {
		return 0, false
	}
	return lim - used.Get(d), true
}

// Format renders an amount of dimension d in its natural unit.
func Format(d Dimension, v int64) string {
	if v == Unlimited {
		return "unlimited"
	}
	switch d {
	case Cost:
		return Micros(v).String()
	case Time:
		return time.Duration(v).Round(time.Millisecond).String()
	}
	return fmt.Sprint(v)
}

// Report renders used against the limits, one "dim used/limit" per dimension.
func Report(l Limits, used Usage) string {
	var b strings.Builder
	for i, d := range Dimensions {
		if i > 0 {
			b.WriteString(" ")
		}
		lim := l.Limit(d)
		fmt.Fprintf(&b, "%s=%s", d, Format(d, used.Get(d)))
		if lim >= 0 {
			fmt.Fprintf(&b, "/%s", Format(d, lim))
		}
	}
	if used.CostUnknown {
		b.WriteString(" (cost incomplete: some prices unknown)")
	}
	return b.String()
}

// ParseAmount reads an amount of dimension d written as Format writes it,
// or plainly: a whole number for counts and tokens, dollars for Cost
// ("0.50" or "$0.50"), a Go duration for Time ("15m"). It must be
// positive; "unlimited" is not an amount.
func ParseAmount(d Dimension, s string) (int64, error) {
	s = strings.TrimSpace(s)
	var v int64
	switch d {
	case Cost:
		var dollars float64
		if _, err := fmt.Sscanf(strings.TrimPrefix(s, "$"), "%g", &dollars); err != nil || strings.ContainsAny(strings.TrimPrefix(s, "$"), " $") {
			return 0, fmt.Errorf("cost %q is not an amount of dollars such as 0.50", s)
		}
		v = int64(USD(dollars))
	case Time:
		t, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("time %q is not a duration such as 15m", s)
		}
		v = int64(t)
	case Steps, ModelCalls, ToolCalls, InputTokens, OutputTokens, TotalTokens:
		if _, err := fmt.Sscanf(s, "%d", &v); err != nil || fmt.Sprint(v) != s {
			return 0, fmt.Errorf("%s %q is not a whole number", d, s)
		}
	default:
		return 0, fmt.Errorf("unknown budget dimension %q", d)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%s %q must be more than zero", d, s)
	}
	return v, nil
}
