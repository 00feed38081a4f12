package loop

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

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

type search struct {
	// FinishID is the tool_use that submitted the first candidate; feedback
	// answers it. Empty in generate mode, where feedback is a user message.
	FinishID string `json:"finish_id,omitempty"`
	// Cands are the attempt numbers judged, the model's own first.
	Cands []int `json:"cands"`
	// Stage is the tier being checked; empty while samples are awaited.
	Stage verify.Tier `json:"stage,omitempty"`
	// Order holds the candidates still to try expensive checks on.
	Order []int `json:"order,omitempty"`
	// Winner is the attempt that passed every gate check.
	Winner int `json:"winner,omitempty"`
}

func verifyID(n int, t verify.Tier) string { return "v" + strconv.Itoa(n) + "." + string(t) }

// submit records a candidate from the model's own turn and starts judging it.
func (m *Machine) submit(answer string, conf float64, finishID, how string) {
	n := m.addAttempt(answer, conf, false)
	m.note(Note{Type: NoteAttempt, Step: m.st.Step, Attempt: n, Text: fmt.Sprintf("attempt %d (confidence %.2f%s): %s", n, conf, how, clip(answer, 200))})
	m.st.Search = &search{FinishID: finishID, Cands: []int{n}}
	if m.unsure(conf) && !m.st.Closing {
		if m.sample() {
			return
		}
	}
	m.beginChecks()
}

func (m *Machine) addAttempt(answer string, conf float64, sample bool) int {
	n := len(m.st.Attempts) + 1
	m.st.Attempts = append(m.st.Attempts, Attempt{N: n, Step: m.st.Step, Answer: answer, Confidence: conf, Sample: sample})
	return n
}

func (m *Machine) unsure(conf float64) bool {
	return m.spec.Policy.HighStakes || conf < m.spec.Policy.ConfidenceThreshold
}

// sample asks for up to Samples alternatives, as many as the budget allows
// beyond the closing reserve. It reports whether any were requested.
func (m *Machine) sample() bool {
	pol := m.spec.Policy
	est := m.estimateInput()
	var ids []string
	// Every sample requested so far is projected too, so that together
	// they never eat into the closing reserve.
	need := pol.Reserve
	need.Cost = max(need.Cost, m.st.MaxCallCost)
	for range max(pol.Samples, 0) {
		need.ModelCalls++
		need.InputTokens += est
		need.OutputTokens += int64(pol.MaxOutputTokens)
		need.Cost += m.st.MaxCallCost
		if _, over := budget.Exceeds(m.spec.Budget, m.st.Usage, need); over {
			break
		}
		m.st.CallSeq++
		m.st.Usage.ModelCalls++
		ids = append(ids, "m"+strconv.Itoa(m.st.CallSeq))
	}
	if len(ids) == 0 {
		return false
	}
	m.st.Call = callParams{Purpose: model.PurposeSample, MaxOut: pol.MaxOutputTokens, Keep: pol.Reserve.Time}
	for _, id := range ids {
		m.emit(m.modelCommand(id))
	}
	m.st.Awaiting = ids
	m.st.Phase = PhaseSample
	return true
}

// sampleRequest is what alternatives are asked with: the history before
// the reply that submitted the candidate (they answer the same turn), plus
// a nudge.
func (m *Machine) sampleRequest() ([]model.Message, []model.ToolSpec) {
	nudge, tools := nudgePrompt, []model.ToolSpec{finishSpec}
	if m.spec.Mode == ModeGenerate {
		nudge, tools = nudgeGeneratePrompt, nil
	}
	h := m.st.History
	msgs := append(slices.Clip(h[:len(h)-1]), model.Message{Role: model.User, Content: []model.Block{model.TextBlock(strings.TrimSpace(nudge))}})
	return msgs, tools
}

// onSample takes one alternative; a reply that does not submit exactly one
// candidate is dropped with a note.
func (m *Machine) onSample(id string, r *model.Response, f *Failure) {
	m.st.Awaiting = slices.DeleteFunc(m.st.Awaiting, func(a string) bool { return a == id })
	var problem string
	switch {
	case f != nil:
		problem = "the call failed: " + f.Message
	default:
		m.charge(r.Usage)
		answer, conf, how, err := m.candidateOf(r)
		if err != nil {
			problem = err.Error()
			break
		}
		n := m.addAttempt(answer, conf, true)
		m.st.Search.Cands = append(m.st.Search.Cands, n)
		m.note(Note{Type: NoteAttempt, Step: m.st.Step, Attempt: n, Text: fmt.Sprintf("attempt %d, an alternative (confidence %.2f%s): %s", n, conf, how, clip(answer, 200))})
	}
	if problem != "" {
		m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "sample_dropped", Text: "alternative " + id + " dropped: " + problem})
	}
	if len(m.st.Awaiting) == 0 {
		m.beginChecks()
	}
}

