// Package provider turns a model string into a model.Model. It is the one
// parser of model strings, used by the CLI, task files and the Go API:
//
//	anthropic:<model>                      Anthropic's Messages API (ANTHROPIC_API_KEY)
//	openai:<model>                         OpenAI's Chat Completions (OPENAI_API_KEY, OPENAI_BASE_URL)
//	openai-responses:<model>               OpenAI's Responses API (the same variables)
//	openai-compatible:<base-url>#<model>   any server speaking Chat Completions: Ollama, vLLM, llama.cpp, LM Studio
//	gemini:<model>                         Google's Gemini API (GEMINI_API_KEY or GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL)
//	scripted:<file>                        a recorded, offline test double (model/scripted)
//
// An empty string means $RATCHET_MODEL. For openai-compatible, an empty
// base URL means $OPENAI_BASE_URL.
//
// Model strings joined by commas are a fallback chain (model/fallback):
// "anthropic:claude-sonnet-4-5,openai:gpt-4.1" asks OpenAI when Anthropic
// is overloaded. With Config.Limits, every HTTP provider's calls share the
// limits of their provider in the process (model/limit).
package provider

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/anthropic"
	"github.com/ratchetloop/ratchet/model/fallback"
	"github.com/ratchetloop/ratchet/model/gemini"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/openai"
	"github.com/ratchetloop/ratchet/model/retry"
	"github.com/ratchetloop/ratchet/model/scripted"
)

// Options lists the model string forms, for error messages and help.
const Options = "anthropic:MODEL (needs ANTHROPIC_API_KEY), openai:MODEL (needs OPENAI_API_KEY), " +
	"openai-responses:MODEL (OpenAI's Responses API), " +
	"openai-compatible:BASE_URL#MODEL (Ollama, vLLM, llama.cpp server, LM Studio; e.g. openai-compatible:http://localhost:11434/v1#llama3.1), " +
	"gemini:MODEL (needs GEMINI_API_KEY), " +
	"scripted:FILE (a recorded, offline test double); several joined by commas are a fallback chain"

// ErrNoModel is returned (wrapped) when no model is configured.
var ErrNoModel = errors.New("no model configured")

// Config configures Open. The zero value means defaults.
type Config struct {
	// Dir is where a relative scripted file resolves; "" means the working
	// directory.
	Dir string
	// Stream asks providers that stream to do so (text reaches
	// model.Hooks.OnText as it is generated).
	Stream bool
	// Retry configures transport retries of the HTTP providers.
	Retry retry.Config
	// Notice receives the scripted model's notice, and what a provider says
	// once about a setting its model ignores; nil means os.Stderr.
	Notice io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Limits, when set, holds the limits the HTTP providers' calls share
	// with every other model opened with it (see Key): each attempt waits
	// its turn under the retrying transport, and a retry-after pauses the
	// provider's every call. Nil means no shared limits.
	Limits *limit.Registry
}

// Spec is a parsed model string.
type Spec struct {
	Provider string // "anthropic", "openai", "openai-responses", "openai-compatible", "gemini" or "scripted"
	Model    string // the model name; "" for scripted
	BaseURL  string // openai-compatible only (before the environment default)
	File     string // scripted only
}

// Key is the name the limits of sp's provider are kept under:
// "anthropic", "openai", "gemini", or "openai-compatible:BASE_URL" (each compatible
// server is limited apart); "" for scripted, which has none.
func (sp Spec) Key() string {
	switch sp.Provider {
	case "anthropic", "openai", "gemini":
		return sp.Provider
	case "openai-responses":
		return "openai" // one account's limits, whichever API
	case "openai-compatible":
		return sp.Provider + ":" + sp.BaseURL
	}
	return ""
}

