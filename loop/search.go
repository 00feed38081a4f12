package loop

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// A search is how one submitted candidate is judged. A confident candidate is
// checked alone. An unsure one (confidence below the threshold, or any
// candidate when the task is high-stakes) first gets k alternatives sampled
// in parallel with a diversity nudge; then cheap checks run on every
// candidate, expensive checks run on the survivors in confidence order until
// one passes, and holdout checks run on the winner without ever being fed
// back. When nothing passes, the most informative failure goes back.

var (
	//go:embed prompts/nudge.txt
	nudgePrompt string
	//go:embed prompts/nudge_generate.txt
	nudgeGeneratePrompt string
)

// search is the judging of one submitted candidate and its alternatives.
// The attempts it judges are the run's (Machine's); it holds their numbers.
type search struct {
	// FinishID is the tool_use that submitted the first candidate; feedback
	// answers it. Empty in generate mode, where feedback is a user message.
	FinishID string `json:"finish_id,omitempty"`
	// Closing says the candidate is the closing turn's: no alternatives,
	// checks may use the whole time left, and a rejection ends the run.
	Closing bool `json:"closing,omitempty"`
	// Cands are the attempt numbers judged, the model's own first.
	Cands []int `json:"cands"`
	// Stage is the tier being checked; empty while samples are awaited.
	Stage verify.Tier `json:"stage,omitempty"`
	// Order holds the candidates still to try expensive checks on.
	Order []int `json:"order,omitempty"`
	// Winner is the attempt that passed every gate check.
	Winner int `json:"winner,omitempty"`
	// Running are the Verify commands in flight; started, those of them
	// not yet issued.
	Running []verifyJob `json:"running,omitempty"`
	started []verifyJob
}

// verifyJob is one Verify command: a tier of checks on one attempt.
type verifyJob struct {
	ID      string      `json:"id"`
	Attempt int         `json:"attempt"`
	Tier    verify.Tier `json:"tier"`
}

// judgement is what the search decided after a change.
type judgement int

const (
	searching judgement = iota // verdicts are still due
	accepted                   // Winner passed every gate check (and ran its holdout checks)
	rejected                   // nothing passed: feed back the most informative failure
)

// checksIn names the checks of tier t.
func checksIn(checks []Check, t verify.Tier) []string {
	var names []string
	for _, c := range checks {
		if c.Tier == t {
			names = append(names, c.Name)
		}
	}
	return names
}

// run starts tier t on attempt n.
func (s *search) run(n int, t verify.Tier) {
	j := verifyJob{ID: "v" + strconv.Itoa(n) + "." + string(t), Attempt: n, Tier: t}
	s.Running = append(s.Running, j)
	s.started = append(s.started, j)
}

// start begins with the first gate tier that has checks.
func (s *search) start(attempts []Attempt, checks []Check) judgement {
	if len(checksIn(checks, verify.Cheap)) > 0 {
		s.Stage = verify.Cheap
		for _, n := range s.Cands {
			s.run(n, verify.Cheap)
		}
		return searching
	}
	s.Stage, s.Order = verify.Expensive, byConfidence(attempts, s.Cands)
	return s.next()
}

// next runs the expensive checks on the next candidate in order.
func (s *search) next() judgement {
	if len(s.Order) == 0 {
		return rejected
	}
	s.run(s.Order[0], verify.Expensive)
	s.Order = s.Order[1:]
	return searching
}

// job returns the index of the Verify command id in flight, or -1.
func (s *search) job(id string) int {
	return slices.IndexFunc(s.Running, func(j verifyJob) bool { return j.ID == id })
}

// due reports whether a verdict of check for Verify command id is awaited.
func (s *search) due(id, check string, attempts []Attempt, checks []Check) bool {
	i := s.job(id)
	if i < 0 || !slices.Contains(checksIn(checks, s.Running[i].Tier), check) {
		return false
	}
	j := s.Running[i]
	return !slices.ContainsFunc(*verdictsFor(&attempts[j.Attempt-1], j.Tier), func(v verify.Verdict) bool { return v.Check == check })
}

