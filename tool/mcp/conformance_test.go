package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/tool/mcp"
	"github.com/ratchetloop/ratchet/tool/tooltest"
)

// TestConformance runs tooltest over MCP tools: one that answers, one that
// fails as a tool, one that fails at the protocol level. Idempotency comes
// from the server's annotations (echo is read-only, add idempotent).
func TestConformance(t *testing.T) {
	s := connect(t, newFake(), mcp.Config{Tools: []string{"echo", "add", "fail", "broken"}})
	cfgs := map[string]tooltest.Config{
		"echo":   {Idempotent: true, Valid: []json.RawMessage{json.RawMessage(`{"message":"hi"}`), json.RawMessage(`{"message":"\u00ff"}`)}},
		"add":    {Idempotent: true, Valid: []json.RawMessage{json.RawMessage(`{"a":1,"b":2}`)}},
		"fail":   {Valid: []json.RawMessage{json.RawMessage(`{}`)}},
		"broken": {Valid: []json.RawMessage{json.RawMessage(`{}`)}},
	}
	for _, tl := range s.Tools() {
		name := tl.Info().Name
		t.Run(name, func(t *testing.T) { tooltest.Run(t, tl, cfgs[name]) })
	}
	if len(s.Tools()) != len(cfgs) {
		t.Errorf("%d tools, want %d", len(s.Tools()), len(cfgs))
	}
}
