package gemini

import (
	"testing"

	"github.com/ratchetloop/ratchet/model/modeltest"
)

// TestLoop30 replays a 30-step tool loop through the local server;
// modeltest.Loop checks one request per step and the history encoded once
// per request (each call id in its functionCall and its functionResponse).
func TestLoop30(t *testing.T) {
	const steps = 30
	srv := modeltest.Serve(t, wire{}, modeltest.LoopTurns(steps))
	modeltest.Loop(t, newTest(t, srv, modeltest.Options{APIKey: "k"}), srv, steps)
}