// candidateOf reads a sample reply: a lone finish call in agent mode, the
// reply's artifact in generate mode.
func (m *Machine) candidateOf(r *model.Response) (answer string, conf float64, how string, err error) {
	if m.spec.Mode == ModeGenerate {
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
	answer, conf, err = parseFinish(finish.Input)
	return answer, conf, "", err
}

func statedNote(stated bool) string {
	if stated {
		return ""
	}
	return ", none stated"
}

// beginChecks starts the first gate tier that has checks.
func (m *Machine) beginChecks() {
	s := m.st.Search
	if len(m.checksIn(verify.Cheap)) > 0 {
		s.Stage = verify.Cheap
		for _, n := range s.Cands {
			m.verify(n, verify.Cheap)
		}
		return
	}
	s.Stage = verify.Expensive
	s.Order = m.byConfidence(s.Cands)
	m.verifyNext()
}

// byConfidence orders attempts most confident first, earlier first on ties.
func (m *Machine) byConfidence(ns []int) []int {
	out := slices.Clone(ns)
	slices.SortStableFunc(out, func(a, b int) int {
		ca, cb := m.st.Attempts[a-1].Confidence, m.st.Attempts[b-1].Confidence
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

func (m *Machine) verify(n int, t verify.Tier) {
	m.st.Awaiting = append(m.st.Awaiting, verifyID(n, t))
	m.st.Phase = PhaseVerify
	m.emit(m.verifyCommand(n, t))
}

// verifyCommand builds the Verify command for tier t of attempt n.
func (m *Machine) verifyCommand(n int, t verify.Tier) Command {
	a := m.st.Attempts[n-1]
	keep := m.spec.Policy.Reserve.Time
	if m.st.Closing {
		keep = 0
	}
	var peers []string
	for _, c := range m.st.Search.Cands {
		if c != n {
			peers = append(peers, m.st.Attempts[c-1].Answer)
		}
	}
	return Command{Type: Verify, ID: verifyID(n, t), Deadline: m.deadline(keep),
		CommandDetail: &CommandDetail{
			Candidate: &verify.Candidate{Answer: a.Answer, Confidence: a.Confidence, Attempt: n, Peers: peers},
			Checks:    m.checksIn(t),
		}}
}

// verifyNext runs the expensive checks on the next candidate in order.
func (m *Machine) verifyNext() {
	s := m.st.Search
	if len(s.Order) == 0 {
		m.reject()
		return
	}
	n := s.Order[0]
	s.Order = s.Order[1:]
	m.verify(n, verify.Expensive)
}

func (m *Machine) checksIn(t verify.Tier) []string {
	var names []string
	for _, c := range m.spec.Checks {
		if c.Tier == t {
			names = append(names, c.Name)
		}
	}
	return names
}

// parseVerifyID splits a Verify command ID into attempt and tier.
func (m *Machine) parseVerifyID(id string) (int, verify.Tier, bool) {
	num, tier, ok := strings.Cut(strings.TrimPrefix(id, "v"), ".")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || n > len(m.st.Attempts) || !slices.Contains(m.st.Awaiting, id) {
		return 0, "", false
	}
	return n, verify.Tier(tier), true
}

// verdictsFor returns the list a verdict for tier t of attempt a goes to.
func verdictsFor(a *Attempt, t verify.Tier) *[]verify.Verdict {
	if t == verify.Holdout {
		return &a.Holdout
	}
	return &a.Verdicts
}

// awaitingCheck reports whether a verdict for check on command id is due.
func (m *Machine) awaitingCheck(id, check string) bool {
	if m.isPlanCheck(id) {
		p := m.st.Plan
		return check == p.Steps[p.Current].Check
	}
	n, t, ok := m.parseVerifyID(id)
	if !ok || !slices.Contains(m.checksIn(t), check) {
		return false
	}
	return !slices.ContainsFunc(*verdictsFor(&m.st.Attempts[n-1], t), func(v verify.Verdict) bool { return v.Check == check })
}

func (m *Machine) onVerdict(id string, v verify.Verdict) {
	n, t, _ := m.parseVerifyID(id)
	a := &m.st.Attempts[n-1]
	list := verdictsFor(a, t)
	*list = append(*list, v)
	m.st.Usage.Cost += v.Cost
	tierChecks := m.checksIn(t)
	got, failed := 0, false
	for _, v := range *list {
		if slices.Contains(tierChecks, v.Check) {
			got++
			failed = failed || !v.OK
		}
	}
	if got < len(tierChecks) {
		return
	}
	m.st.Awaiting = slices.DeleteFunc(m.st.Awaiting, func(a string) bool { return a == id })
	s := m.st.Search
	switch t {
	case verify.Holdout:
		m.acceptWinner()
	case verify.Cheap:
		if len(m.st.Awaiting) > 0 {
			return // other candidates' cheap checks are still running
		}
		var survivors []int
		for _, c := range s.Cands {
			if len(m.st.Attempts[c-1].Failing()) == 0 {
				survivors = append(survivors, c)
			}
		}
		switch {
		case len(survivors) == 0:
			m.reject()
		case len(m.checksIn(verify.Expensive)) == 0:
			m.win(m.byConfidence(survivors)[0])
		default:
			s.Stage, s.Order = verify.Expensive, m.byConfidence(survivors)
			m.verifyNext()
		}
	case verify.Expensive:
		if !failed {
			m.win(n)
			return
		}
		m.verifyNext()
	}
}

// onCheckDeadline handles checks cut off by the ordinary time deadline: the
// candidates stay unjudged, the model is told, and the reserved closing
// turn begins, as after a model call cut off at the same deadline. In the
// closing turn itself the run ends exhausted.
func (m *Machine) onCheckDeadline(msg string) {
	s := m.st.Search
	if m.st.Closing || s == nil {
		m.stop(Exhausted(budget.Time), "a check was cut off by the time budget: "+msg)
		return
	}
	for _, c := range s.Cands {
		a := &m.st.Attempts[c-1]
		a.Summary = summarize(*a, false)
	}
	m.st.Abandoned = append(m.st.Abandoned, m.st.Awaiting...)
	m.st.Awaiting = nil
	text := "Not judged: the checks ran out of time (" + clip(msg, 200) + ")."
	if s.FinishID != "" {
		m.st.Outbox = append(m.st.Outbox, model.Block{Type: model.ToolResult, ID: s.FinishID, Text: text, IsError: true})
	} else {
		m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
	}
	m.st.Search = nil
	m.beginClosing(budget.Time)
	m.nextTurn()
}

// onHoldoutError records a holdout check that could not run as a failed
// holdout verdict: holdout checks never gate done, so an infrastructure
// problem in one must not take away an accepted answer. It reports whether
// the error was a holdout one.
func (m *Machine) onHoldoutError(id string, f Failure) bool {
	n, t, ok := m.parseVerifyID(id)
	if !ok || t != verify.Holdout {
		return false
	}
	a := &m.st.Attempts[n-1]
	for _, name := range m.checksIn(verify.Holdout) {
		if !slices.ContainsFunc(a.Holdout, func(v verify.Verdict) bool { return v.Check == name }) {
			a.Holdout = append(a.Holdout, verify.Verdict{Check: name, Detail: "could not run: " + f.Message})
		}
	}
	m.st.Awaiting = slices.DeleteFunc(m.st.Awaiting, func(a string) bool { return a == id })
	m.acceptWinner()
	return true
}

// win records the attempt that passed every gate check, then runs the
// holdout checks, if any, before finishing.
func (m *Machine) win(n int) {
	s := m.st.Search
	s.Winner = n
	if len(m.checksIn(verify.Holdout)) > 0 {
		s.Stage, s.Order = verify.Holdout, nil
		m.verify(n, verify.Holdout)
		return
	}
	m.acceptWinner()
}

func (m *Machine) acceptWinner() {
	s := m.st.Search
	for _, c := range s.Cands {
		a := &m.st.Attempts[c-1]
		a.Summary = summarize(*a, c == s.Winner)
	}
	a := &m.st.Attempts[s.Winner-1]
	a.Accepted = true
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
	self := selfJudged(a.Verdicts)
	if self != "" {
		reason += "; " + self
	}
	m.stop(Done, reason)
	m.st.Result.SelfJudged = self != ""
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

// reject feeds back the most informative failure of the search.
func (m *Machine) reject() {
	s := m.st.Search
	for _, c := range s.Cands {
		a := &m.st.Attempts[c-1]
		a.Summary = summarize(*a, false)
	}
	best := s.Cands[0]
	for _, c := range s.Cands[1:] {
		if m.moreInformative(c, best) {
			best = c
		}
	}
	a := m.st.Attempts[best-1]
	feedback := m.feedback(a)
	m.note(Note{Type: NoteRejected, Step: m.st.Step, Attempt: a.N, Text: feedback})
	if s.FinishID != "" {
		m.st.Outbox = append(m.st.Outbox, model.Block{Type: model.ToolResult, ID: s.FinishID, Text: feedback, IsError: true})
	} else {
		m.st.Outbox = append(m.st.Outbox, model.TextBlock(feedback))
	}
	m.st.Search = nil
	if m.st.Closing {
		m.stopExhausted(fmt.Sprintf("the closing attempt %d failed %s", a.N, strings.Join(a.Failing(), ", ")))
		return
	}
	if m.observe(progress.Observation{Kind: progress.Attempt, Failing: a.Failing(), Candidate: a.Answer}) {
		m.nextTurn()
	}
}

// moreInformative reports whether attempt x's failure says more than y's:
// fewer failing checks, then more checks run, then higher confidence.
func (m *Machine) moreInformative(x, y int) bool {
	a, b := m.st.Attempts[x-1], m.st.Attempts[y-1]
	if fa, fb := len(a.Failing()), len(b.Failing()); fa != fb {
		return fa < fb
	}
	if len(a.Verdicts) != len(b.Verdicts) {
		return len(a.Verdicts) > len(b.Verdicts)
	}
	return a.Confidence > b.Confidence
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
