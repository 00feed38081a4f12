package loop

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/model"
)

// turns is a history of the goal then n turns, each a call and its result
// of size bytes.
func turns(n, size int) *history {
	h := &history{}
	h.append(model.Message{Role: model.User, Content: []model.Block{model.TextBlock("goal")}})
	for i := range n {
		id := string(rune('a' + i))
		h.append(model.Message{Role: model.Assistant, Content: []model.Block{{Type: model.ToolUse, ID: id, Name: "look"}}})
		h.append(model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: id, Text: strings.Repeat("x", size)}}})
	}
	return h
}

// Compaction is due over the threshold, not again straight after an
// attempt, and after a failed one only when compactRetry steps passed.
func TestCompactionDue(t *testing.T) {
	for _, tc := range []struct {
		c    compactor
		at   int64
		step int
		est  int64
		want bool
	}{
		{compactor{}, 0, 5, 1e6, false},
		{compactor{}, 100, 5, 100, false},
		{compactor{}, 100, 5, 101, true},
		{compactor{Step: 5}, 100, 5, 1e6, false},
		{compactor{Step: 5}, 100, 6, 1e6, true},
		{compactor{Step: 5, Failed: true}, 100, 7, 1e6, false},
		{compactor{Step: 5, Failed: true}, 100, 5 + compactRetry, 1e6, true},
	} {
		if got := tc.c.due(tc.at, tc.step, tc.est); got != tc.want {
			t.Errorf("%+v due(%d, %d, %d) = %v", tc.c, tc.at, tc.step, tc.est, got)
		}
	}
}

// The middle between the goal and the kept turns is summarised: the goal
// stays first, the summary follows it, the kept turns stay verbatim.
func TestCompactionApply(t *testing.T) {
	var c compactor
	if c.begin(turns(2, 100), 2, 1, 50) {
		t.Fatal("begun with no middle to summarise")
	}
	h := turns(5, 1000)
	if !c.begin(h, 2, 7, 900) || c.Job.From != 1 || c.Job.To != 7 || c.Step != 7 {
		t.Fatalf("begin: %+v step %d", c.Job, c.Step)
	}
	if got := c.request("goal", "pad", h)[0].Content[0].Text; !strings.Contains(got, "<scratchpad>\npad\n</scratchpad>") || strings.Count(got, "[result of ") != 3 {
		t.Errorf("request %q", got)
	}
	kept := h.Messages[7:]
	if s := c.apply(model.Response{}, h, "goal", 100); s != "" || !c.Failed || len(h.Messages) != 11 {
		t.Fatalf("an empty reply must change nothing but Failed: %q %v %d", s, c.Failed, len(h.Messages))
	}
	c.Job = &compaction{From: 1, To: 7}
	if s := c.apply(model.Response{Content: []model.Block{model.TextBlock(" done a-c ")}}, h, "goal", 100); s != "done a-c" || c.Job != nil {
		t.Fatalf("apply = %q, job %+v", s, c.Job)
	}
	if len(h.Messages) != 5 || h.Messages[0].Content[0].Text != "goal" || !strings.HasSuffix(h.Messages[0].Content[1].Text, "done a-c") || h.Messages[1].Content[0].ID != kept[0].Content[0].ID {
		t.Errorf("history after: %+v", h.Messages)
	}
	if c.Summary != "done a-c" {
		t.Errorf("summary kept: %q", c.Summary)
	}
	c.Job = &compaction{From: 1, To: 2}
	if got := c.request("goal", "", h)[0].Content[0].Text; !strings.Contains(got, "<summary>\ndone a-c\n</summary>") {
		t.Errorf("the next compaction must fold the summary in: %q", got)
	}
	var want int64
	for _, m := range h.Messages {
		want += model.MessageWeight(m)
	}
	if h.Bytes != want {
		t.Errorf("history sized %d, want %d", h.Bytes, want)
	}
}

// The fallback cuts long old tool outputs once, marking the cut.
func TestElide(t *testing.T) {
	h := turns(3, 5000)
	if n := elide(h, 5); n != 2 {
		t.Fatalf("cut %d outputs, want the 2 before message 5", n)
	}
	if got := h.Messages[2].Content[0].Text; !strings.HasSuffix(got, elisionMark) || len(got) > elideKeep+len(elisionMark)+20 {
		t.Errorf("cut output %q", got[len(got)-120:])
	}
	if len(h.Messages[6].Content[0].Text) != 5000 {
		t.Error("a kept output was cut")
	}
	if n := elide(h, 5); n != 0 {
		t.Errorf("cut %d outputs again", n)
	}
}

// Compaction keeps what a reasoning model's provider requires of the turns
// it keeps: their thinking blocks (Anthropic's signed and redacted ones)
// and Gemini's thought signatures on calls stay byte for byte, and the
// thinking of the turns it summarises is never fed to the summariser.
func TestCompactionKeepsThinking(t *testing.T) {
	h := &history{}
	h.append(model.Message{Role: model.User, Content: []model.Block{model.TextBlock("goal")}})
	for i := range 5 {
		id := string(rune('a' + i))
		h.append(model.Message{Role: model.Assistant, Content: []model.Block{
			{Type: model.Thinking, Text: "secret reasoning " + id, Signature: "sig-" + id},
			{Type: model.RedactedThinking, Signature: "enc-" + id},
			{Type: model.ToolUse, ID: id, Name: "look", Input: []byte(`{}`), Signature: "thought-" + id},
		}})
		h.append(model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: id, Text: strings.Repeat("x", 1000)}}})
	}
	var c compactor
	if !c.begin(h, 2, 7, 900) {
		t.Fatal("not begun")
	}
	if got := c.request("goal", "", h)[0].Content[0].Text; strings.Contains(got, "secret reasoning") || strings.Contains(got, "sig-") {
		t.Errorf("the summariser was shown thinking: %q", got)
	}
	kept := slices.Clone(h.Messages[c.Job.To:])
	c.apply(model.Response{Content: []model.Block{model.TextBlock("done a-c")}}, h, "goal", 100)
	if got := h.Messages[1:]; !reflect.DeepEqual(got, kept) {
		t.Errorf("the kept turns changed:\n got %+v\nwant %+v", got, kept)
	}
	if last := h.Messages[len(h.Messages)-2].Content; last[0].Signature != "sig-e" || last[1].Signature != "enc-e" || last[2].Signature != "thought-e" {
		t.Errorf("the last assistant turn lost what its provider needs: %+v", last)
	}
}
