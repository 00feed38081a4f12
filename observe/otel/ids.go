package otel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace ID of a top-level run id, shared by its sub-agents
// and by every process that resumes them. A run's ID may hold "/" (an
// eval's "label/case/r0"); the whole ID counts.
func TraceID(id string) trace.TraceID {
	sum := sha256.Sum256([]byte("ratchet trace " + id))
	var t trace.TraceID
	copy(t[:], sum[:])
	return t
}

// SpanID is the span ID of the invoke_agent span that starts run id.
func SpanID(id string) trace.SpanID {
	sum := sha256.Sum256([]byte("ratchet span " + id))
	var s trace.SpanID
	copy(s[:], sum[:])
	return s
}

// runSpanContext is the span context of the invoke_agent span that started
// run id in trace t, as a resumed run links to it.
func runSpanContext(t trace.TraceID, id string) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: SpanID(id), TraceFlags: trace.FlagsSampled, Remote: true})
}

// runIDs are the IDs the Observer asks for a span it starts; zero fields
// are left to chance.
type runIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type idsKey struct{}

func withIDs(ctx context.Context, ids runIDs) context.Context {
	return context.WithValue(ctx, idsKey{}, ids)
}

// IDGenerator returns the ID generator that gives a run's spans the IDs
// TraceID and SpanID derive, and random IDs to every other span, the
// Observer's and anyone else's. Give it to the SDK's TracerProvider
// (sdktrace.WithIDGenerator); with another generator the spans are the
// same, their IDs random, and a resumed run starts a new trace.
func IDGenerator() sdktrace.IDGenerator { return &idGenerator{} }

type idGenerator struct {
	mu sync.Mutex
	// rnd is seeded from the runtime's entropy: IDs need to be unique,
	// not secret.
	rnd *rand.Rand
}

func (g *idGenerator) random() (uint64, uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rnd == nil {
		g.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return g.rnd.Uint64(), g.rnd.Uint64()
}

func (g *idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	ids, _ := ctx.Value(idsKey{}).(runIDs)
	hi, lo := g.random()
	if !ids.trace.IsValid() {
		binary.BigEndian.PutUint64(ids.trace[:8], hi)
		binary.BigEndian.PutUint64(ids.trace[8:], lo)
	}
	if !ids.span.IsValid() {
		ids.span = g.NewSpanID(ctx, ids.trace)
	}
	return ids.trace, ids.span
}

func (g *idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if ids, _ := ctx.Value(idsKey{}).(runIDs); ids.span.IsValid() {
		return ids.span
	}
	var s trace.SpanID
	for !s.IsValid() {
		v, _ := g.random()
		binary.BigEndian.PutUint64(s[:], v)
	}
	return s
}
