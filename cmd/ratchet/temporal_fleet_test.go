package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// testTemporalFleetLimits: four `ratchet worker` processes on one run
// database, each with --provider-limit anthropic:max_in_flight=2, carry
// out an eval suite's 16 runs at once on a real Temporal server: the fake
// provider never sees more than 2 requests in flight, since the workers
// take their slots in the database's ledger (alone, each would allow 2).
func testTemporalFleetLimits(t *testing.T, c *temporalCLI) {
	const workers, runs, inFlight = 4, 16, 2
	var mu sync.Mutex
	now, most, total := 0, 0, 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now++
		total++
		most = max(most, now)
		mu.Unlock()
		time.Sleep(250 * time.Millisecond)
		mu.Lock()
		now--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"finish","input":{"answer":"5","confidence":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)
	}))
	defer hs.Close()
	for name, data := range map[string]string{
		"fleet.yaml":       "goal: What is 2+3?\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: \"5\"}]\nbudget: {steps: 2, time: 2m}\n",
		"fleet-suite.yaml": fmt.Sprintf("cases: [{task: fleet.yaml}]\nrepeats: %d\n", runs),
	} {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.env = append(c.env, "ANTHROPIC_API_KEY=sk-ant-test", "ANTHROPIC_BASE_URL="+hs.URL, "RATCHET_NO_STREAM=1")
	for range workers {
		c.worker(t, "--provider-limit", fmt.Sprintf("anthropic:max_in_flight=%d", inFlight))
	}
	start := time.Now()
	code, out, errOut := c.run(t, "eval", "run", "--temporal", c.addr, "--task-queue", "e2e", "--concurrency", fmt.Sprint(runs),
		"--json", "--quiet", "--dir", filepath.Join(c.dir, "eval-fleet"), "fleet-suite.yaml")
	if code != exitDone {
		t.Fatalf("ratchet eval run --temporal: exit %d:\n%s%s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if total != runs {
		t.Fatalf("the provider saw %d requests, want %d", total, runs)
	}
	if most > inFlight {
		t.Errorf("%d requests were in flight at once across %d workers; the shared limit is %d", most, workers, inFlight)
	}
	t.Logf("%d workers, %d requests in %s, at most %d in flight (limit %d)", workers, total, time.Since(start).Round(time.Millisecond), most, inFlight)
}
