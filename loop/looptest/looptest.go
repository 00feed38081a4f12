// Package looptest drives a loop.Machine from readable scripts, the third
// driver of the core beside the runner and (later) the Temporal workflow.
//
// Scripts use the datadriven format (github.com/cockroachdb/datadriven): one
// directive per block, its input below it, and the expected output after
// "----". Run tests with -rewrite to regenerate expected output. Directives:
//
//	spec [mode=agent|generate] [tools=(a,b)] [cheap=(c)] [expensive=(d)]
//	     [holdout=(e)] [steps=N] [model_calls=N] [tool_calls=N]
//	     [total_tokens=N] [cost=USD] [time=DUR] [escalate] [window=N]
//	     [patience=N] [max_reply_bytes=N] [samples=N] [threshold=X]
//	     [high_stakes] [key=failing] [allow|ask|deny=(tool[:arg=glob],…)]
//	     [compact_at=N] [keep_turns=N] [summary_tokens=N] [scratchpad] [plan]
//	     [show_tokens] [sub_tools=(a,…)] [sub_cheap=(c,…)]
//	     [sub_expensive=(d,…)] [sub_steps=N] [sub_tokens=N] [sub_cost=USD]
//	     [sub_max=N]
//	  <goal>
//	start [at=DUR]
//	reply [call=ID] [at=DUR] [in=N] [cache_read=N] [cache_write=N] [out=N]
//	      [cost=USD] [unknown_cost] [via=MODEL]
//	  text: <thought>
//	  call <id> <tool> <json args>
//	model-error [call=ID] [at=DUR] [kind=K]
//	  <message>
//	result id=<call> [error] [at=DUR] [lines=N]
//	  <output>       (lines=N: N numbered lines of 60 bytes instead)
//	verdict check=<name> (ok|fail) [cmd=ID] [where=W] [at=DUR]
//	  <detail>
//	check-error [cmd=ID] [kind=K]
//	child cmd=<id> status=<status> [at=DUR] [steps=N] [model_calls=N]
//	      [tool_calls=N] [in=N] [out=N] [cost=USD]
//	  <answer>       (none: no answer was submitted)
//	human [at=DUR]
//	  <answer>
//	no-human
//	guardrail name=<name> stage=(input|output) [call=ID] [escalate] [out=N]
//	          [at=DUR]   (out=N: the stopped reply, of N output tokens)
//	  <reason>
//	cancel [at=DUR]
//	resume [at=DUR]
//	say [at=DUR]     a message a person sends the running run
//	  <message>
//	fork [at=DUR] [steps=N]   carry a copied run on (steps: a new budget)
//	  <message>      (none: no message)
//	request          prints the messages of the latest model request
//	tool name=<tool> prints the input schema of a tool the latest model
//	                 request offered
//	usage            prints the run's usage against its limits
//	snapshot         round-trips the machine through Snapshot/Restore and
//	                 prints the commands Pending rebuilds
//
// A line "output_schema: <JSON>" in the spec's input is the output schema
// (a typed answer), not part of the goal.
// show_tokens adds each model call's input estimate (est=N) to its line.
// The sub_* arguments turn on sub-agents (Policy.Subagents): sub_cheap and
// sub_expensive list the checks a child may be given.
// Times are offsets from a fixed epoch. After each input directive the
// output shows the notes and commands the machine produced.
package looptest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// Epoch is time zero of every script.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Driver holds one machine under test.
type Driver struct {
	m           *loop.Machine
	now         time.Duration
	lastRequest *model.Request
	modelCall   string // the latest CallModel command's ID
	pending     string // the latest Verify command's ID
	showTokens  bool
	// Recorder, when set, is given each machine's spec (defaults applied)
	// as it is made, then every event it accepts with the Ready it led to:
	// what a run's log holds, for recording golden logs (package replay).
	Recorder func(spec *loop.Spec, ev *loop.Event, rd loop.Ready)
}

