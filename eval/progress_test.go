package eval

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
)

// fakeClock advances a second per reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func TestProgressPlain(t *testing.T) {
	var b bytes.Buffer
	clk := &fakeClock{}
	p := newProgressBar(&b, false, 20, 10, clk.now)
	for range 10 {
		p.count(true) // resumed
	}
	p.start()
	for i := range 10 {
		p.done(Record{Result: loop.Result{Status: map[bool]loop.Status{true: loop.Done, false: loop.Escalated}[i%2 == 0]}})
	}
	p.stop()
	out := b.String()
	for _, want := range []string{"resuming: 10 of 20 runs already finished\n", "12/20 runs (60%), 11 succeeded", "20/20 runs (100%), 15 succeeded", "ETA 0s", "finished 20 of 20 runs, 15 succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Errorf("plain output redraws:\n%q", out)
	}
	// One line per tenth crossed: 60%, 70%, 80%, 90% and 100%.
	if n := strings.Count(out, " runs ("); n != 5 {
		t.Errorf("%d progress lines, want 5:\n%s", n, out)
	}
}

func TestProgressLive(t *testing.T) {
	var b bytes.Buffer
	clk := &fakeClock{}
	p := newProgressBar(&b, true, 4, 0, clk.now)
	p.start()
	p.done(Record{Result: loop.Result{Status: loop.Done}})
	p.fail("c", errLoad)
	p.stop()
	out := b.String()
	// After 1 of 4 runs in 2 s of the fake clock, 3 left: ETA 6s.
	for _, want := range []string{"\r\033[K[#######.......................] 1/4 runs (25%), 1 succeeded", "ETA 6s", "error: cannot set up the case\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%q", want, out)
		}
	}
}

// The line counts the runs whose model call waits for its provider's
// shared limits: from the wait entry to the event answering the call, or
// the run's end.
func TestProgressHeld(t *testing.T) {
	p := newProgressBar(nil, true, 4, 0, (&fakeClock{}).now)
	a, b := p.watch(), p.watch()
	wait := observe.Entry{Kind: observe.KindWait, Wait: &observe.Wait{Call: "m1"}}
	a.Observe(wait)
	a.Observe(wait) // a second sample of the same run
	b.Observe(wait)
	if got := p.line(); !strings.HasSuffix(got, ", 2 held by provider limits") {
		t.Errorf("two runs waiting: %q", got)
	}
	a.Observe(observe.Entry{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelReply}})
	if got := p.line(); !strings.HasSuffix(got, ", 1 held by provider limits") {
		t.Errorf("one run answered: %q", got)
	}
	b.release()
	b.release()
	if got := p.line(); strings.Contains(got, "held") {
		t.Errorf("no run waiting: %q", got)
	}
}
