package check

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// Point is one named point of a grader's rubric.
type Point struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// GraderConfig configures Grader.
type GraderConfig struct {
	// Model is the grader: a separate model from the one generating.
	Model model.Model
	// ModelName names the grader model, like a model string
	// ("anthropic:claude-…"); when empty, the Model's own name is used if it
	// implements model.Named.
	ModelName string
	// GeneratorName names the generating model, in the same form.
	GeneratorName string
	// AllowSelfReview accepts a grader that is not independent of the
	// generator. Its verdicts then carry provenance Self (low signal)
	// instead of Grader.
	AllowSelfReview bool
	// Independent vouches that the grader is independent of the generator
	// whatever their names say (say, two deployments known to differ), so
	// the name rule is not applied.
	Independent bool
	// Rubric is the points the grader scores; names are unique (ignoring case).
	Rubric []Point
	// PassMark is how many points must pass; 0 means all of them.
	PassMark int
	// Goal is the task the candidate answers, shown to the grader.
	Goal string
}

//go:embed grader.txt
var graderPrompt string

var graderTemplate = template.Must(template.New("grader").Parse(graderPrompt))

// Grader returns a rubric grader, named "grader": a separate model reads the
// goal, the rubric and the candidate (the prompt is grader.txt, embedded) and
// says for each point whether it passes, as JSON. The check passes when at
// least PassMark points pass.
//
// Independence is enforced: a grader that shares the generator's provider
// or model family is a mirror, not a check (it shares the generator's blind
// spots and tends to approve what it wrote), so Grader returns an error
// unless ModelName and GeneratorName differ in both their provider (the
// part before the first colon: "anthropic:") and their model family (the
// model name's leading letters: "claude", "gpt", "llama"), or Independent
// vouches for the grader. AllowSelfReview accepts such a grader, and its
// provenance is then verify.Self instead of verify.Grader. Names are
// compared ignoring case; a name without a provider shares every provider.
// Both names are required: independence cannot be checked without them.
//
// The reply is read leniently: the JSON may sit in a ```json fence or among
// other text (the last object with a "points" list wins), point names match
// ignoring case and surrounding space, "pass" may be a boolean or a word
// (pass/fail, yes/no, true/false), unknown names are ignored, and a point
// the grader did not answer counts as failed. A point answered twice passes
// only if both answers pass.
//
// Verdict.Confidence is the fraction of rubric points the grader answered;
// Detail lists the failing points with the grader's reasons and Where names
// the first; Cost is the grader call's cost. A failed model call is an error
// (the check could not run). A reply that cannot be read at all is NOT an
// error but a failed verdict, "the grader's reply could not be read", with
// confidence 0: the call itself worked, and a garbled reply is model
// behaviour, like a malformed reply from the generator, which ratchet treats
// as an observation rather than a crash. Ending the run as failed because a
// grader once rambled would waste everything spent so far; a rejected
// candidate costs one more attempt, and the zero confidence marks the verdict
// as carrying no evidence about the candidate.
func Grader(cfg GraderConfig) (verify.Verifier, error) {
	if cfg.Model == nil {
		return nil, errors.New("grader check: no model given")
	}
	if cfg.ModelName == "" {
		if n, ok := cfg.Model.(model.Named); ok {
			cfg.ModelName = n.Name()
		}
	}
	switch {
	case strings.TrimSpace(cfg.ModelName) == "":
		return nil, errors.New("grader check: the grader model's name is unknown (set ModelName); without it, independence from the generator cannot be checked")
	case strings.TrimSpace(cfg.GeneratorName) == "":
		return nil, errors.New("grader check: the generator's model name is empty (set GeneratorName); without it, the grader's independence cannot be checked")
	}
	if len(cfg.Rubric) == 0 {
		return nil, errors.New("grader check: the rubric is empty; give the named points to grade")
	}
	seen := map[string]bool{}
	for i, p := range cfg.Rubric {
		switch key := pointKey(p.Name); {
		case key == "":
			return nil, fmt.Errorf("grader check: rubric point %d has no name", i+1)
		case strings.ContainsAny(p.Name, "\n\r"):
			return nil, fmt.Errorf("grader check: rubric point %q: the name must be one line", p.Name)
		case seen[key]:
			return nil, fmt.Errorf("grader check: rubric point %q is named twice (names are compared ignoring case)", p.Name)
		case strings.TrimSpace(p.Description) == "":
			return nil, fmt.Errorf("grader check: rubric point %q has no description; the grader needs to know what it means", p.Name)
		default:
			seen[key] = true
		}
	}
	passMark := cfg.PassMark
	switch {
	case passMark < 0:
		return nil, fmt.Errorf("grader check: pass mark %d is negative", passMark)
	case passMark > len(cfg.Rubric):
		return nil, fmt.Errorf("grader check: pass mark %d is more than the %d rubric points", passMark, len(cfg.Rubric))
	case passMark == 0:
		passMark = len(cfg.Rubric)
	}
	prov := verify.Grader
	if shared := dependence(cfg.ModelName, cfg.GeneratorName); shared != "" && !cfg.Independent {
		if !cfg.AllowSelfReview {
			return nil, fmt.Errorf("grader check: the grader %q shares %s with the generator %q; a grader of the generator's own provider or model family is a mirror, not a check: it shares the generator's blind spots and tends to approve its own answers. Use a model of another provider and family, say it is independent if you know better (Independent), or set AllowSelfReview to accept a low-signal self review", cfg.ModelName, shared, cfg.GeneratorName)
		}
		prov = verify.Self
	}
	g := &grader{cfg: cfg, passMark: passMark}
	return &verifier{name: "grader", prov: prov, fn: g.check}, nil
}

