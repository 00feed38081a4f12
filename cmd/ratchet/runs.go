package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/postgres"
	"github.com/ratchetloop/ratchet/store/sqlite"
)

// exitWaiting: the run is waiting for a person (ratchet answer/approve/deny).
const exitWaiting = 4

const defaultDBHint = "$XDG_STATE_HOME/ratchet/ratchet.db, XDG_STATE_HOME defaulting to ~/.local/state"

// openStore opens the run database: flagValue, else $RATCHET_DB, else the
// default SQLite file. A PostgreSQL DSN (postgres://…, or host=… dbname=…)
// opens PostgreSQL.
func (m *Main) openStore(ctx context.Context, flagValue string) (store.Store, error) {
	where, err := dbLocation(m.Getenv, flagValue)
	if err != nil {
		return nil, err
	}
	if isPostgresDSN(where) {
		m.secrets.Add(dsnPassword(where)) // a connection error may quote the DSN
		s, err := postgres.Open(ctx, where)
		if err != nil {
			return nil, fmt.Errorf("run database (PostgreSQL): %w", err)
		}
		return m.shareLimits(s, s.Ledger)
	}
	if err := os.MkdirAll(filepath.Dir(where), 0o700); err != nil {
		return nil, fmt.Errorf("run database: %w", err)
	}
	s, err := sqlite.Open(where)
	if err != nil {
		return nil, fmt.Errorf("run database %s: %w", where, err)
	}
	return m.shareLimits(s, s.Ledger)
}

// shareLimits makes the process's provider limits count in the run
// database's ledger while s is open: every process and machine with the
// same run database holds its calls against the same counts (see
// docs/providers.md, "Shared limits").
func (m *Main) shareLimits(s store.Store, ledger func() (limit.Ledger, error)) (store.Store, error) {
	if m.limits == nil {
		return s, nil // not opened by Run (a test's direct call): no model of this Main counts anything
	}
	l, err := ledger()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("run database: %w", err)
	}
	return sharing{Store: s, end: m.limits.Share(l)}, nil
}

// sharing is a run database the process's limits are shared in until it
// is closed.
type sharing struct {
	store.Store
	end func()
}

func (s sharing) Close() error {
	s.end()
	return s.Store.Close()
}

// dbLocation is the run database openStore opens: a SQLite file's path or
// a PostgreSQL DSN.
func dbLocation(getenv func(string) string, flagValue string) (string, error) {
	where := flagValue
	if where == "" {
		where = getenv("RATCHET_DB")
	}
	if where != "" {
		return where, nil
	}
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("run database: %w (set RATCHET_DB or --db)", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "ratchet", "ratchet.db"), nil
}

// shownDB is the run database's location as it may be printed: a DSN's
// password is masked.
func (m *Main) shownDB(flagValue string) string {
	where, err := dbLocation(m.Getenv, flagValue)
	if err != nil {
		return ""
	}
	if !isPostgresDSN(where) {
		if abs, err := filepath.Abs(where); err == nil {
			return abs
		}
		return where
	}
	if u, err := url.Parse(where); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return passwordField.ReplaceAllString(where, "password=xxxxx")
}

// passwordField is a password in a libpq key=value DSN.
var passwordField = regexp.MustCompile(`password=('(\\.|[^'])*'|\S+)`)

// isPostgresDSN tells a PostgreSQL DSN, as a URL or as libpq's key=value
// pairs, from a SQLite file path.
func isPostgresDSN(s string) bool {
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return true
	}
	for _, f := range strings.Fields(s) {
		if k, _, ok := strings.Cut(f, "="); ok && (k == "host" || k == "dbname" || k == "user") {
			return true
		}
	}
	return false
}

