package budget_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
)

func TestUSD(t *testing.T) {
	tests := []struct {
		dollars float64
		want    budget.Micros
	}{
		{0, 0},
		{1, 1_000_000},
		{0.1, 100_000},
		{0.3, 300_000},
		{0.000001, 1},
		{0.0000004, 0},
		{0.0000006, 1},
		{2.675, 2_675_000}, // 2.67499999999999982236431605997495353221893310546875
		{-0.25, -250_000},
		{1e6, 1_000_000_000_000},
	}
	for _, tt := range tests {
		if got := budget.USD(tt.dollars); got != tt.want {
			t.Errorf("USD(%v) = %d, want %d", tt.dollars, got, tt.want)
		}
	}
}

// Sums of micros are exact where sums of float dollars are not.
func TestUSDSumsAreExact(t *testing.T) {
	a, b, c := 0.1, 0.2, 0.3 // variables: Go constant arithmetic would be exact
	if a+b == c {
		t.Fatal("float64 arithmetic changed: this test no longer shows anything")
	}
	if got, want := budget.USD(a+b), budget.USD(c); got != want {
		t.Errorf("USD(0.1+0.2) = %d, want %d", got, want)
	}
	if got, want := budget.USD(a)+budget.USD(b), budget.USD(c); got != want {
		t.Errorf("USD(0.1)+USD(0.2) = %d, want %d", got, want)
	}
	var sum budget.Micros
	var fsum float64
	for range 10 {
		sum += budget.USD(0.1)
		fsum += a
	}
	if sum != budget.USD(1) || sum.String() != "$1.000000" {
		t.Errorf("ten times USD(0.1) = %d (%s), want %d", sum, sum, budget.USD(1))
	}
	if fsum == 1 {
		t.Fatal("float64 arithmetic changed: this test no longer shows anything")
	}
	if got := budget.USD(0.7).Dollars(); got != 0.7 {
		t.Errorf("USD(0.7).Dollars() = %v, want 0.7", got)
	}
}

