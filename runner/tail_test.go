package runner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
)

// shown collects what a run's observers are shown: the run's entries and
// its sub-agents', and the spans its telemetry ends.
type shown struct {
	mu       sync.Mutex
	entries  []string
	children []string
	spans    *tracetest.SpanRecorder
	resumed  []budget.Usage
}

func newShown() *shown { return &shown{spans: tracetest.NewSpanRecorder()} }

func (s *shown) Observe(e observe.Entry) { s.entries = append(s.entries, entryView(e)) }

func (s *shown) Resumed(_ string, u budget.Usage) { s.resumed = append(s.resumed, u) }

func (s *shown) config(cfg runner.Config) runner.Config {
	cfg.Observers = []observe.Observer{s}
	cfg.ChildObservers = []observe.Observer{observe.Func(func(e observe.Entry) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.children = append(s.children, entryView(e))
	})}
	cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans), sdktrace.WithIDGenerator(otelobs.IDGenerator()))
	return cfg
}

// entryView is what an observer is shown of e, but for a model call's
// request, of which the log keeps only a summary.
func entryView(e observe.Entry) string {
	if e.Command != nil && e.Command.Request != nil {
		c := *e.Command
		c.Request = nil
		e.Command = &c
	}
	data, err := observe.Encode(e)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// spanView is each ended span's name, parent, IDs and attributes, sorted.
func (s *shown) spanView() []string {
	names := map[string]string{}
	for _, sp := range s.spans.Ended() {
		names[sp.SpanContext().SpanID().String()] = sp.Name()
	}
	var out []string
	for _, sp := range s.spans.Ended() {
		attrs := make([]string, 0, len(sp.Attributes()))
		for _, a := range sp.Attributes() {
			if strings.HasPrefix(string(a.Key), "gen_ai.request.") && string(a.Key) != "gen_ai.request.model" {
				continue // from the request, of which the log keeps a summary
			}
			attrs = append(attrs, string(a.Key)+"="+a.Value.String())
		}
		slices.Sort(attrs)
		out = append(out, fmt.Sprintf("%s trace=%s parent=%s start=%s end=%s status=%s %s",
			sp.Name(), sp.SpanContext().TraceID(), names[sp.Parent().SpanID().String()], sp.StartTime().UTC(), sp.EndTime().UTC(), sp.Status().Code, attrs))
	}
	slices.Sort(out)
	return out
}

// TestTail: a Tail of a stored run shows its observers what the run's own
// observers were shown, its sub-agents' entries and its spans included;
// begun at the log's end, it tells them the usage so far.
func TestTail(t *testing.T) {
	parent := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{spawn("Fetch part one.", map[string]any{"tools": []string{"meet"}}), spawn("Fetch part two.", nil)}},
		scripted.Turn{Expect: []string{"part-1", "part-2"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	)
	kids := newChildren(1000, map[string][]scripted.Turn{
		"Fetch part one.": {{Tools: []scripted.ToolCall{{Name: "meet"}}}, {Expect: []string{"together"}, Finish: &scripted.Finish{Answer: "part-1", Confidence: conf(0.9)}}},
		"Fetch part two.": {{Tools: []scripted.ToolCall{{Name: "meet"}}}, {Expect: []string{"together"}, Finish: &scripted.Finish{Answer: "part-2", Confidence: conf(0.9)}}},
	})
	db := memory.New()
	local := newShown()
	res, err := runner.Run(context.Background(), partTask(meet(2)), local.config(runner.Config{
		Model: priced{parent, 2000}, RunID: "p", Store: db, ChildModel: kids.model,
	}))
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %v %s %s", err, res.Status, res.Reason)
	}

	// A Tail begun before the run's first entry, polled once it holds its
	// spec and once it holds everything: the sub-agents' entries come
	// before their parent's end.
	grown := memory.New()
	tailed := newShown()
	copyRow(t, db, grown, "p")
	tail, err := runner.NewTail(context.Background(), tailed.config(runner.Config{Model: parent, RunID: "p", Store: grown}), false)
	if err != nil {
		t.Fatal(err)
	}
	growAndPoll(t, db, grown, tail)
	tail.Stop(time.Now())
	if d := cmp.Diff(local.entries, tailed.entries); d != "" || len(local.entries) < 10 {
		t.Errorf("the run's entries (-run +tail), %d shown:\n%s", len(local.entries), d)
	}
	slices.Sort(local.children)
	slices.Sort(tailed.children)
	if d := cmp.Diff(local.children, tailed.children); d != "" || len(local.children) < 10 {
		t.Errorf("the sub-agents' entries (-run +tail), %d shown:\n%s", len(local.children), d)
	}
	if d := cmp.Diff(local.spanView(), tailed.spanView()); d != "" || len(local.spanView()) < 8 {
		t.Errorf("spans (-run +tail), %d:\n%s", len(local.spanView()), d)
	}
	if len(tailed.resumed) != 0 {
		t.Errorf("a tail from the first entry told its observers the run was resumed: %v", tailed.resumed)
	}

	// Begun at the log's end: nothing more to show, and the usage so far.
	atEnd := newShown()
	tail, err = runner.NewTail(context.Background(), atEnd.config(runner.Config{Model: parent, RunID: "p", Store: db}), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(atEnd.entries)+len(atEnd.children) > 0 || !slices.Equal(atEnd.resumed, []budget.Usage{res.Usage}) {
		t.Errorf("a tail from the end showed %d entries and %d of sub-agents, and the usage %v (want %v)", len(atEnd.entries), len(atEnd.children), atEnd.resumed, res.Usage)
	}
}

// growAndPoll copies the logs of p and its two sub-agents from db to grown
// in two parts, p's spec and then everything, polling tail after each.
func growAndPoll(t *testing.T, db, grown store.Store, tail *runner.Tail) {
	t.Helper()
	for _, part := range []struct {
		runs []string
		upto int64 // the last entry of each run's log to copy; 0 for all
	}{{[]string{"p"}, 1}, {[]string{"p", "p/c1", "p/c2"}, 0}} {
		for _, run := range part.runs {
			copyRow(t, db, grown, run)
			have, err := grown.LastSeq(context.Background(), run)
			if err != nil {
				t.Fatal(err)
			}
			es, err := db.Entries(context.Background(), run, have)
			if err != nil {
				t.Fatal(err)
			}
			if part.upto > 0 {
				es = es[:part.upto-have]
			}
			if err := grown.Append(context.Background(), run, es); err != nil {
				t.Fatal(err)
			}
		}
		if err := tail.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// copyRow copies run's row, if to has none.
func copyRow(t *testing.T, from, to store.Store, run string) {
	t.Helper()
	ctx := context.Background()
	if _, err := to.Run(ctx, run); errors.Is(err, store.ErrNotFound) {
		row, err := from.Run(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if err := to.CreateRun(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
}
