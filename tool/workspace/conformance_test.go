package workspace_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratchetloop/ratchet/tool/tooltest"
	"github.com/ratchetloop/ratchet/tool/workspace"
)

// TestConformance runs tooltest over every workspace tool, in a throw-away
// workspace.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	args := func(ss ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(ss))
		for i, s := range ss {
			out[i] = json.RawMessage(s)
		}
		return out
	}
	cfgs := map[string]tooltest.Config{
		workspace.ListFiles:  {Idempotent: true, Valid: args(`{}`, `{"path":".","max_entries":5}`, `{"path":"missing"}`)},
		workspace.ReadFile:   {Idempotent: true, Valid: args(`{"path":"a.txt"}`, `{"path":"a.txt","offset_line":2,"max_lines":1}`, `{"path":"../escape"}`)},
		workspace.WriteFile:  {Idempotent: true, Valid: args(`{"path":"b.txt","content":"new\n"}`, `{"path":"/abs","content":""}`)},
		workspace.EditFile:   {Valid: args(`{"path":"a.txt","old_text":"two","new_text":"2"}`, `{"path":"a.txt","old_text":"absent","new_text":""}`)},
		workspace.AppendFile: {Valid: args(`{"path":"log.txt","text":"x\n"}`)},
		workspace.Grep:       {Idempotent: true, Valid: args(`{"pattern":"one"}`, `{"pattern":"(?i)TWO","path":".","glob":"*.txt","context":2,"max_results":5,"ignore_case":true}`, `{"pattern":"x","path":"../up"}`)},
		workspace.Glob:       {Idempotent: true, Valid: args(`{"pattern":"*.txt"}`, `{"pattern":"**/*","path":".","max_results":1}`, `{"pattern":"x","path":"/abs"}`)},
	}
	tools := ws.Tools()
	if len(tools) != len(cfgs) {
		t.Fatalf("%d workspace tools, %d configured: give every tool a Config", len(tools), len(cfgs))
	}
	for _, tl := range tools {
		name := tl.Info().Name
		cfg, ok := cfgs[name]
		if !ok {
			t.Fatalf("no Config for workspace tool %s", name)
		}
		t.Run(name, func(t *testing.T) { tooltest.Run(t, tl, cfg) })
	}
}
