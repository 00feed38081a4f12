package temporal

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// SuiteWorkflowName is the name of the suite workflow: the parent of an
// eval suite's runs, which are its child workflows.
const SuiteWorkflowName = "ratchet.suite"

// Update names of the suite workflow: UpdateChild starts one run as a
// child and returns once it has started; UpdateClose says no more will
// come, and the suite ends once its children have.
const (
	UpdateChild = "child"
	UpdateClose = "close"
)

// SuiteWorkflow is the parent of an eval suite's runs. Its children are
// run workflows (Workflow) started by UpdateChild, as many at once as the
// eval command keeps in flight; it ends when UpdateClose has come and every
// child has ended, returning how many ran.
func SuiteWorkflow(ctx workflow.Context) (int, error) {
	running, started, closed := 0, 0, false
	err := workflow.SetUpdateHandler(ctx, UpdateChild, func(ctx workflow.Context, in Input) error {
		if closed {
			return fmt.Errorf("the suite is closed")
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: in.Run, ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		})
		f := workflow.ExecuteChildWorkflow(cctx, WorkflowName, in)
		if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			return err
		}
		running++
		started++
		workflow.Go(ctx, func(ctx workflow.Context) {
			_ = f.Get(ctx, nil) // the eval command reads the child's Result
			running--
		})
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateClose, func(ctx workflow.Context) error {
		closed = true
		return nil
	}); err != nil {
		return 0, err
	}
	if err := workflow.Await(ctx, func() bool { return closed && running == 0 && workflow.AllHandlersFinished(ctx) }); err != nil {
		return started, err
	}
	return started, nil
}

// Suite is an eval suite's parent workflow as its eval command holds it.
type Suite struct {
	c     client.Client
	id    string
	queue string
}

// StartSuite starts a suite workflow with ID id on queue.
func StartSuite(ctx context.Context, c client.Client, id, queue string) (*Suite, error) {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, SuiteWorkflowName)
	if err != nil {
		return nil, fmt.Errorf("temporal: starting the suite workflow: %w", err)
	}
	return &Suite{c: c, id: id, queue: queue}, nil
}

// Start begins task's run in s and starts it as a child of the suite.
func (su *Suite) Start(ctx context.Context, s store.Store, task runner.Task, opts StartOptions) (client.WorkflowRun, error) {
	opts.TaskQueue = su.queue
	in, err := NewInput(task, opts)
	if err != nil {
		return nil, err
	}
	if err := Begin(ctx, s, in, opts, nowUTC()); err != nil {
		return nil, err
	}
	h, err := su.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: su.id, UpdateName: UpdateChild, Args: []any{in}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		failStart(ctx, s, in, err)
		return nil, fmt.Errorf("temporal: starting run %s in the suite: %w", in.Run, err)
	}
	return su.c.GetWorkflow(ctx, in.Run, ""), nil
}

// Close says the suite will start no more runs; the suite workflow ends
// once its children have.
func (su *Suite) Close(ctx context.Context) error {
	h, err := su.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: su.id, UpdateName: UpdateClose, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}