// Record runs the script at path without checking expected output, giving
// rec every spec, accepted event and Ready as Driver.Recorder describes.
func Record(t testing.TB, path string, rec func(spec *loop.Spec, ev *loop.Event, rd loop.Ready)) {
	d := &Driver{Recorder: rec}
	datadriven.RunTestAny(t, path, func(t testing.TB, td *datadriven.TestData) string {
		d.Do(t, td)
		return td.Expected
	})
}

// RunFile runs the script at path.
func RunFile(t *testing.T, path string) {
	d := &Driver{}
	datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
		return d.Do(t, td)
	})
}

// Transcript runs the script at path against a fresh Driver without checking
// expected output and returns everything the directives printed, so that two
// runs can be compared for determinism.
func Transcript(t *testing.T, path string) string {
	d := &Driver{}
	var b strings.Builder
	datadriven.RunTestAny(t, path, func(t testing.TB, td *datadriven.TestData) string {
		b.WriteString(d.Do(t, td))
		return td.Expected
	})
	return b.String()
}

// Do runs one directive and returns its output.
func (d *Driver) Do(t testing.TB, td *datadriven.TestData) string {
	if td.Cmd == "spec" {
		return d.spec(t, td)
	}
	if d.m == nil {
		return "error: no spec yet\n"
	}
	ev, out := d.event(t, td)
	if out != "" {
		return out
	}
	if err := d.m.Step(ev); err != nil {
		return "error: " + err.Error() + "\n"
	}
	rd := d.m.Ready()
	if d.Recorder != nil {
		d.Recorder(nil, &ev, rd)
	}
	out = d.render(rd)
	d.m.Advance()
	return out
}

// event builds the event a directive stands for; out, when not empty, is
// the directive's whole output instead (an inspection, or an error).
func (d *Driver) event(t testing.TB, td *datadriven.TestData) (ev loop.Event, out string) {
	if td.HasArg("at") {
		var at string
		td.ScanArgs(t, "at", &at)
		dur, err := time.ParseDuration(at)
		if err != nil {
			return ev, "error: " + err.Error() + "\n"
		}
		d.now = dur
	}
	ev = loop.Event{At: Epoch.Add(d.now)}
	switch td.Cmd {
	case "start":
		ev.Type = loop.EventStart
	case "reply":
		ev.Type, ev.Call = loop.EventModelReply, d.target(t, td, "call", d.modelCall)
		r, err := parseReply(t, td)
		if err != nil {
			return ev, "error: " + err.Error() + "\n"
		}
		ev.Reply = &r
	case "model-error":
		ev.Type, ev.Call, ev.Error = loop.EventModelError, d.target(t, td, "call", d.modelCall), parseFailure(t, td)
	case "result":
		var id string
		td.ScanArgs(t, "id", &id)
		ev.Type, ev.Call, ev.Tool = loop.EventToolResult, id, parseOutcome(t, td)
	case "verdict":
		ev.Type, ev.Call, ev.Verdict = loop.EventVerdict, d.target(t, td, "cmd", d.pending), parseVerdict(t, td)
	case "check-error":
		ev.Type, ev.Call, ev.Error = loop.EventCheckError, d.target(t, td, "cmd", d.pending), parseFailure(t, td)
	case "child":
		res, err := parseChild(t, td)
		if err != nil {
			return ev, "error: " + err.Error() + "\n"
		}
		var cmd string
		td.ScanArgs(t, "cmd", &cmd)
		ev.Type, ev.Call, ev.Child = loop.EventChildResult, cmd, &res
	case "human":
		ev.Type, ev.Text = loop.EventHumanReply, strings.TrimSpace(td.Input)
	case "no-human":
		ev.Type = loop.EventHumanUnavailable
	case "guardrail":
		ev.Type, ev.Call = loop.EventGuardrail, d.target(t, td, "call", d.modelCall)
		ev.Guardrail, ev.Reply = parseTrip(t, td)
	case "tool":
		return ev, d.toolSchema(t, td)
	case "cancel":
		ev.Type, ev.Text = loop.EventCancel, strings.TrimSpace(td.Input)
	case "resume":
		ev.Type = loop.EventResume
	case "say":
		ev.Type, ev.Text = loop.EventUserMessage, strings.TrimSpace(td.Input)
	case "fork":
		ev.Type, ev.Text = loop.EventFork, strings.TrimSpace(td.Input)
		if td.HasArg("steps") {
			l := d.m.Spec().Budget
			td.ScanArgs(t, "steps", &l.Steps)
			ev.Limits = &l
		}
	case "request", "usage", "snapshot":
		return ev, d.inspect(td.Cmd)
	default:
		return ev, "error: unknown directive " + td.Cmd + "\n"
	}
	return ev, ""
}

