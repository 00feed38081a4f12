// Package runner is the imperative shell around the loop core: it carries
// out the machine's commands with goroutines and contexts, derives every
// call's deadline from the remaining time budget, and feeds the results back
// as events.
//
// One goroutine owns the machine and carries out each command, fanning out
// to goroutines only within a command (parallel tool calls, parallel checks).
// A run waiting on a model costs a goroutine and its state, not a thread.
// Models, tools and verifiers must honour their context: that is how
// deadlines from the time budget and cancellation reach them (the tool
// executor also abandons a tool that does not).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// Task is a run's goal with the live objects that serve it: the tools the
// model may call and the verifiers that gate done. Spec derives the pure
// description the loop core sees.
type Task struct {
	// Mode is loop.ModeAgent (default) or loop.ModeGenerate.
	Mode         loop.Mode
	Goal         string
	Instructions string
	Tools        []tool.Tool
	Checks       verify.Tiers
	// Permissions decide which tool calls run, need a person's approval,
	// or are refused (see loop.Permission).
	Permissions []loop.Permission
	Budget      budget.Limits
	Policy      loop.Policy
	// Subagents, when set, lets the model start sub-agents (subagent.go).
	Subagents *Subagents
	// OutputSchema, when set, is the JSON Schema of the answer (a typed
	// answer, loop.Spec.OutputSchema): the model gives the answer as a JSON
	// value of it, and the first cheap check, output_schema, validates it.
	// RunAs derives it from its type argument.
	OutputSchema json.RawMessage
	// decode, set by RunAs, decodes an answer into its type and applies
	// the type's own rules, after the schema.
	decode func([]byte) error
}

// Asker puts a question to a person and returns the answer. It returns an
// error wrapping ErrNoHuman when nobody can answer now.
type Asker interface {
	Ask(ctx context.Context, question string) (string, error)
}

// ErrNoHuman says that no person can answer; the run ends escalated.
var ErrNoHuman = errors.New("no person available")

// ErrAwaitingInput, wrapped by an Asker's error, says that a person will
// answer later: the run is left awaiting_input in the store with its
// question, and Run returns an *AwaitingError. Resume with
// ResumeOptions.Answer carries it on. It needs Config.Store.
var ErrAwaitingInput = errors.New("awaiting input")

// Later is an Asker for runs whose person answers out of band (ratchet
// answer): every question leaves the run awaiting_input.
var Later Asker = later{}

type later struct{}

func (later) Ask(context.Context, string) (string, error) { return "", ErrAwaitingInput }

// AwaitingError is returned by Run and Resume when the run stopped to wait
// for a person; it is not a failure.
type AwaitingError struct {
	Run      string
	Question string
}

func (e *AwaitingError) Error() string {
	return fmt.Sprintf("run %s is awaiting input: %s", e.Run, e.Question)
}

