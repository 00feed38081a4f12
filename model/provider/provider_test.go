package provider

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{"anthropic:claude-sonnet-4-5", Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}, ""},
		{"openai:gpt-4.1", Spec{Provider: "openai", Model: "gpt-4.1"}, ""},
		{"openai-compatible:http://localhost:11434/v1#llama3.1:8b", Spec{Provider: "openai-compatible", BaseURL: "http://localhost:11434/v1", Model: "llama3.1:8b"}, ""},
		{"openai-compatible:#qwen", Spec{Provider: "openai-compatible", Model: "qwen"}, ""}, // base URL from OPENAI_BASE_URL
		{"openai-compatible:http://h/v1#a#b", Spec{Provider: "openai-compatible", BaseURL: "http://h/v1#a", Model: "b"}, ""},
		{"scripted:turns.yaml", Spec{Provider: "scripted", File: "turns.yaml"}, ""},
		{"", Spec{}, "no model configured; options: anthropic:MODEL"},
		{"anthropic:", Spec{}, "needs a model name, e.g. anthropic:claude-sonnet-4-5"},
		{"openai-compatible:http://localhost:8000/v1", Spec{}, "needs BASE_URL#MODEL"},
		{"scripted:", Spec{}, "scripted needs a file"},
		{"claude", Spec{}, `unknown model "claude"; options: anthropic:MODEL`},
		{"openai-responses:gpt-5", Spec{Provider: "openai-responses", Model: "gpt-5"}, ""},
		{"gemini:gemini-2.5-flash", Spec{Provider: "gemini", Model: "gemini-2.5-flash"}, ""},
		{"gemini:", Spec{}, "needs a model name, e.g. gemini:gemini-2.5-flash"},
		{"mistral:large", Spec{}, `unknown model "mistral:large"`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	if _, err := Parse(""); !errors.Is(err, ErrNoModel) {
		t.Errorf("Parse(\"\") = %v, want ErrNoModel", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"anthropic:x", "openai-compatible:http://a#b", "scripted:f", ":", "#", "openai:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			return
		}
		if sp.Provider != "scripted" && sp.Model == "" || sp.Provider == "scripted" && sp.File == "" {
			t.Errorf("Parse(%q) = %+v without a model or file", s, sp)
		}
	})
}

func TestOpen(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-oai", "OPENAI_BASE_URL": "http://localhost:9/v1",
		"RATCHET_MODEL": "openai:gpt-4.1",
	}
	getenv := func(k string) string { return env[k] }
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.yaml"), []byte("name: demo\nturns:\n  - text: hi\n"), 0o644)
	for _, tc := range []struct{ in, name string }{
		{"anthropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"},
		{"openai:gpt-4.1", "openai:gpt-4.1"},
		{"", "openai:gpt-4.1"}, // RATCHET_MODEL
		{"openai-compatible:http://localhost:11434/v1#llama3.1", "openai-compatible:http://localhost:11434/v1#llama3.1"},
		{"openai-compatible:#llama3.1", "openai-compatible:http://localhost:9/v1#llama3.1"}, // OPENAI_BASE_URL
		{"scripted:t.yaml", "demo"},
	} {
		m, err := Open(tc.in, Config{Dir: dir, Getenv: getenv, Notice: io.Discard})
		if err != nil {
			t.Errorf("Open(%q): %v", tc.in, err)
			continue
		}
		if got := m.(model.Named).Name(); got != tc.name {
			t.Errorf("Open(%q).Name() = %q, want %q", tc.in, got, tc.name)
		}
	}
}

func TestParseChain(t *testing.T) {
	specs, err := ParseChain("anthropic:claude-sonnet-4-5, openai:gpt-4.1")
	want := []Spec{{Provider: "anthropic", Model: "claude-sonnet-4-5"}, {Provider: "openai", Model: "gpt-4.1"}}
	if err != nil || !cmp.Equal(want, specs) {
		t.Errorf("ParseChain = %+v, %v", specs, err)
	}
	_, err = ParseChain("anthropic:,claude,openai:gpt-4.1")
	if err == nil || !strings.Contains(err.Error(), "needs a model name") || !strings.Contains(err.Error(), `unknown model "claude"`) {
		t.Errorf("every member's problem at once: %v", err)
	}
}

// A chain opens each member as a model of its own, and fails naming the
// member that cannot be opened.
func TestOpenChain(t *testing.T) {
	dir := t.TempDir()
	turns := "turns:\n  - finish: {answer: \"5\", confidence: 0.9}\n"
	for _, f := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(turns), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Open("scripted:a.yaml, scripted:b.yaml", Config{Dir: dir, Notice: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := m.(model.Named); !ok || n.Name() != "scripted:a.yaml,scripted:b.yaml" {
		t.Errorf("the chain is named %v", m)
	}
	_, err = Open("scripted:a.yaml,scripted:missing.yaml", Config{Dir: dir, Notice: io.Discard})
	if err == nil || !strings.HasPrefix(err.Error(), "scripted:missing.yaml: ") {
		t.Errorf("err %v; want it to name the member", err)
	}
}