// taskInfo is what a run's row keeps to rebuild its task on resume.
type taskInfo struct {
	TaskFile  string `json:"task_file"`
	Workspace string `json:"workspace,omitempty"`
	// Start is where the workspace copy started, for the run's patch.
	Start *patch.Start `json:"start,omitempty"`
	Model string       `json:"model,omitempty"`
	// Ran is the model the run started with, from --model or its task
	// file (a scripted one by its recording's name): what show and the UI
	// show. Unlike Model, a resume does not read it back.
	Ran           string        `json:"ran_model,omitempty"`
	UnsafeSandbox bool          `json:"unsafe_sandbox,omitempty"`
	Steps         int           `json:"steps,omitempty"`
	ModelCalls    int           `json:"model_calls,omitempty"`
	ToolCalls     int           `json:"tool_calls,omitempty"`
	Tokens        int64         `json:"tokens,omitempty"`
	Cost          float64       `json:"cost,omitempty"`
	Time          time.Duration `json:"time,omitempty"`
	// Temporal, Namespace and TaskQueue say where a run started with
	// --temporal runs: answers go to its workflow there.
	Temporal  string `json:"temporal,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	TaskQueue string `json:"task_queue,omitempty"`
	// Cache is the response cache (--cache) and ProviderLimits the
	// --provider-limit flags: a resume uses them again.
	Cache          string   `json:"cache,omitempty"`
	CacheScope     string   `json:"cache_scope,omitempty"`
	ProviderLimits []string `json:"provider_limits,omitempty"`
}

// runModel is the model a run started with, from its task info (Ran, else
// the Model override of a run recorded before Ran was); "" when unknown.
func runModel(task []byte) string {
	var i taskInfo
	if len(task) == 0 || json.Unmarshal(task, &i) != nil {
		return ""
	}
	return cmp.Or(i.Ran, i.Model)
}

func (f runFlags) info() taskInfo {
	return taskInfo{
		TaskFile: f.taskFile, Workspace: f.workspace, Start: f.start, Model: f.model, Ran: f.ran, UnsafeSandbox: f.unsafeSandbox,
		Steps: f.steps, ModelCalls: f.modelCalls, ToolCalls: f.toolCalls, Tokens: f.tokens, Cost: f.cost, Time: f.time,
		Temporal: f.temporal, Namespace: f.namespace, TaskQueue: f.taskQueue,
		Cache: f.cache, CacheScope: f.cacheScope, ProviderLimits: f.providerLimits,
	}
}

func (i taskInfo) flags() runFlags {
	return runFlags{
		taskFile: i.TaskFile, workspace: i.Workspace, start: i.Start, model: i.Model, unsafeSandbox: i.UnsafeSandbox,
		steps: i.Steps, modelCalls: i.ModelCalls, toolCalls: i.ToolCalls, tokens: i.Tokens, cost: i.Cost, time: i.Time,
		cache: i.Cache, cacheScope: i.CacheScope, providerLimits: i.ProviderLimits,
	}
}

// interrupted tells a run that says running but whose process is gone.
func interrupted(r store.Run, now time.Time) bool {
	if r.Status != store.StatusRunning || onTemporal(r) {
		return false
	}
	live, _ := runner.LeaseState(r, now)
	return !live
}

// shownStatus is a run's status as ls and show print it.
func shownStatus(r store.Run, now time.Time) string {
	if interrupted(r, now) {
		return "interrupted"
	}
	return r.Status
}

// oneLine shows s on one line of at most n characters, escaped for the
// terminal (the text is a model's or a tool's).
func oneLine(s string, n int) string {
	return observe.OneLine(observe.Escape(strings.Join(strings.Fields(s), " ")), n)
}

func (m *Main) printJSON(name string, v any) int {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(m.Stderr, "%s: %v\n", name, err)
		return exitInfra
	}
	return exitDone
}

// (postgres://user:pw@host/db) or as key=value pairs (password=pw), or "".
func dsnPassword(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		return pw
	}
	for _, field := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(field, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// escaper writes text escaped for the terminal (observe.Escape), one
// Write at a time: write whole lines.
type escaper struct{ w io.Writer }

func (e escaper) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, observe.Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