// verdictsFor returns the list a verdict for tier t of attempt a goes to.
func verdictsFor(a *Attempt, t verify.Tier) *[]verify.Verdict {
	if t == verify.Holdout {
		return &a.Holdout
	}
	return &a.Verdicts
}

// record takes verdict v for Verify command id, and decides what follows
// once its tier is complete.
func (s *search) record(id string, v verify.Verdict, attempts []Attempt, checks []Check) judgement {
	j := s.Running[s.job(id)]
	list := verdictsFor(&attempts[j.Attempt-1], j.Tier)
	*list = append(*list, v)
	tierChecks := checksIn(checks, j.Tier)
	got, failed := 0, false
	for _, v := range *list {
		if slices.Contains(tierChecks, v.Check) {
			got++
			failed = failed || !v.OK
		}
	}
	if got < len(tierChecks) {
		return searching
	}
	s.Running = slices.DeleteFunc(s.Running, func(r verifyJob) bool { return r.ID == id })
	switch j.Tier {
	case verify.Holdout:
		return accepted
	case verify.Cheap:
		if len(s.Running) > 0 {
			return searching // other candidates' cheap checks are still running
		}
		var survivors []int
		for _, c := range s.Cands {
			if len(attempts[c-1].Failing()) == 0 {
				survivors = append(survivors, c)
			}
		}
		switch {
		case len(survivors) == 0:
			return rejected
		case len(checksIn(checks, verify.Expensive)) == 0:
			return s.win(byConfidence(attempts, survivors)[0], checks)
		}
		s.Stage, s.Order = verify.Expensive, byConfidence(attempts, survivors)
		return s.next()
	}
	if !failed {
		return s.win(j.Attempt, checks)
	}
	return s.next()
}

// holdoutFailed records holdout checks that could not run on Verify
// command id as failed verdicts: holdout checks never gate done, so an
// infrastructure problem in one must not take away an accepted answer.
// It reports false when id is not a holdout command.
func (s *search) holdoutFailed(id string, f Failure, attempts []Attempt, checks []Check) bool {
	i := s.job(id)
	if i < 0 || s.Running[i].Tier != verify.Holdout {
		return false
	}
	a := &attempts[s.Running[i].Attempt-1]
	for _, name := range checksIn(checks, verify.Holdout) {
		if !slices.ContainsFunc(a.Holdout, func(v verify.Verdict) bool { return v.Check == name }) {
			a.Holdout = append(a.Holdout, verify.Verdict{Check: name, Detail: "could not run: " + f.Message})
		}
	}
	s.Running = slices.Delete(s.Running, i, i+1)
	return true
}

// win records the attempt that passed every gate check, then runs the
// holdout checks, if any.
func (s *search) win(n int, checks []Check) judgement {
	s.Winner = n
	if len(checksIn(checks, verify.Holdout)) > 0 {
		s.Stage, s.Order = verify.Holdout, nil
		s.run(n, verify.Holdout)
		return searching
	}
	return accepted
}

// command is the Verify command for job j, whose attempt's peers are the
// other candidates.
func (s *search) command(j verifyJob, attempts []Attempt, checks []Check, deadline time.Time) Command {
	a := attempts[j.Attempt-1]
	var peers []string
	for _, c := range s.Cands {
		if c != j.Attempt {
			peers = append(peers, attempts[c-1].Answer)
		}
	}
	return Command{Type: Verify, ID: j.ID, Deadline: deadline,
		Candidate: &verify.Candidate{Answer: a.Answer, Confidence: a.Confidence, Attempt: j.Attempt, Peers: peers},
		Checks:    checksIn(checks, j.Tier)}
}

// conclude writes every candidate's summary, the winner's (if any) as
// passing.
func (s *search) conclude(attempts []Attempt) {
	for _, c := range s.Cands {
		a := &attempts[c-1]
		a.Summary = summarize(*a, c == s.Winner)
	}
}