// ParseChain parses a model string that may be a fallback chain (model
// strings joined by commas), returning one Spec per model.
func ParseChain(s string) ([]Spec, error) {
	if s == "" {
		_, err := Parse(s)
		return nil, err
	}
	var specs []Spec
	var problems []string
	for _, one := range strings.Split(s, ",") {
		sp, err := Parse(strings.TrimSpace(one))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		specs = append(specs, sp)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return specs, nil
}

// Parse parses a model string. It does not read the environment.
func Parse(s string) (Spec, error) {
	if s == "" {
		return Spec{}, fmt.Errorf("%w; options: %s", ErrNoModel, Options)
	}
	kind, arg, _ := strings.Cut(s, ":")
	sp := Spec{Provider: kind}
	switch kind {
	case "anthropic", "openai", "openai-responses", "gemini":
		if arg == "" {
			return Spec{}, fmt.Errorf("model %q: %s needs a model name, e.g. %s", s, kind, example(kind))
		}
		sp.Model = arg
	case "openai-compatible":
		i := strings.LastIndex(arg, "#")
		if i < 0 || arg[i+1:] == "" {
			return Spec{}, fmt.Errorf("model %q: openai-compatible needs BASE_URL#MODEL, e.g. %s", s, example(kind))
		}
		sp.BaseURL, sp.Model = arg[:i], arg[i+1:]
	case "scripted":
		if arg == "" {
			return Spec{}, fmt.Errorf("model %q: scripted needs a file, e.g. scripted:turns.yaml", s)
		}
		sp.File = arg
	default:
		return Spec{}, fmt.Errorf("unknown model %q; options: %s", s, Options)
	}
	return sp, nil
}

func example(kind string) string {
	switch kind {
	case "anthropic":
		return "anthropic:claude-sonnet-4-5"
	case "openai":
		return "openai:gpt-4.1"
	case "openai-responses":
		return "openai-responses:gpt-5"
	case "gemini":
		return "gemini:gemini-2.5-flash"
	}
	return "openai-compatible:http://localhost:11434/v1#llama3.1"
}

// Open parses s (or $RATCHET_MODEL when s is "") and returns its model.
func Open(s string, cfg Config) (model.Model, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if s == "" {
		s = getenv("RATCHET_MODEL")
	}
	if !strings.Contains(s, ",") {
		sp, err := Parse(s)
		if err != nil {
			return nil, err
		}
		return open(sp, cfg, getenv)
	}
	specs, err := ParseChain(s)
	if err != nil {
		return nil, err
	}
	members := make([]fallback.Member, len(specs))
	for i, name := range strings.Split(s, ",") { // one name per spec
		name = strings.TrimSpace(name)
		m, err := open(specs[i], cfg, getenv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		members[i] = fallback.Member{Name: name, Model: m}
	}
	return fallback.New(members...)
}

// open opens one parsed model string.
func open(sp Spec, cfg Config, getenv func(string) string) (model.Model, error) {
	if sp.Provider == "openai-compatible" && sp.BaseURL == "" {
		sp.BaseURL = getenv("OPENAI_BASE_URL")
	}
	var lim *limit.Limiter
	if key := sp.Key(); cfg.Limits != nil && key != "" {
		lim = cfg.Limits.Limiter(key)
		cfg.Retry.Base = lim.Transport(cfg.Retry.Base)
	}
	m, err := openProvider(sp, cfg, getenv)
	if err != nil || lim == nil {
		return m, err
	}
	return limit.Model{Model: m, Limiter: lim}, nil
}

func openProvider(sp Spec, cfg Config, getenv func(string) string) (model.Model, error) {
	switch sp.Provider {
	case "anthropic":
		return anthropic.New(anthropic.Config{
			Model: sp.Model, APIKey: getenv("ANTHROPIC_API_KEY"), BaseURL: getenv("ANTHROPIC_BASE_URL"),
			Stream: cfg.Stream, Retry: cfg.Retry, NoEnv: true, Notice: cfg.Notice,
		})
	case "gemini":
		return gemini.New(gemini.Config{
			Model: sp.Model, APIKey: cmp.Or(getenv("GEMINI_API_KEY"), getenv("GOOGLE_API_KEY")), BaseURL: getenv("GOOGLE_GEMINI_BASE_URL"),
			Stream: cfg.Stream, Retry: cfg.Retry, NoEnv: true, Notice: cfg.Notice,
		})
	case "openai", "openai-compatible", "openai-responses":
		compatible := sp.Provider == "openai-compatible"
		base := sp.BaseURL
		if base == "" {
			base = getenv("OPENAI_BASE_URL")
		}
		return openai.New(openai.Config{
			Model: sp.Model, APIKey: getenv("OPENAI_API_KEY"), BaseURL: base, Compatible: compatible, Responses: sp.Provider == "openai-responses",
			Stream: cfg.Stream, Retry: cfg.Retry, NoEnv: true, Notice: cfg.Notice,
		})
	}
	file := sp.File
	if cfg.Dir != "" && !filepath.IsAbs(file) {
		file = filepath.Join(cfg.Dir, file)
	}
	return scripted.Load(file, scripted.Config{Notice: cfg.Notice})
}
