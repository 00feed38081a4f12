package loop

import (
	"cmp"
	_ "embed"
	"fmt"
	"strings"

	"github.com/ratchetloop/ratchet/progress"
)

var (
	//go:embed prompts/reflect.txt
	reflectPrompt string
	//go:embed prompts/widen.txt
	widenPrompt string
)

// ladder is the intervention ladder: the progress monitor, and how often
// it has fired since a person last helped. The first fire injects a
// reflection naming what repeated, the second widens the search, the third
// stops the run stalled, or escalates where a person is reachable.
type ladder struct {
	Monitor progress.Monitor `json:"monitor"`
	Fires   int              `json:"fires"`
	// StalledOn is the pattern of the last rung, once it is reached.
	StalledOn progress.Pattern `json:"stalled_on,omitempty"`
}

// rung is what the ladder decided when the monitor fired.
type rung struct {
	Pattern progress.Pattern
	Rung    progress.Intervention
	// What describes the pattern for people and the model.
	What string
	// Inject is the text to send the model (reflect and widen); empty on
	// the last rung, where the run stops or asks a person.
	Inject string
}

// note is the intervention note for r at step.
func (r rung) note(step int, text string) Note {
	return Note{Type: NoteIntervention, Step: step, Pattern: r.Pattern, Rung: r.Rung, Text: text}
}

// observe feeds the monitor key, the fingerprint of o, and reports the rung
// reached when it fires.
func (l *ladder) observe(key progress.Key, o progress.Observation, cfg progress.Config) (rung, bool) {
	pat := l.Monitor.See(key, o)
	if pat == progress.None {
		return rung{}, false
	}
	l.Fires++
	l.Monitor.Reset()
	r := rung{Pattern: pat, Rung: progress.Ladder(l.Fires), What: describe(pat, cfg, o)}
	switch r.Rung {
	case progress.Reflect:
		r.Inject = fmt.Sprintf(strings.TrimSpace(reflectPrompt), r.What)
	case progress.Widen:
		r.Inject = fmt.Sprintf(strings.TrimSpace(widenPrompt), r.What)
	default:
		l.StalledOn = pat
	}
	return r, true
}

// helped starts the ladder again: a person answered the stuck run.
func (l *ladder) helped() {
	l.Fires = 0
	l.Monitor.Reset()
}

func describe(p progress.Pattern, cfg progress.Config, o progress.Observation) string {
	var last string
	switch o.Kind {
	case progress.Action:
		names := make([]string, len(o.Calls))
		for i, c := range o.Calls {
			names[i] = c.Tool + " " + string(progress.Canonical(c.Args))
		}
		last = "calling " + clip(strings.Join(names, ", "), 160)
	case progress.Attempt:
		last = "submitting answers that fail " + strings.Join(o.Failing, ", ")
	default:
		last = "sending replies that break the protocol (" + o.Problem + ")"
	}
	switch p {
	case progress.Repeating:
		return fmt.Sprintf("the last %d steps were identical: %s, with the same result", cfg.Window, last)
	case progress.Oscillating:
		return fmt.Sprintf("the run is alternating between two states; the latest step was %s", last)
	case progress.Waiting:
		return fmt.Sprintf("the last %d polls saw no change; the latest was %s", cmp.Or(cfg.MaxWaits, progress.DefaultMaxWaits), last)
	default:
		return fmt.Sprintf("the last %d steps produced nothing new; the latest was %s", cfg.Patience, last)
	}
}

// escalation is the one specific question put to a person when the run is
// stuck (what says how), given its best attempt so far and its goal.
func escalation(what string, best *Attempt, goal string) string {
	if best != nil && !best.Accepted && len(best.Verdicts) > 0 {
		for _, v := range best.Verdicts {
			if !v.OK {
				return fmt.Sprintf("The agent is stuck: %s. Its best answer so far, %q, fails check %s: %s. What should it change, or is the check wrong?",
					what, clip(best.Answer, 120), v.Check, clip(firstLine(v.Detail), 160))
			}
		}
	}
	return fmt.Sprintf("The agent is stuck: %s. Its goal: %q. What should it do instead?", what, clip(goal, 160))
}
