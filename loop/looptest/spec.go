package looptest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

func (d *Driver) spec(_ testing.TB, td *datadriven.TestData) string {
	s := loop.Spec{Goal: strings.TrimSpace(td.Input)}
	if goal, schema, ok := strings.Cut(td.Input, "output_schema: "); ok {
		s.Goal, s.OutputSchema = strings.TrimSpace(goal), json.RawMessage(strings.TrimSpace(schema))
	}
	d.showTokens = false
	for _, arg := range td.CmdArgs {
		val := ""
		if len(arg.Vals) > 0 {
			val = arg.Vals[0]
		}
		num := func() int64 { n, _ := strconv.ParseInt(val, 10, 64); return n }
		switch arg.Key {
		case "tools":
			for _, name := range arg.Vals {
				s.Tools = append(s.Tools, model.ToolSpec{Name: name, Description: "test tool " + name, InputSchema: json.RawMessage(`{"type":"object"}`)})
			}
		case "allow", "ask", "deny":
			// tool or tool:arg=glob
			for _, v := range arg.Vals {
				p := loop.Permission{Action: loop.Action(arg.Key), Tool: v}
				if name, pat, ok := strings.Cut(v, ":"); ok {
					argName, glob, _ := strings.Cut(pat, "=")
					p.Tool, p.Args = name, []loop.ArgPattern{{Name: argName, Pattern: glob}}
				}
				s.Permissions = append(s.Permissions, p)
			}
		case "cheap", "expensive", "holdout":
			for _, name := range arg.Vals {
				s.Checks = append(s.Checks, loop.Check{Name: name, Tier: verify.Tier(arg.Key)})
			}
		case "steps":
			s.Budget.Steps = int(num())
		case "model_calls":
			s.Budget.ModelCalls = int(num())
		case "tool_calls":
			s.Budget.ToolCalls = int(num())
		case "total_tokens":
			s.Budget.TotalTokens = num()
		case "cost":
			f, _ := strconv.ParseFloat(val, 64)
			s.Budget.Cost = budget.USD(f)
		case "time":
			s.Budget.Time, _ = time.ParseDuration(val)
		case "mode":
			s.Mode = loop.Mode(val)
		case "show_tokens":
			d.showTokens = true
		default:
			if !policyArg(&s.Policy, arg) {
				return "error: unknown spec argument " + arg.Key + "\n"
			}
		}
	}
	m, err := loop.New(s)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	d.m, d.now, d.lastRequest = m, 0, nil
	if d.Recorder != nil {
		spec := m.Spec()
		d.Recorder(&spec, nil, loop.Ready{})
	}
	return "ok\n"
}

// policyArg applies one spec argument that sets the policy, reporting
// whether it is one.
func policyArg(p *loop.Policy, arg datadriven.CmdArg) bool {
	val := ""
	if len(arg.Vals) > 0 {
		val = arg.Vals[0]
	}
	num := func() int64 { n, _ := strconv.ParseInt(val, 10, 64); return n }
	switch arg.Key {
	case "escalate":
		p.Escalate = true
	case "samples":
		p.Samples = int(num())
	case "threshold":
		p.ConfidenceThreshold, _ = strconv.ParseFloat(val, 64)
	case "high_stakes":
		p.HighStakes = true
	case "window":
		p.Progress.Window = int(num())
	case "patience":
		p.Progress.Patience = int(num())
	case "max_reply_bytes":
		p.MaxReplyBytes = int(num())
	case "compact_at":
		p.CompactAt = num()
	case "keep_turns":
		p.KeepTurns = int(num())
	case "summary_tokens":
		p.SummaryTokens = int(num())
	case "scratchpad":
		p.Scratchpad = true
	case "plan":
		p.Plan = true
	case "sub_tools", "sub_cheap", "sub_expensive", "sub_steps", "sub_tokens", "sub_cost", "sub_max":
		if p.Subagents == nil {
			p.Subagents = &loop.Subagents{}
		}
		sub := p.Subagents
		switch arg.Key {
		case "sub_tools":
			sub.Tools = arg.Vals
		case "sub_cheap", "sub_expensive":
			for _, name := range arg.Vals {
				sub.Checks = append(sub.Checks, loop.Check{Name: name, Tier: verify.Tier(strings.TrimPrefix(arg.Key, "sub_"))})
			}
		case "sub_steps":
			sub.Budget.Steps = int(num())
		case "sub_tokens":
			sub.Budget.TotalTokens = num()
		case "sub_cost":
			f, _ := strconv.ParseFloat(val, 64)
			sub.Budget.Cost = budget.USD(f)
		case "sub_max":
			sub.MaxChildren = int(num())
		}
	case "key":
		if val == "failing" {
			// A caller-supplied key: only the failing checks count as progress.
			p.Key = func(o progress.Observation) progress.Key {
				return progress.Key(string(o.Kind) + ":" + strings.Join(o.Failing, ","))
			}
		}
	default:
		return false
	}
	return true
}
