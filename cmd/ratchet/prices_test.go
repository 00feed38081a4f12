package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/model/price"
)

func TestPrices(t *testing.T) {
	src := price.EmbeddedSource()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"openai:gpt-4.1-2025-04-14"}, []string{
			"openai:gpt-4.1-2025-04-14\n",
			`  entry        gpt-4.1, matched by {"or":[{"equals":"gpt-4.1"},{"equals":"gpt-4.1-2025-04-14"}]}` + "\n",
			"  source       embedded table, from @pydantic/genai-prices " + src.Version + " (" + src.Published + ", MIT licence)\n",
			"  input        $2/M\n", "  output       $8/M (reasoning tokens included)\n", "  cache read   $0.5/M\n",
			"  cache write  $2/M (billed as input: the source gives no price of its own)\n",
		}},
		// A bare name is looked up with every provider; the Responses API is OpenAI's.
		{[]string{"claude-sonnet-4-0", "openai-responses:o3-mini-2025-01-31"}, []string{
			"anthropic:claude-sonnet-4-0\n  entry        claude-sonnet-4-0,", "  cache write  $3.75/M\n",
			"openai:o3-mini-2025-01-31\n  entry        o3-mini,", "  input        $1.1/M\n",
		}},
		{[]string{"gemini:gemini-2.5-pro"}, []string{
			"  above 200000 prompt tokens, the whole request: input $2.5/M, output $15/M, cache read $0.25/M, cache write $2.5/M\n",
		}},
		{[]string{"gemini:gemini-3.6-flash"}, []string{"  from 2027-01-01: input $1.5/M, output $7.5/M\n"}},
	} {
		c := run(t, nil, append([]string{"prices"}, tt.args...)...)
		c.wantCode(t, exitDone)
		for _, w := range tt.want {
			if !strings.Contains(c.stdout, w) {
				t.Errorf("prices %v: stdout lacks %q:\n%s", tt.args, w, c.stdout)
			}
		}
		if strings.Contains(c.stdout, "gemini:claude") {
			t.Errorf("prices %v: the gemini provider prices a Claude model:\n%s", tt.args, c.stdout)
		}
	}
	for _, tt := range []struct{ arg, want string }{
		{"nonesuch-1", `model "nonesuch-1" has no known price`},
		{"openai:nonesuch-1", `openai model "nonesuch-1" has no known price`},
		{"whisper-1", `matches "whisper-1", which has no input and output price per token`},
		{"openai-compatible:http://localhost:1/v1#llama3.1", "an OpenAI-compatible server's models have no price"},
	} {
		c := run(t, nil, "prices", tt.arg)
		c.wantCode(t, exitNotDone)
		if !strings.Contains(c.stderr, tt.want) {
			t.Errorf("prices %s: stderr lacks %q:\n%v", tt.arg, tt.want, c)
		}
	}
	run(t, nil, "prices").wantCode(t, exitUsage)
}

// TestPricesOverride: the override file prices a model the table lacks, in
// ratchet prices and in a run with a cost limit, which is refused without
// it; a broken one stops every command that prices, naming the file.
func TestPricesOverride(t *testing.T) {
	t.Cleanup(func() { price.LoadOverride(func(string) string { return "" }) })
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"finish","arguments":"{\"answer\":\"5\",\"confidence\":0.99}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}}`)
	}))
	defer api.Close()
	dir := write(t, map[string]string{
		"task.yaml":   "goal: What is 2+3?\nmodel: openai:gpt-test\nchecks: [{equals: \"5\"}]\nbudget: {steps: 4, cost: 1}\n",
		"prices.json": `{"providers": {"openai": [{"id": "gpt-test", "prices": {"input_mtok": 10, "output_mtok": 20}}]}}`,
		"bad.json":    `{"providers": {"openai": [{"id": "gpt-test", "prices": {"input_mtok": -10}}]}}`,
	})
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": api.URL + "/v1", "RATCHET_NO_STREAM": "1"}
	task := filepath.Join(dir, "task.yaml")

	c := run(t, env, "run", "--json", task)
	if c.code == exitDone || !strings.Contains(c.stderr, "price") {
		t.Fatalf("a model without a price ran under a cost limit: %v", c)
	}

	env["RATCHET_PRICES"] = filepath.Join(dir, "prices.json")
	c = run(t, env, "run", "--json", task)
	c.wantCode(t, exitDone)
	if res := c.result(t); res.Usage.Cost != 1000*10+100*20 || res.Usage.CostUnknown {
		t.Errorf("the run's cost is %v (unknown %v), want $0.012", res.Usage.Cost, res.Usage.CostUnknown)
	}
	c = run(t, env, "prices", "gpt-test")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "  source       "+env["RATCHET_PRICES"]+"\n") || !strings.Contains(c.stdout, "  input        $10/M\n") {
		t.Errorf("prices by the override file:\n%v", c)
	}

	env["RATCHET_PRICES"] = filepath.Join(dir, "bad.json")
	for _, args := range [][]string{{"prices", "gpt-4.1"}, {"run", task}} {
		c = run(t, env, args...)
		c.wantCode(t, exitUsage)
		if !strings.Contains(c.stderr, "prices file "+env["RATCHET_PRICES"]+":1:71: ") || !strings.Contains(c.stderr, "price -10 is not between 0 and") {
			t.Errorf("%v with a bad prices file:\n%v", args, c)
		}
	}
}

// TestDoctorPrices: doctor says which prices it uses, and a broken
// override file is a failed check with the file's problem, not the end.
func TestDoctorPrices(t *testing.T) {
	t.Cleanup(func() { price.LoadOverride(func(string) string { return "" }) })
	c := run(t, nil, "doctor")
	if !strings.Contains(c.stdout, "ok    prices: embedded table, from @pydantic/genai-prices ") {
		t.Errorf("doctor does not say which prices it uses:\n%v", c)
	}
	dir := write(t, map[string]string{"bad.json": `{"providers": {"opneai": []}}`})
	bad := filepath.Join(dir, "bad.json")
	c = run(t, map[string]string{"RATCHET_PRICES": bad}, "doctor")
	if c.code != exitNotDone || !strings.Contains(c.stdout, "FAIL  prices: prices file "+bad+": providers: unknown provider \"opneai\"") ||
		!strings.Contains(c.stdout, "ANTHROPIC_API_KEY") {
		t.Errorf("doctor with a broken prices file:\n%v", c)
	}
}