func TestMicrosString(t *testing.T) {
	tests := []struct {
		m    budget.Micros
		want string
	}{
		{0, "$0.000000"},
		{1, "$0.000001"},
		{999_999, "$0.999999"},
		{1_000_000, "$1.000000"},
		{1_500_000, "$1.500000"},
		{123_456_789, "$123.456789"},
		{-1, "-$0.000001"},
		{-2_500_000, "-$2.500000"},
		{-123_456_789, "-$123.456789"},
		{math.MaxInt64, "$9223372036854.775807"},
		{math.MinInt64, "-$9223372036854.775808"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("Micros(%d).String() = %q, want %q", int64(tt.m), got, tt.want)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   budget.Limits
		want budget.Limits
	}{
		{"zero is every default", budget.Limits{}, budget.Defaults},
		{
			"zero fields get defaults, set fields are kept",
			budget.Limits{Steps: 8, Cost: budget.USD(0.10), Time: time.Minute},
			budget.Limits{
				Steps: 8, ModelCalls: 60, ToolCalls: 200,
				InputTokens: budget.Unlimited, OutputTokens: budget.Unlimited, TotalTokens: 2_000_000,
				Cost: 100_000, Time: time.Minute,
			},
		},
		{
			"unlimited is kept, not defaulted",
			budget.Limits{
				Steps: budget.Unlimited, ModelCalls: budget.Unlimited, ToolCalls: budget.Unlimited,
				InputTokens: budget.Unlimited, OutputTokens: budget.Unlimited, TotalTokens: budget.Unlimited,
				Cost: budget.Unlimited, Time: budget.Unlimited,
			},
			budget.Limits{
				Steps: -1, ModelCalls: -1, ToolCalls: -1,
				InputTokens: -1, OutputTokens: -1, TotalTokens: -1,
				Cost: -1, Time: -1,
			},
		},
		{
			"finite token limits replace unlimited defaults",
			budget.Limits{InputTokens: 500, OutputTokens: 100},
			budget.Limits{
				Steps: 30, ModelCalls: 60, ToolCalls: 200,
				InputTokens: 500, OutputTokens: 100, TotalTokens: 2_000_000,
				Cost: 2_000_000, Time: 10 * time.Minute,
			},
		},
		{
			"negative values are kept for Validate to report",
			budget.Limits{Steps: -5, Cost: -3},
			budget.Limits{
				Steps: -5, ModelCalls: 60, ToolCalls: 200,
				InputTokens: -1, OutputTokens: -1, TotalTokens: 2_000_000,
				Cost: -3, Time: 10 * time.Minute,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.WithDefaults()); diff != "" {
				t.Errorf("WithDefaults() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	want := budget.Limits{
		Steps: 30, ModelCalls: 60, ToolCalls: 200,
		InputTokens: budget.Unlimited, OutputTokens: budget.Unlimited, TotalTokens: 2_000_000,
		Cost: budget.USD(2), Time: 10 * time.Minute,
	}
	if diff := cmp.Diff(want, budget.Defaults); diff != "" {
		t.Errorf("Defaults changed (-documented +got):\n%s", diff)
	}
}

// only returns limits with every dimension unlimited except d, capped at v.
func only(d budget.Dimension, v int64) budget.Limits {
	l := budget.Limits{
		Steps: -1, ModelCalls: -1, ToolCalls: -1, InputTokens: -1, OutputTokens: -1,
		TotalTokens: -1, Cost: -1, Time: -1,
	}
	l.Set(d, v)
	return l
}

// use returns a usage of v on d. Total tokens are split between input and
// output so that neither alone carries them.
func use(d budget.Dimension, v int64) budget.Usage {
	var u budget.Usage
	switch d {
	case budget.Steps:
		u.Steps = int(v)
	case budget.ModelCalls:
		u.ModelCalls = int(v)
	case budget.ToolCalls:
		u.ToolCalls = int(v)
	case budget.InputTokens:
		u.InputTokens = v
	case budget.OutputTokens:
		u.OutputTokens = v
	case budget.TotalTokens:
		u.InputTokens, u.OutputTokens = v/2, v-v/2
	case budget.Cost:
		u.Cost = budget.Micros(v)
	case budget.Time:
		u.Time = time.Duration(v)
	}
	return u
}

func TestLimitAndGet(t *testing.T) {
	l := budget.Limits{Steps: 1, ModelCalls: 2, ToolCalls: 3, InputTokens: 4, OutputTokens: 5, TotalTokens: 6, Cost: 7, Time: 8}
	u := budget.Usage{Steps: 1, ModelCalls: 2, ToolCalls: 3, InputTokens: 4, OutputTokens: 5, Cost: 7, Time: 8}
	wantLimit := map[budget.Dimension]int64{"steps": 1, "model_calls": 2, "tool_calls": 3, "input_tokens": 4, "output_tokens": 5, "total_tokens": 6, "cost": 7, "time": 8, "bogus": -1}
	wantGet := map[budget.Dimension]int64{"steps": 1, "model_calls": 2, "tool_calls": 3, "input_tokens": 4, "output_tokens": 5, "total_tokens": 9, "cost": 7, "time": 8, "bogus": 0}
	gotLimit, gotGet := map[budget.Dimension]int64{}, map[budget.Dimension]int64{}
	for _, d := range append(append([]budget.Dimension(nil), budget.Dimensions...), "bogus") {
		gotLimit[d], gotGet[d] = l.Limit(d), u.Get(d)
	}
	if diff := cmp.Diff(wantLimit, gotLimit); diff != "" {
		t.Errorf("Limit mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantGet, gotGet); diff != "" {
		t.Errorf("Get mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]budget.Dimension{"steps", "model_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens", "cost", "time"}, budget.Dimensions); diff != "" {
		t.Errorf("Dimensions order changed (-want +got):\n%s", diff)
	}
}

func TestAdd(t *testing.T) {
	u := budget.Usage{Steps: 1, ModelCalls: 2, ToolCalls: 3, InputTokens: 4, OutputTokens: 5, Cost: 6, Time: time.Second}
	v := budget.Usage{Steps: 10, ModelCalls: 20, ToolCalls: 30, InputTokens: 40, OutputTokens: 50, Cost: 60, CostUnknown: true, Time: time.Hour}
	want := budget.Usage{Steps: 11, ModelCalls: 22, ToolCalls: 33, InputTokens: 44, OutputTokens: 55, Cost: 66, CostUnknown: true, Time: time.Second}
	if diff := cmp.Diff(want, u.Add(v)); diff != "" {
		t.Errorf("Add mismatch (-want +got):\n%s", diff)
	}
	if got := v.Add(budget.Usage{}); !got.CostUnknown {
		t.Error("Add dropped CostUnknown")
	}
}

func TestExceedsEachDimensionBoundary(t *testing.T) {
	const lim = 1000
	for _, d := range budget.Dimensions {
		t.Run(string(d), func(t *testing.T) {
			l := only(d, lim)
			cases := []struct {
				name       string
				used, need budget.Usage
				want       bool
			}{
				{"nothing used", budget.Usage{}, budget.Usage{}, false},
				{"used+need below", use(d, 400), use(d, 599), false},
				{"used+need == limit", use(d, 400), use(d, 600), false},
				{"used+need one over", use(d, 400), use(d, 601), true},
				{"used alone at limit", use(d, lim), budget.Usage{}, false},
				{"used alone one over", use(d, lim+1), budget.Usage{}, true},
				{"need alone one over", budget.Usage{}, use(d, lim+1), true},
			}
			for _, c := range cases {
				gotD, got := budget.Exceeds(l, c.used, c.need)
				wantD := budget.Dimension("")
				if c.want {
					wantD = d
				}
				if got != c.want || gotD != wantD {
					t.Errorf("%s: Exceeds = (%q, %v), want (%q, %v)", c.name, gotD, got, wantD, c.want)
				}
			}
			// Every other dimension is unlimited: huge usage there is ignored.
			huge := budget.Usage{}
			for _, o := range budget.Dimensions {
				if o == d || o == budget.TotalTokens || (d == budget.TotalTokens && (o == budget.InputTokens || o == budget.OutputTokens)) {
					continue
				}
				huge = huge.Add(use(o, 1<<40))
				if o == budget.Time {
					huge.Time = 1 << 40
				}
			}
			if gotD, got := budget.Exceeds(l, huge, use(d, lim)); got {
				t.Errorf("unlimited dimensions counted: Exceeds = (%q, true)", gotD)
			}
			if gotD, got := budget.Exhausted(l, huge); got {
				t.Errorf("unlimited dimensions counted: Exhausted = (%q, true)", gotD)
			}
		})
	}
}

func TestExceedsOrder(t *testing.T) {
	l := budget.Limits{Steps: 5, ModelCalls: 5, ToolCalls: 5, InputTokens: 100, OutputTokens: 100, TotalTokens: 150, Cost: 500, Time: time.Second}
	tests := []struct {
		name       string
		used, need budget.Usage
		want       budget.Dimension
	}{
		{"none", budget.Usage{Steps: 5, ModelCalls: 5, ToolCalls: 5, InputTokens: 75, OutputTokens: 75, Cost: 500, Time: time.Second}, budget.Usage{}, ""},
		{"steps before everything", budget.Usage{Steps: 5, ModelCalls: 9, ToolCalls: 9, Cost: 9999, Time: time.Hour}, budget.Usage{Steps: 1}, budget.Steps},
		{"model calls before tool calls", budget.Usage{ModelCalls: 5, ToolCalls: 9}, budget.Usage{ModelCalls: 1}, budget.ModelCalls},
		{"tool calls before cost", budget.Usage{ToolCalls: 4, Cost: 600}, budget.Usage{ToolCalls: 2}, budget.ToolCalls},
		{"input tokens before total", budget.Usage{InputTokens: 101, OutputTokens: 60}, budget.Usage{}, budget.InputTokens},
		{"output tokens before total", budget.Usage{OutputTokens: 90}, budget.Usage{InputTokens: 50, OutputTokens: 20}, budget.OutputTokens},
		{"total tokens from the sum", budget.Usage{InputTokens: 80, OutputTokens: 70}, budget.Usage{OutputTokens: 1}, budget.TotalTokens},
		{"cost before time", budget.Usage{Cost: 500, Time: time.Hour}, budget.Usage{Cost: 1}, budget.Cost},
		{"time last", budget.Usage{Time: time.Second}, budget.Usage{Time: 1}, budget.Time},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, over := budget.Exceeds(l, tt.used, tt.need)
			if d != tt.want || over != (tt.want != "") {
				t.Errorf("Exceeds = (%q, %v), want (%q, %v)", d, over, tt.want, tt.want != "")
			}
		})
	}
}

func TestExceedsIgnoresUnlimited(t *testing.T) {
	l := budget.Limits{Steps: budget.Unlimited, ModelCalls: 3, ToolCalls: budget.Unlimited, InputTokens: -1, OutputTokens: -1, TotalTokens: -1, Cost: -1, Time: -1}
	used := budget.Usage{Steps: 1 << 30, ModelCalls: 2, ToolCalls: 1 << 30, InputTokens: 1 << 40, OutputTokens: 1 << 40, Cost: 1 << 40, Time: 1 << 40}
	if d, over := budget.Exceeds(l, used, budget.Usage{Steps: 1, ModelCalls: 1}); over {
		t.Errorf("Exceeds = (%q, true) with only unlimited dimensions overrun", d)
	}
	if d, over := budget.Exceeds(l, used, budget.Usage{ModelCalls: 2}); !over || d != budget.ModelCalls {
		t.Errorf("Exceeds = (%q, %v), want (model_calls, true)", d, over)
	}
	if d, ok := budget.Exhausted(l, used); ok {
		t.Errorf("Exhausted = (%q, true) with only unlimited dimensions used", d)
	}
}

func TestExhausted(t *testing.T) {
	l := budget.Limits{Steps: 5, ModelCalls: 8, ToolCalls: 10, InputTokens: -1, OutputTokens: -1, TotalTokens: 100, Cost: 1000, Time: time.Minute}
	tests := []struct {
		name string
		used budget.Usage
		want budget.Dimension
	}{
		{"nothing used", budget.Usage{}, ""},
		{"one below every limit", budget.Usage{Steps: 4, ModelCalls: 7, ToolCalls: 9, InputTokens: 50, OutputTokens: 49, Cost: 999, Time: time.Minute - 1}, ""},
		{"steps reached", budget.Usage{Steps: 5}, budget.Steps},
		{"tool calls reached", budget.Usage{Steps: 4, ToolCalls: 10}, budget.ToolCalls},
		{"total tokens reached from input+output", budget.Usage{InputTokens: 60, OutputTokens: 40}, budget.TotalTokens},
		{"cost overrun", budget.Usage{Cost: 5000}, budget.Cost},
		{"time reached", budget.Usage{Time: time.Minute}, budget.Time},
		{"first in order wins", budget.Usage{ModelCalls: 8, Cost: 1000, Time: time.Hour}, budget.ModelCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := budget.Exhausted(l, tt.used)
			if d != tt.want || ok != (tt.want != "") {
				t.Errorf("Exhausted = (%q, %v), want (%q, %v)", d, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestRemaining(t *testing.T) {
	l := budget.Limits{Steps: 10, ModelCalls: -1, ToolCalls: 0, TotalTokens: 1000, Cost: budget.USD(1), Time: time.Minute}
	used := budget.Usage{Steps: 3, ModelCalls: 50, InputTokens: 600, OutputTokens: 500, Cost: budget.USD(0.25), Time: 20 * time.Second}
	type rem struct {
		Left int64
		OK   bool
	}
	tests := []struct {
		d    budget.Dimension
		want rem
	}{
		{budget.Steps, rem{7, true}},
		{budget.ModelCalls, rem{0, false}},    // unlimited
		{budget.ToolCalls, rem{0, true}},      // a zero limit (no defaults applied) is spent
		{budget.TotalTokens, rem{-100, true}}, // overspent: negative
		{budget.InputTokens, rem{-600, true}}, // zero limit, as given
		{budget.Cost, rem{750_000, true}},     // micros
		{budget.Time, rem{int64(40 * time.Second), true}},
		{"bogus", rem{0, false}},
	}
	for _, tt := range tests {
		left, ok := budget.Remaining(l, used, tt.d)
		if diff := cmp.Diff(tt.want, rem{left, ok}); diff != "" {
			t.Errorf("Remaining(%s) mismatch (-want +got):\n%s", tt.d, diff)
		}
	}
}

func TestValidate(t *testing.T) {
	reserve := budget.Usage{Steps: 1, ModelCalls: 1, OutputTokens: 1000, Cost: budget.USD(0.05)}
	tests := []struct {
		name    string
		l       budget.Limits
		reserve budget.Usage
		want    string // "" for valid
	}{
		{"defaults, no reserve", budget.Limits{}, budget.Usage{}, ""},
		{"defaults, a closing reserve", budget.Limits{}, reserve, ""},
		{"just above the reserve", budget.Limits{Steps: 2, ModelCalls: 2, TotalTokens: 1001, Cost: budget.USD(0.05) + 1}, reserve, ""},
		{"steps unlimited, model calls capped", budget.Limits{Steps: budget.Unlimited}, reserve, ""},
		{"every other dimension unlimited", budget.Limits{ModelCalls: budget.Unlimited, ToolCalls: -1, TotalTokens: -1, Cost: -1, Time: -1}, reserve, ""},
		{
			"one negative",
			budget.Limits{ToolCalls: -2},
			budget.Usage{},
			"budget: tool_calls: -2 is negative (use -1 for unlimited)",
		},
		{
			"limit equal to the reserve",
			budget.Limits{Steps: 1},
			reserve,
			"budget: steps: limit 1 leaves nothing beyond the closing reserve of 1",
		},
		{
			"both turn limits unlimited",
			budget.Limits{Steps: budget.Unlimited, ModelCalls: budget.Unlimited},
			budget.Usage{},
			"budget: steps and model_calls are both unlimited: a loop needs at least one turn limit",
		},
		{
			"every problem at once, in dimension order",
			budget.Limits{
				Steps: budget.Unlimited, ModelCalls: budget.Unlimited, ToolCalls: -7,
				OutputTokens: 500, TotalTokens: 1000, Cost: budget.USD(0.01), Time: -time.Second,
			},
			reserve,
			"budget: tool_calls: -7 is negative (use -1 for unlimited); " +
				"output_tokens: limit 500 leaves nothing beyond the closing reserve of 1000; " +
				"total_tokens: limit 1000 leaves nothing beyond the closing reserve of 1000; " +
				"cost: limit $0.010000 leaves nothing beyond the closing reserve of $0.050000; " +
				"time: -1000000000 is negative (use -1 for unlimited); " +
				"steps and model_calls are both unlimited: a loop needs at least one turn limit",
		},
		{
			"time limit within the time reserve",
			budget.Limits{Time: 30 * time.Second},
			budget.Usage{Time: 30 * time.Second},
			"budget: time: limit 30s leaves nothing beyond the closing reserve of 30s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate(tt.reserve)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		d    budget.Dimension
		v    int64
		want string
	}{
		{budget.Steps, 0, "0"},
		{budget.Steps, 30, "30"},
		{budget.ModelCalls, 60, "60"},
		{budget.ToolCalls, 200, "200"},
		{budget.InputTokens, 12345, "12345"},
		{budget.OutputTokens, 1, "1"},
		{budget.TotalTokens, 2_000_000, "2000000"},
		{budget.Cost, 0, "$0.000000"},
		{budget.Cost, 2_000_000, "$2.000000"},
		{budget.Cost, 1, "$0.000001"},
		{budget.Time, 0, "0s"},
		{budget.Time, int64(1_234_567_890), "1.235s"},
		{budget.Time, int64(1499 * time.Microsecond), "1ms"},
		{budget.Time, int64(1500 * time.Microsecond), "2ms"}, // half rounds away from zero
		{budget.Time, int64(400 * time.Microsecond), "0s"},
		{budget.Time, int64(10 * time.Minute), "10m0s"},
		{budget.Time, int64(90*time.Second + 500*time.Millisecond), "1m30.5s"},
	}
	for _, d := range budget.Dimensions {
		tests = append(tests, struct {
			d    budget.Dimension
			v    int64
			want string
		}{d, budget.Unlimited, "unlimited"})
	}
	for _, tt := range tests {
		if got := budget.Format(tt.d, tt.v); got != tt.want {
			t.Errorf("Format(%s, %d) = %q, want %q", tt.d, tt.v, got, tt.want)
		}
	}
}

func TestReport(t *testing.T) {
	tests := []struct {
		name string
		l    budget.Limits
		used budget.Usage
		want string
	}{
		{
			"defaults, nothing used",
			budget.Defaults,
			budget.Usage{},
			"steps=0/30 model_calls=0/60 tool_calls=0/200 input_tokens=0 output_tokens=0 total_tokens=0/2000000 cost=$0.000000/$2.000000 time=0s/10m0s",
		},
		{
			"every dimension finite",
			budget.Limits{Steps: 8, ModelCalls: 9, ToolCalls: 10, InputTokens: 1000, OutputTokens: 500, TotalTokens: 1200, Cost: budget.USD(0.10), Time: time.Minute},
			budget.Usage{Steps: 3, ModelCalls: 4, ToolCalls: 5, InputTokens: 700, OutputTokens: 80, Cost: budget.USD(0.0123), Time: 1234567 * time.Microsecond},
			"steps=3/8 model_calls=4/9 tool_calls=5/10 input_tokens=700/1000 output_tokens=80/500 total_tokens=780/1200 cost=$0.012300/$0.100000 time=1.235s/1m0s",
		},
		{
			"unlimited dimensions show usage only",
			budget.Limits{Steps: -1, ModelCalls: 5, ToolCalls: -1, InputTokens: -1, OutputTokens: -1, TotalTokens: -1, Cost: -1, Time: -1},
			budget.Usage{Steps: 2, ModelCalls: 2, ToolCalls: 7, Cost: 42, Time: 3 * time.Second},
			"steps=2 model_calls=2/5 tool_calls=7 input_tokens=0 output_tokens=0 total_tokens=0 cost=$0.000042 time=3s",
		},
		{
			"unknown cost is flagged",
			budget.Defaults,
			budget.Usage{Steps: 1, ModelCalls: 1, CostUnknown: true},
			"steps=1/30 model_calls=1/60 tool_calls=0/200 input_tokens=0 output_tokens=0 total_tokens=0/2000000 cost=$0.000000/$2.000000 time=0s/10m0s (cost incomplete: some prices unknown)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := budget.Report(tt.l, tt.used); got != tt.want {
				t.Errorf("Report() =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

// TestSetIsLimitsInverse: Set then Limit gives back the value, for every
// dimension, and touches no other dimension.
func TestSetIsLimitsInverse(t *testing.T) {
	for i, d := range budget.Dimensions {
		var l budget.Limits
		l.Set(d, int64(i+10))
		for _, other := range budget.Dimensions {
			want := int64(0)
			if other == d {
				want = int64(i + 10)
			}
			if got := l.Limit(other); got != want {
				t.Errorf("after Set(%s, %d): Limit(%s) = %d, want %d", d, i+10, other, got, want)
			}
		}
	}
}

func TestParseAmount(t *testing.T) {
	good := []struct {
		d    budget.Dimension
		s    string
		want int64
	}{
		{budget.Steps, "16", 16},
		{budget.TotalTokens, "200000", 200000},
		{budget.Cost, "0.50", int64(budget.USD(0.5))},
		{budget.Cost, "$1.25", int64(budget.USD(1.25))},
		{budget.Time, "15m", int64(15 * time.Minute)},
	}
	for _, c := range good {
		if got, err := budget.ParseAmount(c.d, c.s); err != nil || got != c.want {
			t.Errorf("ParseAmount(%s, %q) = %d, %v; want %d", c.d, c.s, got, err, c.want)
		}
	}
	for _, c := range []struct {
		d budget.Dimension
		s string
	}{{budget.Steps, "16.5"}, {budget.Steps, "0"}, {budget.Steps, "-3"}, {budget.Steps, "16 steps"}, {budget.Cost, "lots"}, {budget.Cost, "$0"}, {budget.Time, "15"}, {"speed", "1"}} {
		if got, err := budget.ParseAmount(c.d, c.s); err == nil {
			t.Errorf("ParseAmount(%s, %q) = %d, want an error", c.d, c.s, got)
		}
	}
}