// parseFailure reads a model-error or check-error directive's failure.
func parseFailure(t testing.TB, td *datadriven.TestData) *loop.Failure {
	kind := "error"
	if td.HasArg("kind") {
		td.ScanArgs(t, "kind", &kind)
	}
	return &loop.Failure{Kind: kind, Message: strings.TrimSpace(td.Input)}
}

// parseOutcome reads a result directive's tool outcome.
func parseOutcome(t testing.TB, td *datadriven.TestData) *loop.ToolOutcome {
	out := &loop.ToolOutcome{Output: td.Input, IsError: td.HasArg("error"), Outcome: "ok"}
	if td.HasArg("lines") {
		var n int
		td.ScanArgs(t, "lines", &n)
		out.Output = Lines(n)
	}
	if out.IsError {
		out.Outcome = "tool_error"
	}
	return out
}

// parseVerdict reads a verdict directive's verdict.
func parseVerdict(t testing.TB, td *datadriven.TestData) *verify.Verdict {
	var check string
	td.ScanArgs(t, "check", &check)
	v := verify.Verdict{Check: check, OK: td.HasArg("ok"), Confidence: 1, Detail: strings.TrimSpace(td.Input), Provenance: verify.Validation}
	if td.HasArg("where") {
		td.ScanArgs(t, "where", &v.Where)
	}
	return &v
}

// target is the command an event answers: the key argument if given, else
// the latest command of its kind.
func (d *Driver) target(t testing.TB, td *datadriven.TestData, key, latest string) string {
	if td.HasArg(key) {
		var id string
		td.ScanArgs(t, key, &id)
		return id
	}
	return latest
}

// inspect runs a directive that feeds no event: request, usage, snapshot.
func (d *Driver) inspect(cmd string) string {
	switch cmd {
	case "request":
		return renderMessages(d.lastRequest)
	case "usage":
		return budget.Report(d.m.Spec().Budget, d.m.Usage()) + "\n"
	case "snapshot":
		data, err := d.m.Snapshot()
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		m, err := loop.Restore(data, d.m.Spec().Policy.Key)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		again, _ := m.Snapshot()
		if string(again) != string(data) {
			return "error: snapshot changed across restore\n"
		}
		d.m = m
		out := fmt.Sprintf("restored at phase %s; pending:\n", m.Phase())
		return out + d.render(loop.Ready{Commands: m.Pending()})
	}
	return ""
}

// parseTrip reads a guardrail directive's trip, and the reply it stopped.
func parseTrip(t testing.TB, td *datadriven.TestData) (*loop.GuardrailTrip, *model.Response) {
	g := &loop.GuardrailTrip{Escalate: td.HasArg("escalate"), Reason: strings.TrimSpace(td.Input)}
	td.ScanArgs(t, "name", &g.Name)
	td.ScanArgs(t, "stage", &g.Stage)
	if !td.HasArg("out") {
		return g, nil
	}
	r := &model.Response{Usage: model.Usage{CostKnown: true}}
	td.ScanArgs(t, "out", &r.Usage.OutputTokens)
	return g, r
}

// toolSchema prints the input schema of the tool name= in the latest
// model request.
func (d *Driver) toolSchema(t testing.TB, td *datadriven.TestData) string {
	var name string
	td.ScanArgs(t, "name", &name)
	if d.lastRequest == nil {
		return "error: no model request yet\n"
	}
	for _, t := range d.lastRequest.Tools {
		if t.Name == name {
			return string(t.InputSchema) + "\n"
		}
	}
	return "error: the latest request offers no tool " + name + "\n"
}