// Config says how to carry out a Task. Model is required; the zero value of
// every other field means its default.
type Config struct {
	Model model.Model
	// RunID names the run in its log; default "run-<start unix nanos>".
	RunID string
	// Observers receive every event, command and note, in order.
	Observers []observe.Observer
	// Human answers escalations; nil means nobody is reachable.
	Human Asker
	// Exec configures tool execution (parallelism, timeouts, output caps).
	Exec tool.ExecConfig
	// Now is the clock that stamps events; default time.Now.
	Now func() time.Time

	// Store, when set, makes the run durable: its row and every entry are
	// written to it, and the entries before a command are durable before
	// the command is carried out (write-ahead), so Resume can carry on
	// after a crash. A run with a Store needs no Observers to be kept.
	Store store.Store
	// SnapshotEvery is how many entries may follow the latest snapshot
	// before another is taken; 0 means 200. Snapshots only make Resume
	// faster: the entries alone are enough.
	SnapshotEvery int
	// Labels tag the run in the store (e.g. an eval suite's label).
	Labels []string
	// TaskInfo is what Resume needs to rebuild the Task (the CLI stores
	// the task file and its flags), kept opaque on the run's row.
	TaskInfo []byte
	// Parent is the run that spawned this one, if any.
	Parent string
	// ChildModel, when set, gives each sub-agent its model (id is the
	// child's run ID); nil means children use Model.
	ChildModel func(id string, child loop.Child) (model.Model, error)
	// ChildObservers receive the entries of the run's sub-agents, one at a
	// time although children run in parallel; Entry.Run names the child.
	// A child's log is kept in the Store either way.
	ChildObservers []observe.Observer

	// TracerProvider and MeterProvider, when set, receive the run's spans
	// and metrics, and its sub-agents' (OpenTelemetry GenAI conventions;
	// see observe/otel and docs/observability.md). Give the SDK's
	// TracerProvider otel.IDGenerator (observe/otel) for trace IDs derived
	// from run IDs. Message content is recorded only when
	// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT asks for it.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// telemetry is the observer serving TracerProvider and MeterProvider,
	// shared with the run's sub-agents.
	telemetry *otelobs.Observer
	// Patch, when set, takes the patch of the run's workspace as the run
	// finishes (however it ends), for Result.Patch: the candidate of an
	// agent run on a copied workspace. Its texts are redacted like every
	// other stored text (then Patch.Redacted is set).
	Patch func(ctx context.Context) *loop.Patch
	// Hooks let the caller take part in the run (hooks.go); Guardrails are
	// hooks with a verdict, which end the run when they trip. Both apply
	// to the run's sub-agents too.
	Hooks      Hooks
	Guardrails []Guardrail
	// Redactor knows the secrets the run holds (provider keys, MCP header
	// values, expanded ${VAR}s): each is replaced by [redacted] in every
	// event before the core, the observers or the store see it, in the
	// spec's texts, in streamed text and in the errors Run returns. Nil
	// means the secrets of the process's environment: the values of the
	// variables whose names look secret (redact.SecretName: *_KEY,
	// *_TOKEN, *_SECRET, *PASSWORD*, which covers the providers' API keys),
	// read as the run starts, so that a model that echoes a key cannot put
	// it in the store or a trace.
	Redactor *redact.Redactor
	// NoRedaction turns that default off: with a nil Redactor, nothing is
	// redacted.
	NoRedaction bool
}

// Run carries out task until the loop core finishes it. The Result is
// always returned once the run has started; err is non-nil when the run
// could not start (an invalid task or config) or ended failed because
// infrastructure broke (the Result then says what).
func Run(ctx context.Context, task Task, cfg Config) (loop.Result, error) {
	r, err := newRun(&task, &cfg)
	if err != nil {
		return loop.Result{}, cfg.Redactor.Error(err)
	}
	return r.run(ctx)
}

// Spec returns the loop core's description of t and the verifiers by check
// name. Checks with the same name are told apart by a "#n" suffix.
func (t Task) Spec() (loop.Spec, map[string]verify.Verifier, error) {
	spec, _, checks, err := t.compile()
	return spec, checks, err
}

func (t *Task) compile() (loop.Spec, *tool.Registry, map[string]verify.Verifier, error) {
	reg, err := tool.NewRegistry(t.Tools...)
	if err != nil {
		return loop.Spec{}, nil, nil, err
	}
	spec := loop.Spec{Mode: t.Mode, Goal: t.Goal, Instructions: t.Instructions, Tools: reg.Specs(), Permissions: t.Permissions, Budget: t.Budget, Policy: t.Policy, OutputSchema: t.OutputSchema}
	byName := map[string]verify.Verifier{}
	checks := t.Checks
	if len(t.OutputSchema) > 0 {
		v, err := check.Output(t.OutputSchema, t.decode)
		if err != nil {
			return loop.Spec{}, nil, nil, err
		}
		checks.Cheap = append([]verify.Verifier{v}, checks.Cheap...)
	}
	spec.Checks = nameChecks(spec.Checks, byName, checks)
	if err := t.compileSubagents(&spec, reg, byName); err != nil {
		return loop.Spec{}, nil, nil, err
	}
	if err := spec.Validate(); err != nil {
		return loop.Spec{}, nil, nil, err
	}
	return spec, reg, byName, nil
}

