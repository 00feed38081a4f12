package scripted_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
)

// TestRecordRoundTrip: what a Recorder writes, played back, gives the same
// replies, usage and errors in the same order.
func TestRecordRoundTrip(t *testing.T) {
	bad := `{"a": 2,` // a model may send invalid JSON; the recording keeps it
	orig := scripted.Script{Name: "orig", Turns: []scripted.Turn{
		{Thinking: "read a.txt first: é \"q\"\n", Text: "Let me look: \"quoted\"\n and a second line", Tools: []scripted.ToolCall{{Name: "read_file", Args: map[string]string{"path": "a.txt"}}, {Name: "add", RawArgs: &bad}}},
		{Error: "overloaded: try again"},
		{Text: "done", Finish: &scripted.Finish{Answer: "TOTAL: 1\n- x: 'y'", Confidence: new(0.8)}},
		{Usage: &scripted.Usage{InputTokens: 120, OutputTokens: 7, CacheReadTokens: 3}},
	}}
	req := model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("go")}}}}
	play := func(m model.Model) (out []model.Response, errs []string) {
		for range orig.Turns {
			resp, err := m.Generate(context.Background(), req)
			out = append(out, resp)
			if err != nil {
				errs = append(errs, err.Error())
			}
		}
		return out, errs
	}
	inner, err := scripted.New(orig, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := scripted.Record(inner)
	want, wantErrs := play(rec)
	if b := want[0].Content[0]; b.Type != model.Thinking || b.Text != orig.Turns[0].Thinking {
		t.Fatalf("the first reply starts with %+v, want the turn's thinking", b)
	}
	if rec.Name() != "orig" {
		t.Errorf("Name = %q, want the wrapped model's", rec.Name())
	}
	var buf bytes.Buffer
	if err := scripted.WriteScript(&buf, rec.Script("recorded")); err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Parse(buf.Bytes(), "recorded.yaml")
	if err != nil {
		t.Fatalf("the recording does not parse: %v\n%s", err, buf.String())
	}
	replayed, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	got, gotErrs := play(replayed)
	for i := range want {
		want[i].Model, got[i].Model = "", "" // the script's name
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed replies differ (-recorded +replayed):\n%s\n%s", diff, buf.String())
	}
	if diff := cmp.Diff(wantErrs, gotErrs); diff != "" {
		t.Errorf("replayed errors differ (-recorded +replayed):\n%s", diff)
	}
}

// TestRecordSkipsCancelled: a call cancelled by its caller has no reply and
// leaves no turn, so the script stays in step with the run.
func TestRecordSkipsCancelled(t *testing.T) {
	inner, _ := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "a"}}}, scripted.Config{Quiet: true})
	rec := scripted.Record(inner)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rec.Generate(ctx, model.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if n := len(rec.Script("x").Turns); n != 0 {
		t.Errorf("a cancelled call left %d turns", n)
	}
}