func parseReply(t testing.TB, td *datadriven.TestData) (model.Response, error) {
	var r model.Response
	r.Usage.CostKnown = !td.HasArg("unknown_cost")
	if td.HasArg("in") {
		td.ScanArgs(t, "in", &r.Usage.InputTokens)
	}
	if td.HasArg("cache_read") {
		td.ScanArgs(t, "cache_read", &r.Usage.CacheReadTokens)
	}
	if td.HasArg("cache_write") {
		td.ScanArgs(t, "cache_write", &r.Usage.CacheWriteTokens)
	}
	if td.HasArg("out") {
		td.ScanArgs(t, "out", &r.Usage.OutputTokens)
	}
	if td.HasArg("stop") { // the provider's stop reason, e.g. refusal
		td.ScanArgs(t, "stop", &r.StopReason)
	}
	if td.HasArg("via") { // the fallback chain's member that answered
		td.ScanArgs(t, "via", &r.Via)
	}
	if td.HasArg("cost") {
		var c string
		td.ScanArgs(t, "cost", &c)
		f, err := strconv.ParseFloat(c, 64)
		if err != nil {
			return r, err
		}
		r.Usage.Cost = budget.USD(f)
	}
	for _, line := range strings.Split(td.Input, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "text:"):
			// One space after the colon is syntax; the rest (indentation) is text.
			r.Content = append(r.Content, model.TextBlock(strings.TrimPrefix(strings.TrimPrefix(line, "text:"), " ")))
		case strings.HasPrefix(line, "call "):
			f := strings.SplitN(strings.TrimPrefix(line, "call "), " ", 3)
			if len(f) < 2 {
				return r, fmt.Errorf("bad call line %q: want call <id> <tool> <args>", line)
			}
			b := model.Block{Type: model.ToolUse, ID: f[0], Name: f[1]}
			if f[0] == "-" {
				b.ID = ""
			}
			if len(f) == 3 {
				b.Input = json.RawMessage(f[2])
			}
			r.Content = append(r.Content, b)
		case strings.HasPrefix(line, "bytes "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "bytes "))
			if err != nil {
				return r, err
			}
			r.Content = append(r.Content, model.TextBlock(strings.Repeat("x", n)))
		default:
			return r, fmt.Errorf("bad reply line %q", line)
		}
	}
	return r, nil
}

// parseChild reads a child directive's Result.
func parseChild(t testing.TB, td *datadriven.TestData) (loop.Result, error) {
	var status string
	td.ScanArgs(t, "status", &status)
	res := loop.Result{Status: loop.Status(status), Reason: "the sub-agent ended " + status}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"in", &res.Usage.InputTokens}, {"out", &res.Usage.OutputTokens}} {
		if td.HasArg(f.key) {
			td.ScanArgs(t, f.key, f.dst)
		}
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"steps", &res.Usage.Steps}, {"model_calls", &res.Usage.ModelCalls}, {"tool_calls", &res.Usage.ToolCalls}} {
		if td.HasArg(f.key) {
			td.ScanArgs(t, f.key, f.dst)
		}
	}
	if td.HasArg("cost") {
		var c string
		td.ScanArgs(t, "cost", &c)
		f, err := strconv.ParseFloat(c, 64)
		if err != nil {
			return res, err
		}
		res.Usage.Cost = budget.USD(f)
	}
	if td.HasArg("via") { // a fallback chain's model answered every call
		u := res.Usage
		res.ByModel = []loop.ModelUsage{{ModelCalls: u.ModelCalls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost}}
		td.ScanArgs(t, "via", &res.ByModel[0].Model)
	}
	if answer := strings.TrimSpace(td.Input); answer != "" {
		ok := res.Status == loop.Done
		summary := fmt.Sprintf("attempt 1 answered %q: ", answer)
		if ok {
			summary += "passed every check"
		} else {
			summary += "failed facts (scripted)"
		}
		res.Attempts = []loop.Attempt{{N: 1, Answer: answer, Confidence: 0.9, Accepted: ok, Summary: summary}}
		res.Best = &res.Attempts[0]
	}
	return res, nil
}