// nameChecks appends the checks of tiers to checks, naming each by its
// verifier in byName; a name already taken gets a "#n" suffix.
func nameChecks(checks []loop.Check, byName map[string]verify.Verifier, tiers verify.Tiers) []loop.Check {
	for _, tier := range []struct {
		tier verify.Tier
		vs   []verify.Verifier
	}{{verify.Cheap, tiers.Cheap}, {verify.Expensive, tiers.Expensive}, {verify.Holdout, tiers.Holdout}} {
		for _, v := range tier.vs {
			name := v.Name()
			for n := 2; byName[name] != nil; n++ {
				name = v.Name() + "#" + strconv.Itoa(n)
			}
			byName[name] = v
			checks = append(checks, loop.Check{Name: name, Tier: tier.tier})
		}
	}
	return checks
}

type run struct {
	cfg Config
	m   *loop.Machine
	// x carries out the commands.
	x   Executor
	log journal
	// shell is log.shell, made a func value once.
	shell Sink
	// What the store has not yet been given, and the seq of the latest
	// snapshot.
	snapSeq  int64
	awaiting string // the question a person will answer later
	// resumed names the RunTools commands re-issued by a resume: their
	// non-idempotent calls may already have taken effect.
	resumed map[string]bool
	// childLog passes the children's entries to Config.ChildObservers.
	childLog childLog
	// prerecorded is how many events at the queue's front are already
	// recorded (tool results made durable as their calls ended).
	prerecorded int
	// steps and cost are the usage so far, published after each save for
	// the lease's heartbeat, which writes them to the run's row.
	steps, cost atomic.Int64
	// inboxTaken is the ID of the last queued message the run took into
	// its log, inboxDeleted the last one removed from the queue (steer.go).
	inboxTaken, inboxDeleted int64
}

