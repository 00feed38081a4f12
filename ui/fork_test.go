package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/ui"
)

// TestForkFromHere: each step of a run offers "fork from here" (its
// step's model call); the form forks the run there with its message and
// sends the browser to the new run, which records where it came from. A
// forged or wrong point is refused, and a read-only server offers none.
func TestForkFromHere(t *testing.T) {
	sd := seed(t)
	fork := func(ctx context.Context, child string, opts runner.ForkOptions) error {
		opts.Model = scriptedModel(t, scripted.Turn{Expect: []string{"Answer 5."}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}})
		_, err := runner.Fork(ctx, addTask(), runner.Config{Store: sd.store, RunID: child}, opts)
		return err
	}
	_, hs := newServer(t, ui.Config{Store: sd.store, Resume: sd.resume(t), Fork: fork})
	page := mustGet(t, hs, "/runs/run-done")
	ats := regexp.MustCompile(`name="at" value="(\d+)"`).FindAllStringSubmatch(page, -1)
	if len(ats) != 3 || !strings.Contains(page, "fork from here") {
		t.Fatalf("run-done's page offers %d forks; want one per step, 3", len(ats))
	}
	token := csrfOf(t, page)
	for _, tt := range []struct {
		name string
		form url.Values
		want int
	}{
		{"no token", url.Values{"at": {ats[1][1]}}, http.StatusForbidden},
		{"not a number", url.Values{"csrf": {token}, "at": {"two"}}, http.StatusBadRequest},
		{"not a step's call", url.Values{"csrf": {token}, "at": {"2"}}, http.StatusBadRequest},
	} {
		if code, body := post(t, hs, "/fork/run-done", hs.URL, tt.form); code != tt.want {
			t.Errorf("%s: %d, want %d\n%s", tt.name, code, tt.want, body)
		}
	}
	code, body := post(t, hs, "/fork/run-done", hs.URL, url.Values{"csrf": {token}, "at": {ats[1][1]}, "message": {"Answer 5."}})
	if code != http.StatusSeeOther {
		t.Fatalf("fork: %d\n%s", code, body)
	}
	runs, err := sd.store.ListRuns(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var child store.Run
	for _, r := range runs {
		if r.ForkOf == "run-done" {
			child = r
		}
	}
	if child.ID == "" || itoa(child.ForkSeq) != ats[1][1] {
		t.Fatalf("no fork of run-done at %s in the store: %+v", ats[1][1], child)
	}
	waitStatus(t, sd.store, child.ID, string(loop.Done))

	_, ro := newServer(t, ui.Config{Store: sd.store})
	if strings.Contains(mustGet(t, ro, "/runs/run-done"), "fork from here") {
		t.Error("a read-only server offers to fork")
	}
}
