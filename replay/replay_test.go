package replay_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

func conf(f float64) *float64 { return &f }

// record runs a task with the given turns and returns its log.
func record(t *testing.T, turns ...scripted.Turn) []byte {
	return recordWith(t, loop.Policy{}, turns...)
}

func recordWith(t *testing.T, policy loop.Policy, turns ...scripted.Turn) []byte {
	t.Helper()
	add := tool.Func("add", "Add two integers.", func(_ context.Context, in addIn) (int, error) { return in.A + in.B, nil })
	m, err := scripted.New(scripted.Script{Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	_, _ = runner.Run(context.Background(), runner.Task{
		Goal:   "What is 2+3?",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 8, Time: time.Minute},
		Policy: policy,
	}, runner.Config{Model: m, Observers: []observe.Observer{jl}})
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	return log.Bytes()
}

func replayLog(t *testing.T, log []byte) (replay.Summary, error) {
	t.Helper()
	recs, err := observe.ReadJSONL(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	return replay.Run(recs)
}

// TestRecordedRunsReplayIdentically covers tools, malformed arguments
// (logged as invalid_input), rejection, sampled alternatives and the end.
func TestRecordedRunsReplayIdentically(t *testing.T) {
	bad := `{"a": 2,`
	log := record(t,
		scripted.Turn{Text: "adding", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}, {Name: "add", RawArgs: &bad}}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.9)}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "4", Confidence: conf(0.3)}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.8)}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.8)}},
	)
	sum, err := replayLog(t, log)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if sum.Events < 8 || sum.Outputs < 8 {
		t.Errorf("summary %+v: too little replayed", sum)
	}
}

// TestTamperedLogDiverges: a changed verdict makes the core decide
// differently, and replay says where.
func TestTamperedLogDiverges(t *testing.T) {
	log := record(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}})
	tampered := bytes.Replace(log, []byte(`"ok":true`), []byte(`"ok":false`), 1)
	if bytes.Equal(tampered, log) {
		t.Fatal("nothing to tamper with")
	}
	_, err := replayLog(t, tampered)
	var div *replay.Divergence
	if !errors.As(err, &div) || div.After == 0 || !strings.Contains(div.Got, "rejected") {
		t.Fatalf("err %v: want a divergence where the attempt is now rejected", err)
	}
}

// TestSamplingOffReplays: the recorded spec has its defaults applied, and
// applying them again must not turn sampling back on.
func TestSamplingOffReplays(t *testing.T) {
	log := recordWith(t, loop.Policy{Samples: -1},
		scripted.Turn{Finish: &scripted.Finish{Answer: "4", Confidence: conf(0.1)}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.1)}},
	)
	if _, err := replayLog(t, log); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

func TestLogWithoutSpec(t *testing.T) {
	if _, err := replay.Run(nil); err == nil || !strings.Contains(err.Error(), "spec") {
		t.Errorf("err %v", err)
	}
}
