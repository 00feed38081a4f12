// Package tooltest checks that a tool.Tool keeps the interface's contract,
// in the manner of testing/slogtest: [Check] calls the tool with valid and
// hostile arguments and returns every violation at once.
//
// The contract checked:
//   - Info is accepted by tool.NewRegistry (a valid name that is not
//     "finish", a description, an object JSON Schema for the arguments
//     that the JSON Schema library resolves) and is the same on every call.
//   - Info.Idempotent says what the caller declares in Config.Idempotent: a
//     resumed run re-runs an idempotent tool whose outcome is unknown.
//   - Arguments that violate the schema (not JSON, not an object, a
//     property of the wrong type, a required property missing, an unknown
//     property the schema refuses) come back from the executor as an
//     invalid_args observation without Run being called; and Run called
//     directly with arguments it cannot decode (not JSON, not an object, a
//     property of the wrong type) returns an error, without panicking or
//     hanging.
//   - Config.Valid arguments match the schema and never make the tool
//     panic, alone or concurrently (run the suite under -race).
//   - Run honours its context: on a cancelled context it returns within
//     Config.Timeout.
//
// The suite runs the tool with Config.Valid, so point the tool at a
// throw-away workspace or server.
package tooltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ratchetloop/ratchet/tool"
)

// Config says how to call the tool. Valid is required; the zero value of
// every other field means its default.
type Config struct {
	// Valid are arguments the tool accepts; each must match its schema.
	Valid []json.RawMessage
	// Idempotent declares whether the tool is safe to run again after a
	// crash left a call's outcome unknown; Info must say the same.
	Idempotent bool
	// Timeout bounds a call on a cancelled context (default 5s).
	Timeout time.Duration
}

// Check runs the suite on t and returns every violation, joined; nil means
// t keeps the contract.
func Check(t tool.Tool, cfg Config) error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	s := &suite{cfg: cfg}
	s.tool = &counting{Tool: t}
	if s.info() {
		s.valid()
		s.invalid()
		s.cancelled()
		s.concurrent()
	}
	// A Run that outlived its timeout may still report (a late panic).
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Run is Check as a test: each violation is reported with t.Error.
func Run(t *testing.T, tl tool.Tool, cfg Config) {
	t.Helper()
	if err := Check(tl, cfg); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			t.Error(line)
		}
	}
}

// counting counts the calls of Run that reach the tool.
type counting struct {
	tool.Tool
	runs atomic.Int64
}

func (c *counting) Run(ctx context.Context, args json.RawMessage) (string, error) {
	c.runs.Add(1)
	return c.Tool.Run(ctx, args)
}

type suite struct {
	cfg    Config
	tool   *counting
	reg    *tool.Registry
	schema *jsonschema.Resolved
	props  map[string]*jsonschema.Schema
	req    []string
	mu     sync.Mutex
	errs   []error
}

func (s *suite) errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Errorf(format, args...))
}

// info checks the tool's Info, reporting whether the rest can run.
func (s *suite) info() bool {
	info := s.tool.Info()
	if again := s.tool.Info(); !reflect.DeepEqual(info, again) {
		s.errorf("Info changed between calls: %s, then %s", describe(info), describe(again))
	}
	if info.Idempotent != s.cfg.Idempotent {
		s.errorf("Info.Idempotent is %v, but the tool is declared %s", info.Idempotent, map[bool]string{true: "idempotent", false: "not idempotent"}[s.cfg.Idempotent])
	}
	reg, err := tool.NewRegistry(s.tool)
	if err != nil {
		s.errorf("tool.NewRegistry refuses the tool: %v", err)
		return false
	}
	s.reg = reg
	var schema jsonschema.Schema
	if err := json.Unmarshal(info.Schema, &schema); err != nil {
		s.errorf("schema is not a JSON Schema: %v", err)
		return false
	}
	if s.schema, err = schema.Resolve(nil); err != nil {
		s.errorf("schema does not resolve: %v", err)
		return false
	}
	s.props, s.req = schema.Properties, schema.Required
	if len(s.cfg.Valid) == 0 {
		s.errorf("Config.Valid is empty: give arguments the tool accepts")
	}
	return true
}

func describe(i tool.Info) string {
	return fmt.Sprintf("{name %q, description %q, schema %s, idempotent %v, timeout %v, max output %d bytes %d lines, more hint %q, inline %v}",
		i.Name, i.Description, i.Schema, i.Idempotent, i.Timeout, i.MaxOutputBytes, i.MaxOutputLines, i.MoreHint, i.Inline)
}

