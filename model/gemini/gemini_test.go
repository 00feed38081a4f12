package gemini

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
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

// A 429 naming a per-day quota is a spent quota: failed at once, saying
// so; a per-minute one is a rate limit, retried.
func TestQuotaSpent(t *testing.T) {
	const perDay = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, perDay)
	}))
	defer srv.Close()
	m, err := New(Config{Model: testModel, APIKey: "k", BaseURL: srv.URL, NoEnv: true, Retry: retry.Config{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}})
	ae, ok := err.(*model.APIError)
	if !ok || ae.Kind != model.ErrQuota || ae.Temporary() || n != 1 || !strings.Contains(ae.Fix, "quota") {
		t.Errorf("error %v after %d requests; want one request and a spent quota that says so", err, n)
	}
}

// A reply the SDK cannot read (its converters panic on `"candidates": ""`)
// is an error of the call, whole or streamed: a server cannot crash
// ratchet.
func TestMalformedReplyIsAnError(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"candidates\": \"\"}\r\n\r\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates": ""}`)
		}))
		m, err := New(Config{Model: testModel, APIKey: "k", BaseURL: srv.URL, NoEnv: true, Stream: stream, Retry: retry.Config{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}})
		srv.Close()
		if ae, ok := err.(*model.APIError); !ok || ae.Kind != model.ErrServer || !strings.Contains(ae.Message, "does not parse") {
			t.Errorf("stream %v: error %v, want a server error saying the reply does not parse", stream, err)
		}
	}
}
