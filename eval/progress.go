package eval

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
)

// progressBar shows how far a suite has got. Live, it redraws one line (a bar,
// counts and an ETA) on every finished run and every half second; plain, it
// prints a line per tenth of the suite and one per problem. The ETA is the
// time elapsed since this invocation started divided by the runs it has
// finished, times the runs left: runs overlap, so elapsed time per finished
// run (not the mean run's wall time) is what predicts the rest.
type progressBar struct {
	mu       sync.Mutex
	w        io.Writer
	live     bool
	now      func() time.Time
	total    int
	resumed  int
	finished int
	ok       int
	began    time.Time
	lastTen  int
	// holding counts the runs whose model call is held by its provider's
	// shared limits now (holdWatch).
	holding int
	quit    chan struct{}
	stopped sync.WaitGroup
}

func newProgressBar(w io.Writer, live bool, total, resumed int, now func() time.Time) *progressBar {
	return &progressBar{w: w, live: live, total: total, resumed: resumed, now: now, quit: make(chan struct{})}
}

// count adds a run resumed from the store.
func (p *progressBar) count(ok bool) {
	p.finished++
	if ok {
		p.ok++
	}
}

func (p *progressBar) start() {
	if p.w == nil {
		return
	}
	p.began = p.now()
	p.lastTen = p.finished * 10 / max(1, p.total)
	if p.resumed > 0 {
		fmt.Fprintf(p.w, "resuming: %d of %d runs already finished\n", p.resumed, p.total)
	}
	if !p.live {
		return
	}
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progressBar) stop() {
	if p.w == nil {
		return
	}
	close(p.quit)
	p.stopped.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.draw()
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, "finished %d of %d runs, %d succeeded, in %s\n", p.finished, p.total, p.ok, p.now().Sub(p.began).Round(time.Millisecond))
}

func (p *progressBar) done(r Record) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count(r.Success())
	if p.live {
		p.draw()
		return
	}
	if ten := p.finished * 10 / max(1, p.total); ten > p.lastTen {
		p.lastTen = ten
		fmt.Fprintln(p.w, p.line())
	}
}

func (p *progressBar) fail(name string, err error) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "error: %v\n", err)
	if p.live {
		p.draw()
	}
}

// eta estimates the time left from the runs finished in this invocation.
func (p *progressBar) eta() string {
	made := p.finished - p.resumed
	if made <= 0 {
		return "?"
	}
	left := p.total - p.finished
	per := p.now().Sub(p.began) / time.Duration(made)
	return (per * time.Duration(left)).Round(time.Second).String()
}

func (p *progressBar) line() string {
	pct := 100 * p.finished / max(1, p.total)
	s := fmt.Sprintf("%d/%d runs (%d%%), %d succeeded, elapsed %s, ETA %s",
		p.finished, p.total, pct, p.ok, p.now().Sub(p.began).Round(time.Second), p.eta())
	if p.holding > 0 {
		s += fmt.Sprintf(", %d held by provider limits", p.holding)
	}
	return s
}

// holdWatch observes one run's entries for the bar: the run is held from
// a wait entry (its call waits for its provider's shared limits) until the
// event that answers a model call, or the run's end (release).
type holdWatch struct {
	p    *progressBar
	held bool
}

func (p *progressBar) watch() *holdWatch { return &holdWatch{p: p} }

func (w *holdWatch) Observe(e observe.Entry) {
	switch {
	case e.Wait != nil:
		w.set(true)
	case e.Event != nil && (e.Event.Type == loop.EventModelReply || e.Event.Type == loop.EventModelError):
		w.set(false)
	}
}

func (w *holdWatch) release() { w.set(false) }

func (w *holdWatch) set(held bool) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	switch {
	case held && !w.held:
		w.p.holding++
	case !held && w.held:
		w.p.holding--
	}
	w.held = held
}

func (p *progressBar) draw() {
	const width = 30
	fill := width * p.finished / max(1, p.total)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.line())
}
