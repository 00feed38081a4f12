package runner_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

func TestLeaseState(t *testing.T) {
	host, _ := os.Hostname()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	me := strconv.Itoa(os.Getpid()) + "@" + host
	for _, tc := range []struct {
		name      string
		holder    string
		heartbeat time.Time
		live      bool
	}{
		{"nobody", "", now, false},
		{"this process, fresh", me, now.Add(-time.Second), true},
		{"this process, heartbeat expired", me, now.Add(-runner.LeaseExpiry - time.Second), false},
		{"a dead process on this host", "2147483646@" + host, now, false},
		{"another host, fresh", "12@elsewhere", now.Add(-time.Second), true},
		{"another host, expired", "12@elsewhere", now.Add(-time.Minute), false},
	} {
		live, who := runner.LeaseState(store.Run{Holder: tc.holder, Heartbeat: tc.heartbeat}, now)
		if live != tc.live || who == "" {
			t.Errorf("%s: LeaseState = %v, %q; want live=%v", tc.name, live, who, tc.live)
		}
	}
}

// TestRunHoldsLease: while a run is carried out its row names this process
// with a fresh heartbeat; when it ends nobody holds it.
func TestRunHoldsLease(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	var during store.Run
	peek := tool.Func("peek", "Look at the run's row.", func(ctx context.Context, _ struct{}) (string, error) {
		r, err := db.Run(ctx, "leased")
		during = r
		return "ok", err
	}, tool.Inline())
	task := runner.Task{
		Goal:   "peek, then answer 5",
		Tools:  []tool.Tool{peek},
		Checks: verify.Tiers{Cheap: []verify.Verifier{verify.Equals("5")}},
		Budget: budget.Limits{Steps: 5, Time: time.Minute},
	}
	mdl := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "peek", Args: map[string]any{}}}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	)
	res, err := runner.Run(ctx, task, runner.Config{Model: mdl, Store: db, RunID: "leased"})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %s %v", res.Status, err)
	}
	if live, who := runner.LeaseState(during, time.Now()); !live || !strings.HasPrefix(during.Holder, strconv.Itoa(os.Getpid())+"@") {
		t.Errorf("during the run its lease is %q (%s, live=%v); want this process's", during.Holder, who, live)
	}
	after, _ := db.Run(ctx, "leased")
	if after.Holder != "" {
		t.Errorf("after the run it is still held by %q", after.Holder)
	}
}

// TestResumeRefusesLiveLease: a run another live process holds is not
// resumed; once that holder's heartbeat has expired, it is.
func TestResumeRefusesLiveLease(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	now := time.Now()
	if err := db.CreateRun(ctx, store.Run{ID: "held", Status: store.StatusRunning, Holder: "77@another-host", Heartbeat: now, Created: now}); err != nil {
		t.Fatal(err)
	}
	task := runner.Task{Goal: "answer 5", Checks: verify.Tiers{Cheap: []verify.Verifier{verify.Equals("5")}}, Budget: budget.Limits{Steps: 3, Time: time.Minute}}
	mdl := func() *scripted.Model {
		return newModel(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}})
	}
	_, err := runner.Resume(ctx, task, runner.Config{Model: mdl(), Store: db, RunID: "held"}, runner.ResumeOptions{})
	if !errors.Is(err, runner.ErrHeld) || !strings.Contains(err.Error(), "process 77 on another-host") {
		t.Fatalf("resume of a held run: %v; want ErrHeld naming the holder", err)
	}
	stale := now.Add(-time.Minute)
	if err := db.UpdateRun(ctx, "held", store.Update{Heartbeat: stale}); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Resume(ctx, task, runner.Config{Model: mdl(), Store: db, RunID: "held"}, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resume after the holder's heartbeat expired: %s %v", res.Status, err)
	}
}