type grader struct {
	cfg      GraderConfig
	passMark int
}

func (g *grader) check(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
	prompt, err := graderRequest(g.cfg.Goal, g.cfg.Rubric, c.Answer)
	if err != nil {
		return verify.Verdict{}, fmt.Errorf("grader check: %w", err)
	}
	resp, err := g.cfg.Model.Generate(ctx, model.Request{
		Messages:        []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock(prompt)}}},
		MaxOutputTokens: min(1024+256*len(g.cfg.Rubric), 8192),
	})
	if err != nil {
		return verify.Verdict{}, fmt.Errorf("grader check: the grader model %q failed: %w", g.cfg.ModelName, err)
	}
	var reply strings.Builder
	for _, b := range resp.Content {
		if b.Type == model.Text {
			reply.WriteString(b.Text)
		}
	}
	cost := resp.Usage.Cost
	grades, ok := parseGrade(reply.String(), g.cfg.Rubric)
	if !ok {
		detail := "the grader's reply could not be read"
		if resp.StopReason == "max_tokens" || resp.StopReason == "length" {
			detail += " (it was cut off at the output limit)"
		}
		return verify.Verdict{Confidence: 0, Detail: detail, Cost: cost}, nil
	}
	answered, passed := 0, 0
	var failed []string
	where := ""
	for _, p := range grades {
		if p.answered {
			answered++
		}
		if p.pass {
			passed++
			continue
		}
		reason := clip(oneLine(p.reason), 200)
		switch {
		case !p.answered:
			reason = "not graded (the grader gave no verdict on this point)"
		case reason == "":
			reason = "failed (no reason given)"
		}
		if where == "" {
			where = p.name
		}
		failed = append(failed, p.name+": "+reason)
	}
	n := len(g.cfg.Rubric)
	detail := fmt.Sprintf("%d of %d rubric points passed", passed, n)
	if g.passMark < n || passed < g.passMark {
		detail += fmt.Sprintf(" (%d needed)", g.passMark)
	}
	if len(failed) > 0 {
		detail += "; failed: " + strings.Join(failed, "; ")
	}
	ok = passed >= g.passMark
	if ok {
		where = ""
	}
	return verify.Verdict{OK: ok, Confidence: float64(answered) / float64(n), Detail: clip(detail, 2000), Where: where, Cost: cost}, nil
}

// graderRequest renders the grader prompt. The candidate is fenced by a tag
// it does not contain, so it cannot close the fence and speak as the prompt.
func graderRequest(goal string, rubric []Point, answer string) (string, error) {
	tag := "candidate"
	lower := strings.ToLower(answer)
	for i := 2; strings.Contains(lower, "<"+tag) || strings.Contains(lower, "</"+tag); i++ {
		tag = "candidate-" + strconv.Itoa(i)
	}
	var b bytes.Buffer
	err := graderTemplate.Execute(&b, struct {
		Goal, Tag, Answer string
		Rubric            []Point
	}{strings.TrimSpace(goal), tag, answer, rubric})
	return b.String(), err
}

// dependence says what the grader and generator models named a and b
// share, in words ("its provider anthropic", "its model family claude"),
// or "" when they are independent: another provider and another family.
// Either may be a fallback chain (model strings joined by commas): every
// model of one must be independent of every model of the other, since any
// of them may answer.
func dependence(a, b string) string {
	for _, x := range strings.Split(a, ",") {
		for _, y := range strings.Split(b, ",") {
			if shared := dependence1(x, y); shared != "" {
				return shared
			}
		}
	}
	return ""
}