func newRun(task *Task, cfg *Config) (*run, error) {
	r := &run{childLog: childLog{obs: cfg.ChildObservers}}
	spec, err := r.x.init(task, cfg)
	if err != nil {
		return nil, err
	}
	m, err := loop.New(spec)
	if err != nil {
		return nil, err
	}
	if p, ok := cfg.Model.(model.Priced); ok && !p.PriceKnown() && task.Budget.Cost > 0 {
		name := "the model"
		if n, ok := cfg.Model.(model.Named); ok {
			name = n.Name()
		}
		return nil, fmt.Errorf("runner: a cost budget of %s needs a model with a known price, and %s has none: give the model a price or lift the cost limit (cost: unlimited)", task.Budget.Cost, name)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.startTelemetry(); err != nil {
		return nil, err
	}
	r.cfg, r.m = *cfg, m
	r.log.cfg = &r.cfg
	r.shell = r.log.shell
	return r, nil
}

// startTelemetry adds the observer of TracerProvider and MeterProvider to
// the run's observers, once per run tree.
func (cfg *Config) startTelemetry() error {
	if cfg.telemetry == nil && (cfg.TracerProvider != nil || cfg.MeterProvider != nil) {
		name := ""
		if n, ok := cfg.Model.(model.Named); ok {
			name = n.Name()
		}
		tel, err := otelobs.New(otelobs.Config{TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider, Model: name,
			CaptureContent: otelobs.CaptureContentFromEnv(os.Getenv), Redactor: cfg.Redactor})
		if err != nil {
			return fmt.Errorf("runner: telemetry: %w", err)
		}
		cfg.telemetry = tel
	}
	if cfg.telemetry != nil {
		cfg.Observers = append(slices.Clip(cfg.Observers), cfg.telemetry)
	}
	return nil
}

// telemetryStopped tells the telemetry observer that this process no
// longer drives the run.
func (r *run) telemetryStopped() {
	if r.cfg.telemetry != nil {
		r.cfg.telemetry.Stopped(r.cfg.RunID, r.log.now())
	}
}

// run drives the machine. Each command is carried out before the next event
// is fed back: the core issues one command at a time, and work inside a
// command (the calls of a tool turn, the checks of a tier) runs in parallel.
// Carrying it out on this goroutine rather than handing it to another saves
// a cross-thread wake-up per step, most of the cost of a fast step.
func (r *run) run(ctx context.Context) (_ loop.Result, err error) {
	defer func() { err = r.cfg.Redactor.Error(err) }()
	start := r.log.now()
	if r.cfg.RunID == "" {
		r.cfg.RunID = "run-" + strconv.FormatInt(start.UnixNano(), 10)
		r.x.runID = r.cfg.RunID
	}
	if err := r.create(ctx, start); err != nil {
		return loop.Result{}, err
	}
	spec := r.m.Spec()
	r.log.record(observe.Entry{At: start, Kind: observe.KindRun, Spec: &spec})
	release, err := r.holdLease(ctx)
	if err != nil {
		return loop.Result{}, err
	}
	defer release()
	return r.drive(ctx, []loop.Event{{Type: loop.EventStart, At: start}})
}

// drive feeds queue to the machine and carries out its commands until the
// run finishes or waits for a person.
func (r *run) drive(ctx context.Context, queue []loop.Event) (loop.Result, error) {
	// A run left waiting for a person, or broken off, has spans open.
	defer r.telemetryStopped()
	bounds := &deadlines{parent: ctx}
	defer bounds.stop()
	for len(queue) > 0 {
		// Appends only write past the queue's end, so the entry may point
		// into it without a copy.
		ev := &queue[0]
		queue = queue[1:]
		if r.prerecorded > 0 {
			r.prerecorded--
		} else {
			r.log.admit(ev)
			r.log.record(observe.Entry{At: ev.At, Kind: observe.KindEvent, Event: ev})
		}
		if err := r.m.Step(*ev); err != nil {
			return r.stepFailed(err)
		}
		rd := r.m.Ready()
		r.m.Advance()
		if final := r.recordReady(ev, rd); final != nil {
			return r.finish(ctx, final)
		}
		if len(rd.Commands) == 0 {
			continue
		}
		// A person's messages (Say) join the log here, before the batch:
		// the next model request the core builds carries them.
		if err := r.takeMessages(ctx); err != nil {
			return r.stepFailed(err)
		}
		// Write-ahead: what led to these commands is durable before any of
		// them is carried out.
		if err := r.save(ctx); err != nil {
			return r.abort(err)
		}
		r.takenMessages(ctx)
		// Recorded events are pointed at by the log: the queue is only
		// appended to, which never writes over them. An empty queue (the
		// usual case) takes the answers as they are, without a copy.
		answers := r.carryOutAll(bounds, rd.Commands)
		if len(queue) == 0 {
			queue = answers
		} else {
			queue = append(queue, answers...)
		}
		bounds.batchDone()
		r.resumed = nil
		if r.awaiting != "" {
			return r.wait(ctx)
		}
		// A cancelled run ends cancelled, whatever the interrupted work says;
		// results already in the log stay, so that the run and its log agree.
		if ctx.Err() != nil {
			queue = append(queue[:r.prerecorded:r.prerecorded], loop.Event{Type: loop.EventCancel, Text: context.Cause(ctx).Error()})
		}
		at := r.log.now()
		for i := r.prerecorded; i < len(queue); i++ {
			queue[i].At = at
		}
	}
	return loop.Result{}, errors.New("runner: the loop core stopped issuing commands before finishing")
}

// stepFailed ends the run after the core refused an event: a shell bug,
// but the run still ends with exactly one Result.
func (r *run) stepFailed(err error) (loop.Result, error) {
	r.m.Advance()
	r.m.Abort("runner: " + r.cfg.Redactor.String(err.Error()))
	res, _ := r.m.Result()
	return res, fmt.Errorf("runner: %w", err)
}

// recordReady records what the step on ev decided, up to a Finish
// command, whose Result it returns. A step takes no time worth a clock
// read: its notes and commands are stamped with ev's time.
func (r *run) recordReady(ev *loop.Event, rd loop.Ready) (final *loop.Result) {
	for i := range rd.Notes {
		r.log.record(observe.Entry{At: ev.At, Kind: observe.KindNote, Note: &rd.Notes[i]})
	}
	for i := range rd.Commands {
		c := &rd.Commands[i]
		r.log.record(observe.Entry{At: ev.At, Kind: observe.KindCommand, Command: c})
		if c.Type == loop.Finish {
			return c.Result
		}
		if ev.Type == loop.EventResume && c.Type == loop.RunTools {
			r.resumed = map[string]bool{c.ID: true}
		}
	}
	return nil
}

// carryOutAll does the work of a batch of commands (several model calls
// when alternatives are sampled, several Verify commands when they are
// checked, a turn's tools beside its sub-agents), in parallel, and returns
// their events in command order.
func (r *run) carryOutAll(bounds *deadlines, cmds []loop.Command) []loop.Event {
	if len(cmds) == 1 {
		return r.carryOut(bounds.bound(cmds[0].Deadline), &cmds[0], false)
	}
	out := make([][]loop.Event, len(cmds))
	var wg sync.WaitGroup
	for i := range cmds {
		ctx := bounds.bound(cmds[i].Deadline)
		wg.Go(func() { out[i] = r.carryOut(ctx, &cmds[i], true) })
	}
	wg.Wait()
	return firstTrip(slices.Concat(out...))
}

// carryOut does c's work under ctx, which is bounded by c's deadline, and
// returns the events that answer it; inBatch says other commands are
// carried out beside it.
func (r *run) carryOut(ctx context.Context, c *loop.Command, inBatch bool) []loop.Event {
	switch c.Type {
	case loop.CallModel:
		ev, _ := r.x.CallModel(ctx, c, r.shell)
		return []loop.Event{ev}
	case loop.RunTools:
		return r.runTools(ctx, c, inBatch)
	case loop.Verify:
		return r.x.Verify(ctx, c)
	case loop.RunChild:
		return []loop.Event{r.runChild(ctx, c)}
	case loop.AskHuman:
		if ev := r.ask(ctx, c); ev.Type != "" {
			return []loop.Event{ev}
		}
	}
	return nil
}

func (r *run) runTools(ctx context.Context, c *loop.Command, inBatch bool) []loop.Event {
	calls, events := r.x.DecideTools(ctx, c.Calls, r.resumed[c.ID], r.shell)
	if r.cfg.Store != nil && !inBatch && len(events) == 0 && len(calls) > 1 {
		return r.runToolsDurably(ctx, calls)
	}
	if len(events) == 0 {
		return r.x.RunTools(ctx, calls, r.shell)
	}
	return append(events, r.x.RunTools(ctx, calls, r.shell)...)
}

// runToolsDurably runs a turn's calls and makes each result durable as
// soon as its call ends, so that a crash while the others run loses only
// theirs: on resume the recorded results are reused. The events are
// recorded here, in the order the calls end, and drive steps them without
// recording them again (r.prerecorded).
func (r *run) runToolsDurably(ctx context.Context, calls []loop.ToolCall) []loop.Event {
	var queue []loop.Event
	r.x.RunToolsEach(ctx, calls, r.shell, func(ev loop.Event) {
		r.log.mu.Lock()
		defer r.log.mu.Unlock()
		ev.At = r.log.now()
		r.log.admit(&ev)
		r.log.record(observe.Entry{At: ev.At, Kind: observe.KindEvent, Event: &ev})
		if len(queue) < len(calls)-1 {
			// The last result is saved with the commands it leads to. No
			// snapshot here: the core has not seen these events yet. A
			// failure is kept in r.log.saveErr and stops the run before its
			// next command.
			_ = r.log.flush(ctx)
		}
		queue = append(queue, ev)
	})
	r.prerecorded = len(queue)
	return queue
}

func (r *run) ask(ctx context.Context, c *loop.Command) loop.Event {
	if r.cfg.Human == nil {
		return loop.Event{Type: loop.EventHumanUnavailable, Call: c.ID}
	}
	answer, err := r.cfg.Human.Ask(ctx, c.Question)
	if errors.Is(err, ErrAwaitingInput) && r.cfg.Store != nil {
		r.awaiting = c.Question
		return loop.Event{}
	}
	if err != nil {
		return loop.Event{Type: loop.EventHumanUnavailable, Call: c.ID, Text: err.Error()}
	}
	return loop.Event{Type: loop.EventHumanReply, Call: c.ID, Text: answer}
}