// mostInformative is the candidate whose failure says most: fewer failing
// checks, then more checks run, then higher confidence; the earlier on
// ties.
func (s *search) mostInformative(attempts []Attempt) int {
	best := s.Cands[0]
	for _, c := range s.Cands[1:] {
		a, b := attempts[c-1], attempts[best-1]
		fa, fb := len(a.Failing()), len(b.Failing())
		if fa < fb || (fa == fb && (len(a.Verdicts) > len(b.Verdicts) || (len(a.Verdicts) == len(b.Verdicts) && a.Confidence > b.Confidence))) {
			best = c
		}
	}
	return best
}

// byConfidence orders attempts ns most confident first, earlier first on
// ties.
func byConfidence(attempts []Attempt, ns []int) []int {
	out := slices.Clone(ns)
	slices.SortStableFunc(out, func(a, b int) int {
		ca, cb := attempts[a-1].Confidence, attempts[b-1].Confidence
		switch {
		case ca > cb:
			return -1
		case ca < cb:
			return 1
		}
		return 0
	})
	return out
}

// sampleRequest is what alternatives are asked with: the history before
// the reply that submitted the candidate (they answer the same turn), plus
// a nudge.
func sampleRequest(h []model.Message, mode Mode, finish model.ToolSpec) ([]model.Message, []model.ToolSpec) {
	nudge, tools := nudgePrompt, []model.ToolSpec{finish}
	if mode == ModeGenerate {
		nudge, tools = nudgeGeneratePrompt, nil
	}
	msgs := append(slices.Clip(h[:len(h)-1]), model.Message{Role: model.User, Content: []model.Block{model.TextBlock(strings.TrimSpace(nudge))}})
	return msgs, tools
}

// candidateOf reads a sample reply: a lone finish call in agent mode, the
// reply's artifact in generate mode.
func candidateOf(r *model.Response, mode Mode, typed bool) (answer string, conf float64, how string, err error) {
	if r.StopReason == "max_tokens" {
		return "", 0, "", fmt.Errorf("it was cut off at the output limit")
	}
	if mode == ModeGenerate {
		answer, conf, stated := ExtractCandidate(replyText(r.Content))
		if strings.TrimSpace(answer) == "" {
			return "", 0, "", fmt.Errorf("it holds no answer")
		}
		return answer, conf, statedNote(stated), nil
	}
	var finish *model.Block
	for i, b := range r.Content {
		if b.Type == model.ToolUse {
			if finish != nil || b.Name != FinishTool {
				return "", 0, "", fmt.Errorf("it must call finish once and nothing else")
			}
			finish = &r.Content[i]
		}
	}
	if finish == nil {
		return "", 0, "", fmt.Errorf("it did not call finish")
	}
	answer, conf, err = parseFinish(finish.Input, typed)
	return answer, conf, "", err
}

func statedNote(stated bool) string {
	if stated {
		return ""
	}
	return ", none stated"
}

// --- the machine's side ---

// submit records a candidate from the model's own turn and starts judging
// it; closing says it is the closing turn's.
func (m *Machine) submit(answer string, conf float64, finishID, how string, closing bool) {
	n := m.st.addAttempt(answer, conf, false)
	m.ready.note(Note{Type: NoteAttempt, Step: m.st.Step, Attempt: n, Text: fmt.Sprintf("attempt %d (confidence %.2f%s): %s", n, conf, how, clip(answer, 200))})
	m.st.Search = &search{FinishID: finishID, Cands: []int{n}, Closing: closing}
	pol := m.spec.Policy
	if (pol.HighStakes || conf < pol.ConfidenceThreshold) && !closing && m.sample() {
		return
	}
	m.follow(m.st.Search.start(m.st.Attempts, m.spec.Checks))
}

// sample asks for up to Samples alternatives, as many as the budget allows
// beyond the closing reserve. It reports whether any were requested.
func (m *Machine) sample() bool {
	pol := m.spec.Policy
	est := m.req.estimate(&m.st, false)
	// Every sample requested so far is projected too, so that together
	// they never eat into the closing reserve.
	used, need, n := m.st.Usage, pol.Reserve, 0
	need.Cost = max(need.Cost, m.st.MaxCallCost)
	for range max(pol.Samples, 0) {
		need.ModelCalls++
		need.InputTokens += est
		need.OutputTokens += int64(pol.MaxOutputTokens)
		need.Cost += m.st.MaxCallCost
		if _, over := budget.Exceeds(m.spec.Budget, used, need); over {
			break
		}
		used.ModelCalls++
		n++
	}
	if n == 0 {
		return false
	}
	m.callModel(model.PurposeSample, n, pol.MaxOutputTokens, pol.Reserve.Time)
	return true
}

