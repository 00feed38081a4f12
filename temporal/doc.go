// Package temporal runs ratchet's loop core as Temporal workflows, for
// loops past one machine: thousands at once, runs that last days, workers
// on many machines. It is the only package that imports the Temporal SDK.
//
// The core does not change. The run workflow ([Workflow]) holds a
// loop.Machine and carries out its commands as the local runner does:
//
//   - A model call is an activity. The model's own transport retries are
//     off (the worker opens it so); a temporary failure fails the
//     activity, and Temporal retries it at most Input.Attempts times,
//     within the command's deadline, so retries spend the run's time
//     budget. Any other failure is the call's model_error.
//   - A tool call is an activity. A tool that is not idempotent gets one
//     attempt; if that attempt's outcome is unknown (its worker died, or
//     it timed out) the call is answered with runner.UnknownOutcome, as a
//     local resume answers it. An idempotent tool's call may be retried.
//   - A check is an activity, except validation checks (equals, regex,
//     contains…), which do no I/O and run as local activities in the
//     worker that runs the workflow task.
//   - Time comes from workflow.Now: event times are the workflow's.
//   - A question for a person (AskHuman) sets the run's row to
//     awaiting_input and waits for the answer Update ([UpdateAnswer],
//     [SendAnswer]), which takes and refuses what ratchet answer, approve
//     and deny take and refuse for a local run.
//   - Before the history passes Input.HistoryLimit events, between
//     commands, the workflow continues as new with the core's Snapshot and
//     the events not yet fed to it ([Carry]).
//
// The run database stays the source of truth for people: [Start] creates
// the run's row and records its spec, and each activity first appends the
// entries recorded since the last one (write-ahead, idempotent on retry),
// so ratchet ls, show and replay read a Temporal run as a local one. A
// worker builds each run's live task (tools, verifiers, model) once, with
// its [Opener], from the row's task info, and checks that it compiles to
// the spec the run started with.
package temporal