// dependence1 is dependence of two single model strings.
func dependence1(a, b string) string {
	ap, af := modelID(a)
	bp, bf := modelID(b)
	var shared []string
	switch {
	case ap == "" || bp == "":
		shared = append(shared, "perhaps its provider (one name has none)")
	case ap == bp:
		shared = append(shared, "its provider "+ap)
	}
	if af == bf {
		shared = append(shared, "its model family "+cmpOr(af, "(unnamed)"))
	}
	return strings.Join(shared, " and ")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// modelID splits a model string into its provider, the part before the
// first colon when that is a word ("anthropic", "openai-compatible"), and
// its model family, the model name's leading letters: "claude" of
// "claude-sonnet-4-5", "gpt" of "gpt-4.1", "llama" of an
// openai-compatible "http://host/v1#llama3.1". Both are lower case.
func modelID(s string) (provider, family string) {
	s = strings.ToLower(strings.TrimSpace(s))
	if p, rest, ok := strings.Cut(s, ":"); ok && p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyz-_") == "" {
		provider, s = p, rest
	}
	if _, model, ok := strings.Cut(s, "#"); ok {
		s = model // a base URL, then the model
	}
	s = strings.TrimSpace(s[strings.LastIndex(s, "/")+1:])
	end := 0
	for end < len(s) && s[end] >= 'a' && s[end] <= 'z' {
		end++
	}
	return provider, s[:end]
}

// pointKey is how rubric point names are matched: trimmed, white space
// collapsed, lower case.
func pointKey(name string) string { return strings.ToLower(oneLine(name)) }

// pointGrade is the grader's verdict on one rubric point.
type pointGrade struct {
	name     string
	answered bool // the grader gave a readable pass or fail
	pass     bool
	reason   string
}

// maxGradeReply bounds the reply parseGrade reads; maxGradeAttempts bounds
// how many '{' it tries to decode from.
const (
	maxGradeReply    = 256 << 10
	maxGradeAttempts = 256
)

// parseGrade reads a grader's reply: one grade per rubric point, in rubric
// order, and whether the reply held a readable {"points": [...]} object at
// all. When it did not, every point is unanswered.
func parseGrade(reply string, rubric []Point) ([]pointGrade, bool) {
	grades := make([]pointGrade, len(rubric))
	index := make(map[string]int, len(rubric))
	for i, p := range rubric {
		grades[i].name = p.Name
		if _, dup := index[pointKey(p.Name)]; !dup {
			index[pointKey(p.Name)] = i
		}
	}
	points, ok := findPoints(reply)
	if !ok {
		return grades, false
	}
	for _, raw := range points {
		var item map[string]json.RawMessage
		if json.Unmarshal(raw, &item) != nil {
			continue
		}
		var name string
		if json.Unmarshal(item["name"], &name) != nil {
			continue
		}
		i, known := index[pointKey(name)]
		if !known {
			continue // not a rubric point
		}
		passRaw, has := item["pass"]
		if !has {
			passRaw = item["passed"]
		}
		pass, readable := readPass(passRaw)
		var reason string
		if json.Unmarshal(item["reason"], &reason) != nil {
			reason = strings.TrimSpace(string(item["reason"]))
		}
		g := &grades[i]
		if !readable {
			if g.reason == "" {
				g.reason = reason
			}
			continue
		}
		first := !g.answered
		switch {
		case first:
			g.answered, g.pass, g.reason = true, pass, reason
		case g.pass && !pass: // answered twice: a fail wins, with its reason
			g.pass, g.reason = false, reason
		}
	}
	return grades, true
}

// findPoints returns the "points" list of the last JSON object in the reply
// that has one.
func findPoints(reply string) ([]json.RawMessage, bool) {
	if len(reply) > maxGradeReply {
		return nil, false
	}
	var found []json.RawMessage
	ok := false
	attempts := 0
	for i := 0; i < len(reply) && attempts < maxGradeAttempts; {
		j := strings.IndexByte(reply[i:], '{')
		if j < 0 {
			break
		}
		i += j
		attempts++
		dec := json.NewDecoder(strings.NewReader(reply[i:]))
		var obj struct {
			Points *[]json.RawMessage `json:"points"`
		}
		if dec.Decode(&obj) != nil {
			i++
			continue
		}
		if obj.Points == nil {
			i++ // an object without points may hold one that has them
			continue
		}
		found, ok = *obj.Points, true
		i += max(int(dec.InputOffset()), 1)
	}
	return found, ok
}

// readPass reads a point's "pass": a boolean, or a word for one.
func readPass(raw json.RawMessage) (pass, ok bool) {
	var b bool
	if json.Unmarshal(raw, &b) == nil && len(raw) > 0 && string(raw) != "null" {
		return b, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "pass", "passed", "yes":
		return true, true
	case "false", "fail", "failed", "no":
		return false, true
	}
	return false, false
}