// stepSample is the handler of phaseSample: one alternative arrives; a
// reply that does not submit exactly one candidate is dropped with a note.
func (m *Machine) stepSample(ev *Event) {
	m.st.Awaiting = slices.DeleteFunc(m.st.Awaiting, func(a string) bool { return a == ev.Call })
	var problem string
	if ev.Type == EventModelError {
		problem = "the call failed: " + ev.Error.Message
	} else {
		m.st.charge(ev.Reply)
		answer, conf, how, err := candidateOf(ev.Reply, m.spec.Mode, len(m.spec.OutputSchema) > 0)
		if err != nil {
			problem = err.Error()
		} else {
			n := m.st.addAttempt(answer, conf, true)
			m.st.Search.Cands = append(m.st.Search.Cands, n)
			m.ready.note(Note{Type: NoteAttempt, Step: m.st.Step, Attempt: n, Text: fmt.Sprintf("attempt %d, an alternative (confidence %.2f%s): %s", n, conf, how, clip(answer, 200))})
		}
	}
	if problem != "" {
		m.ready.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "sample_dropped", Text: "alternative " + ev.Call + " dropped: " + problem})
	}
	if len(m.st.Awaiting) == 0 {
		m.follow(m.st.Search.start(m.st.Attempts, m.spec.Checks))
	}
}

// stepChecks is the handler of phaseChecks: a verdict on a candidate, or a
// check that could not run.
func (m *Machine) stepChecks(ev *Event) {
	s := m.st.Search
	switch {
	case ev.Type == EventVerdict:
		m.st.Usage.Cost += ev.Verdict.Cost
		m.follow(s.record(ev.Call, *ev.Verdict, m.st.Attempts, m.spec.Checks))
	case s.holdoutFailed(ev.Call, *ev.Error, m.st.Attempts, m.spec.Checks):
		m.follow(accepted)
	case ev.Error.Kind == FailDeadline && s.Closing:
		m.end(Exhausted(budget.Time), "a check was cut off by the time budget: "+ev.Error.Message)
	case ev.Error.Kind == FailDeadline:
		// The candidates stay unjudged, the model is told, and the
		// reserved closing turn begins, as after a model call cut off at
		// the same deadline.
		s.conclude(m.st.Attempts)
		for _, j := range s.Running {
			m.st.Abandoned = append(m.st.Abandoned, j.ID)
		}
		m.st.answerSearch("Not judged: the checks ran out of time (" + clip(ev.Error.Message, 200) + ").")
		m.closeTurn(budget.Time)
	default:
		m.end(Failed, "a check could not run: "+ev.Error.Message)
	}
}

// follow carries out what the search decided: the Verify commands it
// started, the accepted attempt, or the rejection.
func (m *Machine) follow(v judgement) {
	s := m.st.Search
	switch v {
	case searching:
		m.st.Phase = phaseChecks
		keep := m.spec.Policy.Reserve.Time
		if s.Closing {
			keep = 0
		}
		for _, j := range s.started {
			m.ready.emit(s.command(j, m.st.Attempts, m.spec.Checks, m.st.deadline(m.spec.Budget.Time, keep)))
		}
		s.started = nil
	case accepted:
		s.conclude(m.st.Attempts)
		a := &m.st.Attempts[s.Winner-1]
		a.Accepted = true
		m.stop(Done, acceptance(*a))
		m.st.Result.SelfJudged = selfJudged(a.Verdicts) != ""
		m.st.Result.InProcessOnly = inProcessOnly(a.Verdicts) != ""
	case rejected:
		s.conclude(m.st.Attempts)
		a := m.st.Attempts[s.mostInformative(m.st.Attempts)-1]
		fb := feedback(a, m.st.Attempts[:a.N-1], m.spec.Policy.MaxFeedbackBytes, m.spec.Mode)
		m.ready.note(Note{Type: NoteRejected, Step: m.st.Step, Attempt: a.N, Text: fb})
		m.st.answerSearch(fb)
		if s.Closing {
			m.end(exhausted(m.st.Closing, fmt.Sprintf("the closing attempt %d failed %s", a.N, strings.Join(a.Failing(), ", "))))
			return
		}
		if m.observe(progress.Observation{Kind: progress.Attempt, Failing: a.Failing(), Candidate: a.Answer}) {
			m.nextTurn()
		}
	}
}

