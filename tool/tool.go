// Package tool defines the tools an agent can call, a registry that checks
// them once at start-up, and an executor that runs a batch of calls in
// parallel and turns every outcome, including failures, into text for the
// model.
//
// The runner owns an [Executor] and a [Registry]; the loop core never sees
// a Tool, only the [model.ToolSpec] values from [Registry.Specs] and the
// [Result] of each call.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratchetloop/ratchet/model"
)

// Info describes a tool. It is read once, when the tool is registered.
type Info struct {
	// Name is how the model calls the tool. It must match
	// ^[a-zA-Z0-9_-]{1,64}$, which every provider accepts, and must not be
	// "finish", which the loop owns.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Schema is the JSON Schema of the arguments. Its type must be "object".
	Schema json.RawMessage
	// Idempotent says the tool is safe to run again after a crash left a
	// call's outcome unknown, so a resumed run may retry the call.
	Idempotent bool
	// Timeout bounds one call; zero means the executor's default.
	Timeout time.Duration
	// MaxOutputBytes and MaxOutputLines bound the output shown to the model
	// (see [Trim]); zero means the executor's default.
	MaxOutputBytes, MaxOutputLines int
	// MoreHint tells the model how to see output cut by those bounds; it
	// ends the elision marker (see [TrimHint]). Default [DefaultMoreHint].
	MoreHint string
	// Inline runs the tool on the executor's goroutine instead of its own,
	// under the caller's context. That saves a goroutine hand-off and a timer
	// per call, most of the cost of a trivial call, but the executor can then
	// not abandon a call that outlives its deadline, and Timeout does not
	// apply (a registry refuses both): set it only for tools that return
	// promptly, such as pure computations. Panics are still recovered.
	Inline bool
}

// Tool is something the model can call.
//
// Run receives the arguments as the model sent them (empty ones as {}),
// after the executor has checked them against Info().Schema. Run must honour
// ctx: the executor stops waiting when ctx is done, but cannot stop Run.
//
// A returned error is an observation for the model (the tool failed), not
// an infrastructure failure; it is shown to the model followed by the
// output, if any, so a tool may return both (a command's output and its exit
// status, say). Wrap [ErrInvalidArgs] to report arguments that passed the
// schema but are still unusable.
//
// Implementations must be safe for concurrent use.
type Tool interface {
	Info() Info
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// ErrInvalidArgs is wrapped by a [Tool] whose arguments cannot be used; the
// executor then reports [OutcomeInvalidArgs] instead of [OutcomeToolError].
var ErrInvalidArgs = errors.New("invalid arguments")

// reservedName is the loop's own finish tool, which it offers and handles
// itself.
const reservedName = "finish"

// Registry is a validated, immutable set of tools. It is safe for
// concurrent use. A nil *Registry holds no tools.
type Registry struct {
	entries []entry
	byName  map[string]int // index into entries
}

// entry caches what the executor needs on every call, so that Info is not
// called and the schema is not compiled again.
type entry struct {
	tool   Tool
	info   Info
	schema *jsonschema.Schema
	// typed is the tool itself when its argument type carries its schema
	// (see args.go), nil otherwise.
	typed typedTool
}

// NewRegistry validates tools and returns a registry holding them in the
// given order. It checks every tool and reports all problems at once, one
// per line, so that a misconfigured tool set can be fixed in one go.
func NewRegistry(tools ...Tool) (*Registry, error) {
	// entries[i] is tools[i], so that indices in messages match arguments.
	entries := make([]entry, len(tools))
	byName := make(map[string]int, len(tools))
	var errs []error
	for i, t := range tools {
		if t == nil {
			errs = append(errs, fmt.Errorf("tool[%d]: nil Tool", i))
			continue
		}
		info := t.Info()
		problem := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("tool[%d] %q: %s", i, info.Name, fmt.Sprintf(format, args...)))
		}
		switch {
		case !validName(info.Name):
			problem("name must match ^[a-zA-Z0-9_-]{1,64}$")
		case info.Name == reservedName:
			problem("name is reserved for the loop's own tool")
		}
		if j, dup := byName[info.Name]; dup {
			problem("duplicate name (also tool[%d])", j)
		} else {
			byName[info.Name] = i
		}
		if strings.TrimSpace(info.Description) == "" {
			problem("description is empty")
		}
		if info.Inline && info.Timeout > 0 {
			problem("an Inline tool runs under its caller's deadline and cannot have its own Timeout")
		}
		rs, err := resolveSchema(info.Schema)
		if err != nil {
			problem("%v", err)
		}
		entries[i] = entry{tool: t, info: info, schema: rs}
		if tt, ok := t.(typedTool); ok && tt.typedSchema(info.Schema) {
			entries[i].typed = tt
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Registry{entries: entries, byName: byName}, nil
}

// validName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e, ok := r.entry(name)
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// entry returns the entry for name.
func (r *Registry) entry(name string) (*entry, bool) {
	if r == nil {
		return nil, false
	}
	i, ok := r.byName[name]
	if !ok {
		return nil, false
	}
	return &r.entries[i], true
}

// Names returns the tool names in registration order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	names := make([]string, len(r.entries))
	for i, e := range r.entries {
		names[i] = e.info.Name
	}
	return names
}

// Specs describes the tools to the model, in registration order. The
// InputSchema values are shared with the registry and must not be modified.
func (r *Registry) Specs() []model.ToolSpec {
	if r == nil {
		return nil
	}
	specs := make([]model.ToolSpec, len(r.entries))
	for i, e := range r.entries {
		specs[i] = model.ToolSpec{
			Name:        e.info.Name,
			Description: e.info.Description,
			InputSchema: e.info.Schema,
		}
	}
	return specs
}
