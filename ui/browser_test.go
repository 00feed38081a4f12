package ui_test

import (
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/ui"
)

// -screenshots DIR writes a PNG of each page the browser test visits
// (docs/ui holds the ones the README and docs/ui.md show):
//
//	go test ./ui -run TestBrowser -screenshots ../docs/ui
var screenshots = flag.String("screenshots", "", "write the browser test's screenshots to this directory")

// chromium finds the browser: $RATCHET_CHROMIUM, else chromium on PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("RATCHET_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, "$RATCHET_CHROMIUM: "+err.Error())
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "Chromium is not installed (apt-get install chromium; ./test.sh installs it)")
	return ""
}

// TestBrowser drives the UI in headless Chromium as a person would: the
// list and its filters, a run's transcript, a reasoning run's thinking, a
// live run's new step, the answer form of a waiting run, a suite and a
// comparison.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	sd := seed(t)
	evals := seedEvals(t)
	s, err := ui.New(ui.Config{Store: sd.store, EvalDir: evals, Resume: sd.resume(t), Redactor: redact.New(secret), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer s.Close()
	defer hs.Close()
	base := strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-default-browser-check", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 120*time.Second)
	defer cancel()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if *screenshots == "" {
				return nil
			}
			png, err := chromedp.CaptureScreenshot()(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644)
		})
	}
	// The browser starts on the first action; then each step has 30s.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	type css = chromedp.CSS

	// The list, then filtered to the runs waiting for a person.
	do("open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("table.runs")), shot("runs"))
	if got := text("table.runs tbody"); !strings.Contains(got, "What is 2+3") || !strings.Contains(got, "awaiting_input") {
		t.Errorf("the list reads %q", got)
	}
	do("filter the list",
		chromedp.Click(css(`input[name="status"][value="waiting"]`)), chromedp.Click(css(`form.filters button[type="submit"]`)),
		chromedp.WaitNotPresent(css(`tr#row-run-done`)), chromedp.WaitVisible(css(`tr#row-run-ask`)))
	url := must(chromedp.Run(ctx, chromedp.Location()))
	rows := must(chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.runs tbody tr")].map(r => r.id)`)))
	if !strings.Contains(url, "status=waiting") || strings.Join(rows, " ") != "row-run-approve row-run-ask" {
		t.Errorf("filtered to waiting: URL %s, rows %q", url, rows)
	}

	// A run's transcript: the model's markup is text, the secret is not there.
	do("read a transcript", chromedp.Navigate(base+"/runs/run-done"), chromedp.WaitVisible(css("#step-3")), shot("run"))
	transcript := text("#transcript")
	for _, want := range []string{`<script>alert("owned")</script>`, "add", `"a": 2`, "API_KEY=" + redact.Placeholder, "finish", "regex", "equals"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the transcript does not read %q", want)
		}
	}
	scripts := must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.scripts.length`)))
	if strings.Contains(transcript, secret) || scripts != 2 {
		t.Errorf("the secret is shown, or the model's script is on the page (%d scripts)", scripts)
	}

	// A reasoning model's thinking: in its step, folded, apart from its text.
	run(t, sd.store, "run-think", addTask(), nil, scripted.Turn{
		Thinking: "Add 2 and 3: 2 + 3 = 5. Check: 5 - 3 = 2.", Text: "The sum is 5.",
		Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)},
	})
	do("read a run's thinking", chromedp.Navigate(base+"/runs/run-think"), chromedp.WaitVisible(css("details.item.thinking summary")),
		chromedp.Click(css("details.item.thinking summary")), chromedp.WaitVisible(css("details.item.thinking[open]")), shot("thinking"))
	if got := text("details.item.thinking"); !strings.Contains(got, "2 + 3 = 5. Check: 5 - 3 = 2.") {
		t.Errorf("the thinking reads %q", got)
	}

	// A live run: its next step appears without a reload.
	live := make(chan error, 1)
	go func() {
		turns := []scripted.Turn{
			{Text: "First, adding.", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 1, "b": 1}}}},
			{Delay: 1500 * time.Millisecond, Text: "Second step, live.", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
			{Delay: 3 * time.Second, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}},
		}
		cfg := runner.Config{Model: scriptedModel(t, turns...), Store: sd.store, RunID: "run-live", Labels: []string{"live"}}
		_, err := runner.Run(context.Background(), addTask(), cfg)
		live <- err
	}()
	waitEntries(t, sd.store, "run-live", 5)
	start := time.Now()
	do("watch a live run", chromedp.Navigate(base+"/runs/run-live"), chromedp.WaitVisible(css("#step-1")))
	if n := must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#step-2 .item.thought").length`))); n != 0 {
		t.Fatalf("step 2's reply was there when the page opened: the test watches nothing")
	}
	// A mark on the window: a reload (which the run's end brings) wipes it,
	// so the step must come by the stream to be seen with it.
	must(chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad = true`)))
	must(chromedp.Run(ctx, chromedp.Evaluate[string](`window.duration0 = document.querySelector("#run p.meta span.duration").textContent`)))
	do("see the live step", chromedp.WaitVisible(css("#step-2 .item.tool")), chromedp.ScrollIntoView(css("#step-2")), shot("live"))
	if !must(chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`))) {
		t.Errorf("step 2 came with a reload, not by the live stream")
	}
	if got := text("#step-2"); !strings.Contains(got, "Second step, live.") {
		t.Errorf("the live step reads %q", got)
	}
	// The header and the gauges follow the steps, still without a reload:
	// step 2's reply moves the run's duration while the last turn (3 s) is
	// still out.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#run p.meta span.duration").textContent !== window.duration0`, chromedp.WithPollingTimeout(2500*time.Millisecond))); err != nil {
		t.Errorf("the header's duration stayed at %q while steps arrived: %v", text("#run p.meta span.duration"), err)
	}
	if !must(chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`))) {
		t.Errorf("the header moved with a reload, not by the live page")
	}
	t.Logf("the live step appeared %v after the page opened (its model turn takes 1.5s)", time.Since(start))
	// The list's row of the live run updates by itself (htmx) when it ends.
	do("list the live run", chromedp.Navigate(base+"/?label=live"), chromedp.WaitVisible(css("tr#row-run-live")))
	if got := text("tr#row-run-live td"); got != "running" {
		t.Fatalf("the live run's row says %q at first, want running (it was over too soon to watch)", got)
	}
	must(chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad = true`)))
	do("see the live run's row end", chromedp.WaitVisible(css("tr#row-run-live span.status.done")))
	if !must(chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`))) {
		t.Errorf("the row changed with a reload, not by itself")
	}
	if err := <-live; err != nil {
		t.Fatal(err)
	}

	// A run waiting for a person: answer it from the form; the page
	// follows it to done.
	do("answer a waiting run", chromedp.Navigate(base+"/runs/run-ask"), chromedp.WaitVisible(css("#answer-text")), shot("waiting"),
		chromedp.SendKeys(css("#answer-text"), "try 5"), chromedp.Click(css(`button[value="answer"]`)),
		chromedp.WaitVisible(css("section.result.done")))
	if got := text("section.result"); !strings.Contains(got, "done") {
		t.Errorf("after the answer the Result reads %q", got)
	}
	if row, _ := sd.store.Run(context.Background(), "run-ask"); row.Status != "done" {
		t.Errorf("after the answer the run is %s", row.Status)
	}

	// A suite: metrics, charts and the grid, whose cells open runs.
	do("list the result sets", chromedp.Navigate(base+"/evals/"), chromedp.WaitVisible(css("table.suites")), shot("evals"),
		chromedp.Click(css(`a[href="/evals/base/"]`)), chromedp.WaitVisible(css("table.grid")))
	do("open a suite", chromedp.Navigate(base+"/evals/base/"), chromedp.WaitVisible(css("table.grid")), shot("suite"))
	cells := must(chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.grid a.cell").length`)))
	if metrics := text("table.metrics"); cells != 4 || !strings.Contains(metrics, "success rate") || !strings.Contains(metrics, "75.0%") {
		t.Errorf("suite page: %d cells, metrics %q", cells, metrics)
	}
	do("open a suite's run", chromedp.Click(css(`table.grid a.cell.miss`)), chromedp.WaitVisible(css("#transcript")))
	if got := text("h1.goal"); !strings.Contains(got, "What is 2+3") {
		t.Errorf("the cell's run page reads %q", got)
	}

	// A comparison: the flipped case links to both runs.
	do("compare", chromedp.Navigate(base+"/compare?base=base&cand=cand"), chromedp.WaitVisible(css("table.flips")), shot("compare"))
	links := must(chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.flips a")].map(a => a.getAttribute("href"))`)))
	if len(links) != 2 || !strings.Contains(links[0], "/evals/base/") || !strings.Contains(links[1], "/evals/cand/") || !strings.Contains(text("table.flips"), "now succeeds") {
		t.Errorf("flips: links %q", links)
	}
}

// must returns v, or panics (failing the test) on a browser error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func waitEntries(t *testing.T, st store.Store, id string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if last, err := st.LastSeq(context.Background(), id); err == nil && last >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s never reached %d entries", id, n)
}