// acceptance is the reason a run ends done with attempt a.
func acceptance(a Attempt) string {
	reason := "attempt " + strconv.Itoa(a.N) + " passed every check"
	if a.Sample {
		reason = "attempt " + strconv.Itoa(a.N) + ", an alternative sampled because the model was unsure, passed every check"
	}
	if h := len(a.Holdout); h > 0 {
		failed := 0
		for _, v := range a.Holdout {
			if !v.OK {
				failed++
			}
		}
		reason += fmt.Sprintf(" (holdout: %d of %d passed)", h-failed, h)
	}
	if self := selfJudged(a.Verdicts); self != "" {
		reason += "; " + self
	}
	if in := inProcessOnly(a.Verdicts); in != "" {
		reason += "; " + in
	}
	return reason
}

// inProcessOnly says in words that the execution checks among verdicts,
// an accepted attempt's, all ran the candidate in its tests' process; ""
// when there is none, or one ran in judge isolation.
func inProcessOnly(verdicts []verify.Verdict) string {
	var names []string
	for _, v := range verdicts {
		switch v.Isolation {
		case verify.JudgeIsolation:
			return ""
		case verify.InProcessIsolation:
			names = append(names, v.Check)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "its execution checks (" + strings.Join(names, ", ") + ") ran the candidate inside the tests' process, where it could reach the verdict; no check in judge isolation confirmed it"
}

// selfJudged says in words that verdicts, an accepted attempt's, are all
// self-judged (verify.Self: a vote, a grader that is not independent), so
// that nothing independent confirmed it; "" when one check was independent.
func selfJudged(verdicts []verify.Verdict) string {
	var names []string
	for _, v := range verdicts {
		if v.Provenance != verify.Self {
			return ""
		}
		names = append(names, v.Check)
	}
	if len(names) == 0 {
		return ""
	}
	return "accepted on self-judged checks alone (" + strings.Join(names, ", ") + "): the generator judged itself, and no independent check confirmed the answer"
}

// confidenceLine finds a "CONFIDENCE: x" line; the last one wins.
var confidenceLine = regexp.MustCompile(`(?im)^[ \t*_#>-]*confidence[ \t*_]*[:=][ \t*_]*([0-9]*\.?[0-9]+)[ \t*_%]*$`)

// fence finds the first fenced block: its info string and body.
var fence = regexp.MustCompile("(?s)```[^\\n`]*\\n(.*?)```")

// ExtractCandidate reads a generate-mode reply: the answer is the body of the
// first fenced code block, or else the whole text, without confidence lines;
// the confidence comes from the last "CONFIDENCE: x" line (a percentage when
// x > 1 and ends in %; values outside [0, 1] are not a stated confidence).
// An unstated confidence is 0: the candidate is treated as unsure.
func ExtractCandidate(text string) (answer string, confidence float64, stated bool) {
	for _, m := range confidenceLine.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil && strings.Contains(m[0], "%") {
			v /= 100
		}
		if err == nil && v >= 0 && v <= 1 {
			confidence, stated = v, true
		}
	}
	if f := fence.FindStringSubmatch(text); f != nil {
		return strings.TrimSpace(f[1]), confidence, stated
	}
	return strings.TrimSpace(confidenceLine.ReplaceAllString(text, "")), confidence, stated
}

func replyText(blocks []model.Block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == model.Text {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
