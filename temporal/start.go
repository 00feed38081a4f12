package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/verify"
)

// StartOptions say how to start a run on Temporal. RunID and TaskQueue
// are required.
type StartOptions struct {
	// RunID names the run in the store; it is also the workflow's ID.
	RunID     string
	TaskQueue string
	// TaskInfo is what the workers' Opener builds the task from (the CLI
	// stores the task file's path and flags), kept on the run's row.
	TaskInfo []byte
	Labels   []string
	// Parent is the run a sub-agent's run belongs to; "" for a top-level
	// run.
	Parent string
	// Human says a person may answer the run's questions with the answer
	// Update; false answers them human_unavailable.
	Human bool
	// Redactor knows the secrets the task holds (its expanded ${VAR}s, MCP
	// header values): the spec's texts are redacted before they reach the
	// workflow's history, the store or the model, as in a local run
	// (runner.RedactSpec). The workers' Live.Redactor must know them too.
	Redactor *redact.Redactor
	// Attempts and HistoryLimit are Input's (zero means the defaults).
	Attempts     int
	HistoryLimit int
}

// NewInput builds the workflow's input for task, checking that the task can
// run on Temporal. It is what Start passes; tests use it directly.
func NewInput(task runner.Task, opts StartOptions) (Input, error) {
	spec, checks, err := task.Spec()
	if err != nil {
		return Input{}, err
	}
	runner.RedactSpec(opts.Redactor, &spec)
	var errs []error
	if opts.RunID == "" {
		errs = append(errs, errors.New("temporal: no run ID"))
	}
	if task.Policy.Key != nil {
		errs = append(errs, errors.New("temporal: a custom progress key function cannot cross to a worker; use the default key"))
	}
	if len(errs) > 0 {
		return Input{}, errors.Join(errs...)
	}
	in := Input{Run: opts.RunID, Spec: spec, Human: opts.Human, Attempts: opts.Attempts, HistoryLimit: opts.HistoryLimit}
	for _, t := range task.Tools {
		if !t.Info().Idempotent {
			in.Once = append(in.Once, t.Info().Name)
		}
	}
	for _, c := range spec.Checks {
		if checks[c.Name].Provenance() == verify.Validation {
			in.Pure = append(in.Pure, c.Name)
		}
	}
	return in, nil
}

// Begin creates the run's row and records its spec as the first entry,
// as a local run begins; the workflow carries on from there.
func Begin(ctx context.Context, s store.Store, in Input, opts StartOptions, at time.Time) error {
	m, err := loop.New(in.Spec)
	if err != nil {
		return err
	}
	spec := m.Spec()
	at = at.UTC().Round(0)
	if err := s.CreateRun(ctx, store.Run{ID: in.Run, Goal: spec.Goal, Labels: opts.Labels, Status: store.StatusRunning,
		Parent: opts.Parent, Task: opts.TaskInfo, Created: at, Updated: at}); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	data, err := observe.Encode(observe.Entry{Seq: 1, Run: in.Run, At: at, Kind: observe.KindRun, Spec: &spec})
	if err != nil {
		return err
	}
	if err := s.Append(ctx, in.Run, []store.Entry{{Seq: 1, Kind: string(observe.KindRun), At: at, Data: data}}); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	return nil
}

// Start begins task's run in s and starts its workflow on c. Wait for
// the Result with the returned run's Get.
func Start(ctx context.Context, c client.Client, s store.Store, task runner.Task, opts StartOptions) (client.WorkflowRun, error) {
	if opts.TaskQueue == "" {
		return nil, errors.New("temporal: no task queue")
	}
	in, err := NewInput(task, opts)
	if err != nil {
		return nil, err
	}
	if err := Begin(ctx, s, in, opts, nowUTC()); err != nil {
		return nil, err
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: opts.RunID, TaskQueue: opts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, WorkflowName, in)
	if err != nil {
		failStart(ctx, s, in, err)
		return nil, fmt.Errorf("temporal: starting the workflow: %w", err)
	}
	return run, nil
}

func nowUTC() time.Time { return time.Now().UTC() }

// failStart ends the row of a run whose workflow could not start: it must
// not say running when nothing drives it.
func failStart(ctx context.Context, s store.Store, in Input, err error) {
	res := loop.Result{Status: loop.Failed, Reason: "temporal: the workflow could not start: " + err.Error(), Limits: in.Spec.Budget.WithDefaults()}
	if data, jerr := json.Marshal(res); jerr == nil {
		status := string(res.Status)
		_ = s.UpdateRun(context.WithoutCancel(ctx), in.Run, store.Update{Status: &status, Result: data, Updated: time.Now().UTC()})
	}
}

// SendAnswer answers the question run is awaiting, as ratchet answer,
// approve and deny do for a local run; it returns once the workflow has
// taken the answer, or with the reason it refused it.
func SendAnswer(ctx context.Context, c client.Client, run string, a Answer) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run, UpdateName: UpdateAnswer, Args: []any{a}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// SendSay gives the running run a message for its next model turn, as
// ratchet say does for a local run; it returns once the workflow has
// queued it, or with the reason it refused it.
func SendSay(ctx context.Context, c client.Client, run, text string) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run, UpdateName: UpdateSay, Args: []any{Say{Text: text}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}
