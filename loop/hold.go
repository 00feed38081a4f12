package loop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
)

// A hold: with Policy.Escalate, a run that would end exhausted:<dim>, or
// failed because a check could not run (sandbox missing, grader down),
// asks a person first, with a specific question. The answer is text, in
// a small grammar read here by a pure function:
//
//	raise steps to 16             raise one limit (any budget dimension)
//	raise steps to 16, cost to 1  several at once; cost in dollars, time as 15m
//	retry  (or continue)          carry on as is: after a check that could not run
//	stop                          end the run as it would have ended
//
// Text rather than a structured field of the reply, because a person's
// answer already travels as text through every channel (ratchet answer,
// the UI, an eval's scripted person) and is logged as the human_reply
// event: replaying the log parses the same text and raises the same
// limits, so a replay is identical without a new event field. An answer
// not understood is noted (problem not_understood) and the question is
// put again, saying what was wrong.

// hold is the end a run would have had, put to a person first.
type hold struct {
	Status Status `json:"status"`
	Reason string `json:"reason"`
	// Spent is the dimension whose exhaustion it is; empty for a check
	// that could not run.
	Spent    budget.Dimension `json:"spent,omitempty"`
	Question string           `json:"question"`
	// Problem is why the last answer was not understood, said when the
	// question is put again.
	Problem string `json:"problem,omitempty"`
	// Guardrail is the guardrail whose trip is held (guardrail.go),
	// Interrupted the model calls it stopped, issued again on "continue",
	// and Made how many of those were made (and count again).
	Guardrail   string     `json:"guardrail,omitempty"`
	Interrupted *suspended `json:"interrupted,omitempty"`
	Made        int        `json:"made,omitempty"`
}

// question is what the person is asked now.
func (h *hold) question() string {
	if h.Problem == "" {
		return h.Question
	}
	return "Your answer was not understood: " + h.Problem + ". " + h.Question
}

// modelFailed begins the reason of a run that failed on a model call.
const modelFailed = "model call failed: "

// holdFor is the hold for a run that would end with s for reason, or nil
// when a person is not asked: escalation is off, or s is another end.
// Failed is a check that could not run or a model call that failed for
// good (see Machine.end).
func holdFor(s Status, reason string, pol *Policy, limits budget.Limits, used budget.Usage) *hold {
	if !pol.Escalate {
		return nil
	}
	if s == Failed {
		then := "the model is told the answer was not judged and may submit it again"
		if strings.HasPrefix(reason, modelFailed) {
			then = "the model is called again"
		}
		return &hold{Status: s, Reason: reason, Question: fmt.Sprintf(
			"The run cannot go on: %s. Fix what is missing and answer \"retry\" (%s), or \"stop\" to end the run failed.", clip(reason, 300), then)}
	}
	d, ok := strings.CutPrefix(string(s), "exhausted:")
	if !ok {
		return nil
	}
	dim := budget.Dimension(d)
	lim := limits.Limit(dim)
	return &hold{Status: s, Reason: reason, Spent: dim, Question: fmt.Sprintf(
		"The run would end %s (%s of %s %s used): %s. Raise %s from %s to %s, or stop? Answer \"raise %s to %s\" (any limit, e.g. \"raise steps to 16, cost to 1.00\") or \"stop\".",
		s, budget.Format(dim, used.Get(dim)), budget.Format(dim, lim), dim, reason,
		dim, budget.Format(dim, lim), budget.Format(dim, 2*lim), dim, plain(dim, 2*lim))}
}

// plain writes an amount of d as an answer would: dollars without the
// sign, durations and counts as Format does.
func plain(d budget.Dimension, v int64) string {
	return strings.TrimPrefix(budget.Format(d, v), "$")
}

// reply is what a person's answer to a hold says.
type reply struct {
	Stop  bool
	Retry bool
	// Raise holds the new limits, in the order given.
	Raise []raise
	// Problem says why the answer was not understood; empty when it was.
	Problem string
}

type raise struct {
	Dim  budget.Dimension
	From int64
	To   int64
}

// readReply parses answer under limits (see the grammar above). A raise
// must be above the current limit, and of a limited dimension.
func readReply(answer string, limits budget.Limits, spent budget.Dimension) reply {
	a := strings.ToLower(strings.TrimSpace(answer))
	a = strings.TrimSuffix(a, ".")
	switch a {
	case "stop":
		return reply{Stop: true}
	case "retry", "continue":
		if spent != "" {
			return reply{Problem: fmt.Sprintf("the %s budget is spent, so the run cannot carry on as is: raise a limit, or stop", spent)}
		}
		return reply{Retry: true}
	}
	rest, ok := strings.CutPrefix(a, "raise ")
	if !ok {
		return reply{Problem: fmt.Sprintf("the answer %q is not one of: \"raise <limit> to <amount>\", \"retry\", \"stop\"", clip(answer, 80))}
	}
	var r reply
	var problems []string
	for _, part := range strings.FieldsFunc(rest, func(c rune) bool { return c == ',' || c == ';' }) {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "and "))
		name, amount, ok := strings.Cut(part, " to ")
		dim := budget.Dimension(strings.TrimSpace(name))
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%q is not \"<limit> to <amount>\"", part))
			continue
		case !slices.Contains(budget.Dimensions, dim):
			problems = append(problems, fmt.Sprintf("%q is not a limit (one of %s)", name, dimensionList()))
			continue
		}
		v, err := budget.ParseAmount(dim, amount)
		from := limits.Limit(dim)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case from < 0:
			problems = append(problems, fmt.Sprintf("%s is unlimited already", dim))
		case v <= from:
			problems = append(problems, fmt.Sprintf("%s is %s already: raise it above that", dim, budget.Format(dim, from)))
		default:
			r.Raise = append(r.Raise, raise{Dim: dim, From: from, To: v})
		}
	}
	if len(r.Raise) == 0 && len(problems) == 0 {
		problems = append(problems, "the answer names no limit to raise")
	}
	if len(problems) > 0 {
		return reply{Problem: strings.Join(problems, "; ")}
	}
	return r
}

func dimensionList() string {
	names := make([]string, len(budget.Dimensions))
	for i, d := range budget.Dimensions {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// describe says what the answer did, for the note and the model.
func (r reply) describe() string {
	if len(r.Raise) == 0 {
		return "answered retry"
	}
	parts := make([]string, len(r.Raise))
	for i, x := range r.Raise {
		parts[i] = fmt.Sprintf("%s from %s to %s", x.Dim, budget.Format(x.Dim, x.From), budget.Format(x.Dim, x.To))
	}
	return "raised " + strings.Join(parts, ", ")
}
