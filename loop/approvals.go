package loop

import (
	"fmt"
	"strconv"
	"strings"
)

// approval is a tool call put to a person because a permission rule said
// ask. One question at a time: the turn's calls run together once every
// approval is in.
type approval struct {
	Call     string `json:"call"`
	Question string `json:"question"`
}

// newApproval asks about call c, which rule matched.
func newApproval(c *pendingCall, rule *Permission) *approval {
	q := fmt.Sprintf("Allow the agent to call %s with %s? (rule: %s) Answer approve, or deny with a reason.", c.Name, clip(string(c.Args), 400), rule)
	return &approval{Call: c.ID, Question: q}
}

// command is the AskHuman command for a at step, about call c.
func (a *approval) command(step int, c pendingCall) Command {
	return Command{Type: AskHuman, ID: "h" + strconv.Itoa(step) + "." + c.ID, Question: a.Question,
		Approval: &ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}}
}

// answer reads a person's reply, or that nobody could give one (ev is
// EventHumanUnavailable): whether the call may run and, if not, why.
func (a *approval) answer(ev *Event) (ok bool, refused string) {
	if ev.Type == EventHumanUnavailable {
		return false, "nobody could approve it now"
	}
	ok, why := approved(ev)
	if ok {
		return true, ""
	}
	reason := "a person refused this call"
	if why = strings.TrimSpace(why); why != "" && !strings.EqualFold(why, "deny") {
		reason += ": " + why
	}
	return false, reason
}

// approved reads a person's answer to an approval question.
func approved(ev *Event) (bool, string) {
	if ev.Approved != nil {
		return *ev.Approved, ev.Text
	}
	t := strings.ToLower(strings.TrimSpace(ev.Text))
	for _, yes := range []string{"approve", "approved", "yes", "y", "allow", "ok"} {
		if t == yes || strings.HasPrefix(t, yes+" ") || strings.HasPrefix(t, yes+":") || strings.HasPrefix(t, yes+",") {
			return true, ""
		}
	}
	return false, ev.Text
}
