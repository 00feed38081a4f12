package gemini

import (
	"testing"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/price"
)

const testModel = "gemini-2.5-flash"

func newTest(t *testing.T, srv *modeltest.Server, o modeltest.Options) *Model {
	t.Helper()
	m, err := New(Config{Model: testModel, APIKey: o.APIKey, BaseURL: srv.URL, Stream: o.Stream, Retry: o.Retry, NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(t *testing.T, turns []modeltest.Turn, o modeltest.Options) (model.Model, *modeltest.Server) {
			srv := modeltest.Serve(t, wire{}, turns)
			return newTest(t, srv, o), srv
		},
		Streams:           true,
		ObjectArgs:        true,
		NoCacheWrites:     true,
		Alternates:        true,
		Thinks:            true,
		Signs:             true,
		SendsThinkingBack: true,
		OutputSchema:      true, // responseJsonSchema; Gemini has no strict tools
		RefusalText:       "Gemini stopped: SAFETY",
		Cost: func(u model.Usage) (budget.Micros, bool) {
			p, ok := price.Lookup(Provider, testModel)
			return p.Cost(u), ok
		},
	})
}