// conforms says whether args match the schema.
func (s *suite) conforms(args json.RawMessage) bool {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return false
	}
	return s.schema.Validate(v) == nil
}

// exec runs one call through an executor, as a run does.
func (s *suite) exec(ctx context.Context, args json.RawMessage) tool.Result {
	return tool.NewExecutor(tool.ExecConfig{}).RunOne(ctx, s.reg, tool.Call{ID: "c1", Name: s.tool.Info().Name, Args: args})
}

// errPanicked stands for the error of a Run that panicked (reported as
// such).
var errPanicked = errors.New("panicked")

// direct calls Run directly, turning a panic into a violation and a hang
// past the timeout into another. It returns Run's error, and whether Run
// returned.
func (s *suite) direct(ctx context.Context, what string, args json.RawMessage) (err error, returned bool) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				s.errorf("Run panicked on %s %s: %v", what, args, r)
				done <- errPanicked
			}
		}()
		_, err := s.tool.Tool.Run(ctx, args)
		done <- err
	}()
	select {
	case err := <-done:
		return err, true
	case <-time.After(s.cfg.Timeout):
		s.errorf("Run on %s %s did not return within %v", what, args, s.cfg.Timeout)
		return nil, false
	}
}

func (s *suite) valid() {
	for i, args := range s.cfg.Valid {
		if !s.conforms(args) {
			s.errorf("Config.Valid[%d] %s does not match the tool's schema", i, args)
			continue
		}
		if r := s.exec(context.Background(), args); r.Outcome == tool.OutcomePanic || r.Outcome == tool.OutcomeInvalidArgs {
			s.errorf("valid arguments %s: outcome %s: %s", args, r.Outcome, r.Output)
		}
	}
}

// violations returns arguments that fail the schema, each with what is
// wrong with it; direct says whether Run may be called with it (a missing
// or unknown property could make a tool act on zero values).
func (s *suite) violations() (out []struct {
	what   string
	args   json.RawMessage
	direct bool
}) {
	add := func(what, args string, direct bool) {
		if !s.conforms(json.RawMessage(args)) {
			out = append(out, struct {
				what   string
				args   json.RawMessage
				direct bool
			}{what, json.RawMessage(args), direct})
		}
	}
	add("arguments that are not JSON", `{"unclosed`, true)
	add("arguments that are not an object", `[]`, true)
	add("arguments that are not an object", `"args"`, true)
	add("arguments that are not an object", `7`, true)
	names := make([]string, 0, len(s.props))
	for name := range s.props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		key, _ := json.Marshal(name)
		wrong := `"not a number"`
		if p := s.props[name]; p != nil && (p.Type == "string" || slices.Contains(p.Types, "string")) {
			wrong = `12345`
		}
		add("a property of the wrong type", fmt.Sprintf(`{%s: %s}`, key, wrong), true)
	}
	if len(s.req) > 0 {
		add("arguments missing a required property", `{}`, false)
	}
	add("an unknown property", `{"zz_no_such_property": 1}`, false)
	return out
}

func (s *suite) invalid() {
	for _, v := range s.violations() {
		before := s.tool.runs.Load()
		r := s.exec(context.Background(), v.args)
		if r.Outcome != tool.OutcomeInvalidArgs || !r.IsError {
			s.errorf("%s %s: outcome %s, want %s", v.what, v.args, r.Outcome, tool.OutcomeInvalidArgs)
		}
		if s.tool.runs.Load() != before {
			s.errorf("%s %s reached Run: the executor should refuse them first", v.what, v.args)
		}
		if !v.direct {
			continue
		}
		before = s.tool.runs.Load()
		if err, returned := s.direct(context.Background(), v.what, v.args); returned && err == nil && s.tool.runs.Load() == before {
			s.errorf("Run accepted %s %s: it must reject them with an error, an observation for the model", v.what, v.args)
		}
	}
}

func (s *suite) cancelled() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range s.cfg.Valid {
		s.direct(ctx, "a cancelled context with", args)
	}
}

// concurrent runs every valid call at once, through the executor.
func (s *suite) concurrent() {
	var wg sync.WaitGroup
	for _, args := range s.cfg.Valid {
		wg.Go(func() {
			if r := s.exec(context.Background(), args); r.Outcome == tool.OutcomePanic {
				s.errorf("concurrent call with %s panicked: %s", args, r.Output)
			}
		})
	}
	wg.Wait()
}
