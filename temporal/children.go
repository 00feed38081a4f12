package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// Sub-agents run as child workflows, one per RunChild command, as the
// local runner runs them as child runs: the child's ID is the parent's,
// "/" and the command's ID; its row names the parent; it has nobody to
// ask; its Result answers the command and its usage is charged to the
// parent by the core. A worker builds a child's live task from its
// parent's (runner.ChildTask), so its row's task info is the loop.Child
// the parent's core asked for.

// activityChild creates a child's row and returns its workflow's input.
const activityChild = "ratchet.child"

// ChildInput asks for the run of a sub-agent.
type ChildInput struct {
	Run  string `json:"run"` // the parent
	Save *Save  `json:"save,omitempty"`
	Call string `json:"call"` // the RunChild command's ID
	// Child is what the parent's core asked for.
	Child loop.Child `json:"child"`
	// Calls is how many model calls the run tree had made when the child
	// started: a scripted model the two share plays on from there.
	Calls    int `json:"calls"`
	Attempts int `json:"attempts,omitempty"`
}

// Child builds a sub-agent's task from its parent's live one, records its
// row and spec as Start does, and returns its workflow's input. A retry
// finds the row it made and returns the same input.
func (a *Activities) Child(ctx context.Context, in ChildInput) (Input, error) {
	lr, done, err := a.run(ctx, in.Run)
	if err != nil {
		return Input{}, err
	}
	defer done()
	if err := a.write(ctx, in.Run, in.Save); err != nil {
		return Input{}, err
	}
	task, err := lr.x.ChildTask(in.Child)
	if err != nil {
		return Input{}, temporal.NewNonRetryableApplicationError("the sub-agent could not run: "+err.Error(), errTypeChild, nil)
	}
	info, err := json.Marshal(in.Child)
	if err != nil {
		return Input{}, temporal.NewNonRetryableApplicationError(err.Error(), errTypeChild, err)
	}
	opts := StartOptions{RunID: in.Run + "/" + in.Call, Parent: in.Run, TaskInfo: info, Attempts: in.Attempts, Redactor: lr.live.Redactor}
	child, err := NewInput(task, opts)
	if err != nil {
		return Input{}, temporal.NewNonRetryableApplicationError("the sub-agent could not run: "+err.Error(), errTypeChild, nil)
	}
	child.Calls = in.Calls
	if _, err := a.store.Run(ctx, opts.RunID); err == nil {
		return child, nil // this activity's earlier attempt made it
	} else if !errors.Is(err, store.ErrNotFound) {
		return Input{}, temporal.NewApplicationError(err.Error(), errTypeStore)
	}
	if err := Begin(ctx, a.store, child, opts, nowUTC()); err != nil {
		return Input{}, temporal.NewApplicationError(err.Error(), errTypeStore)
	}
	return child, nil
}

// runChild answers a RunChild command with the Result of the child
// workflow it starts. Its future settles when the child has ended, so
// that the children of one batch run at once.
func (d *driver) runChild(c *loop.Command, calls int) job {
	var res loop.Result
	return job{
		launch: func(ctx workflow.Context, s *Save) workflow.Future {
			f, settle := workflow.NewFuture(ctx)
			workflow.Go(ctx, func(ctx workflow.Context) {
				var err error
				res, err = d.child(ctx, s, c, calls)
				settle.Set(nil, err)
			})
			return f
		},
		answer: func(ctx workflow.Context, f workflow.Future) (loop.Event, error) {
			err := f.Get(ctx, nil)
			if isStoreError(err) {
				return loop.Event{}, storeFailure(err)
			}
			// The parent needs the outcome, not the history: the child's
			// own log and row keep its attempts.
			res.Attempts = nil
			return loop.Event{Type: loop.EventChildResult, Call: c.ID, Child: &res}, nil
		},
	}
}

// child runs one sub-agent to its end. Its error is a store failure; any
// other failure is said in the Result.
func (d *driver) child(ctx workflow.Context, s *Save, c *loop.Command, calls int) (loop.Result, error) {
	var in Input
	err := workflow.ExecuteActivity(d.storeOptions(ctx), activityChild,
		ChildInput{Run: d.in.Run, Save: s, Call: c.ID, Child: *c.Child, Calls: calls, Attempts: d.in.Attempts}).Get(ctx, &in)
	if err != nil {
		if isStoreError(err) {
			return loop.Result{}, err
		}
		return loop.Result{Status: loop.Failed, Reason: cause(err), Limits: c.Child.Budget}, nil
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: in.Run,
		// A cancelled parent asks its children to end cancelled, each
		// recording its Result, rather than vanishing.
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
	})
	var res loop.Result
	err = workflow.ExecuteChildWorkflow(cctx, WorkflowName, in).Get(ctx, &res)
	switch {
	case err != nil:
		return runner.UnknownChildOutcome(*c.Child, fmt.Errorf("its workflow: %s", cause(err))), nil
	case res.Status == "":
		return runner.UnknownChildOutcome(*c.Child, errors.New("its workflow returned no Result")), nil
	}
	return res, nil
}

// openChild builds a sub-agent's live task from its parent's, which it
// holds open (its Close lets go of it): the child uses the parent's
// tools, verifiers and model.
func (a *Activities) openChild(ctx context.Context, lr *liveRun, row store.Run) (Live, error) {
	var ch loop.Child
	if err := json.Unmarshal(row.Task, &ch); err != nil {
		return Live{}, fmt.Errorf("its row does not hold the sub-agent it is (%v)", err)
	}
	parent, done, err := a.run(ctx, row.Parent)
	if err != nil {
		return Live{}, fmt.Errorf("its parent %s: %w", row.Parent, err)
	}
	task, err := parent.x.ChildTask(ch)
	if err != nil {
		done()
		return Live{}, err
	}
	lr.seek = parent.seek
	p := parent.live
	return Live{Task: task, Model: p.Model, Exec: p.Exec, Hooks: p.Hooks, Guardrails: p.Guardrails, Redactor: p.Redactor, Close: done}, nil
}
