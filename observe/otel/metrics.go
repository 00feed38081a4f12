package otel

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// Attribute keys of the GenAI semantic conventions.
const (
	attrOperation          = attribute.Key("gen_ai.operation.name")
	attrProvider           = attribute.Key("gen_ai.provider.name")
	attrAgentName          = attribute.Key("gen_ai.agent.name")
	attrConversation       = attribute.Key("gen_ai.conversation.id")
	attrRequestModel       = attribute.Key("gen_ai.request.model")
	attrResponseModel      = attribute.Key("gen_ai.response.model")
	attrMaxTokens          = attribute.Key("gen_ai.request.max_tokens")
	attrFinishReasons      = attribute.Key("gen_ai.response.finish_reasons")
	attrUsageInput         = attribute.Key("gen_ai.usage.input_tokens")
	attrUsageOutput        = attribute.Key("gen_ai.usage.output_tokens")
	attrCacheRead          = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrCacheWrite         = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	attrInputMessages      = attribute.Key("gen_ai.input.messages")
	attrOutputMessages     = attribute.Key("gen_ai.output.messages")
	attrSystemInstructions = attribute.Key("gen_ai.system_instructions")
	attrToolName           = attribute.Key("gen_ai.tool.name")
	attrToolCallID         = attribute.Key("gen_ai.tool.call.id")
	attrToolType           = attribute.Key("gen_ai.tool.type")
	attrToolArgs           = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult         = attribute.Key("gen_ai.tool.call.result")
	attrTokenType          = attribute.Key("gen_ai.token.type")
	attrErrorType          = attribute.Key("error.type")

	attrCheckName       = attribute.Key("ratchet.check.name")
	attrCheckTier       = attribute.Key("ratchet.check.tier")
	attrCheckProvenance = attribute.Key("ratchet.check.provenance")
)

// The conventions' advised bucket boundaries.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// A run takes seconds to hours.
	runBuckets = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200}
)

// instruments are the Observer's metrics; the zero value records nothing.
type instruments struct {
	on          bool
	tokenUsage  metric.Int64Histogram
	opDuration  metric.Float64Histogram
	runDuration metric.Float64Histogram
	runs        metric.Int64Counter
	budgetUsed  metric.Int64Histogram
	verdicts    metric.Int64Counter
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var err error
	if in.tokenUsage, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return in, err
	}
	if in.opDuration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return in, err
	}
	if in.runDuration, err = m.Float64Histogram("ratchet.run.duration", metric.WithUnit("s"),
		metric.WithDescription("A run's time as its time budget counts it (waits for a person left out), by exit status."), metric.WithExplicitBucketBoundaries(runBuckets...)); err != nil {
		return in, err
	}
	if in.runs, err = m.Int64Counter("ratchet.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs that ended, by exit status.")); err != nil {
		return in, err
	}
	if in.budgetUsed, err = m.Int64Histogram("ratchet.budget.used", metric.WithUnit("1"),
		metric.WithDescription("What a run used of each budget dimension, in the dimension's unit (time_ms: milliseconds, cost_micros: micro-USD).")); err != nil {
		return in, err
	}
	if in.verdicts, err = m.Int64Counter("ratchet.check.verdicts", metric.WithUnit("{verdict}"),
		metric.WithDescription("Check outcomes (pass, fail, error) by check and tier.")); err != nil {
		return in, err
	}
	in.on = true
	return in, nil
}

// chatMetricAttrs are the attribute sets of a successful chat call's
// metrics for one response model, made once: building a set sorts and
// allocates, and a run makes a call per step.
type chatMetricAttrs struct {
	duration, input, output metric.MeasurementOption
}

// chatAttrs returns the sets for responseModel. The caller holds o.mu.
func (o *Observer) chatAttrs(responseModel string) *chatMetricAttrs {
	if a := o.chatSets[responseModel]; a != nil {
		return a
	}
	base := []attribute.KeyValue{attrOperation.String("chat"), attrProvider.String(o.provider), attrRequestModel.String(o.model)}
	if responseModel != "" {
		base = append(base, attrResponseModel.String(responseModel))
	}
	with := func(kv ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(base), kv...)...))
	}
	a := &chatMetricAttrs{duration: with(), input: with(attrTokenType.String("input")), output: with(attrTokenType.String("output"))}
	if o.chatSets == nil {
		o.chatSets = map[string]*chatMetricAttrs{}
	}
	if len(o.chatSets) < 64 { // response models are few; bound the cache regardless
		o.chatSets[responseModel] = a
	}
	return a
}

// chatDone records a chat call's duration and, when it succeeded, its
// tokens. The caller holds o.mu.
func (o *Observer) chatDone(c *pendingChat, end time.Time, errType string, resp *model.Response, input int64) {
	in := o.inst
	if !in.on {
		return
	}
	ctx := context.Background()
	secs := end.Sub(c.start).Seconds()
	if errType != "" {
		in.opDuration.Record(ctx, secs, metric.WithAttributes(attrOperation.String("chat"), attrProvider.String(o.provider),
			attrRequestModel.String(o.model), attrErrorType.String(errType)))
		return
	}
	a := o.chatAttrs(resp.Model)
	in.opDuration.Record(ctx, secs, a.duration)
	in.tokenUsage.Record(ctx, input, a.input)
	in.tokenUsage.Record(ctx, resp.Usage.OutputTokens, a.output)
}

// verdict counts one check's outcome.
func (in instruments) verdict(check string, tier verify.Tier, outcome string) {
	if !in.on {
		return
	}
	in.verdicts.Add(context.Background(), 1, metric.WithAttributes(attrCheckName.String(check), attrCheckTier.String(string(tier)),
		attribute.String("ratchet.check.outcome", outcome)))
}

// runDone records an ended run: its count, time and use of each budget
// dimension. ratchet.run.kind tells a sub-agent's run from a top-level
// one, whose usage includes its sub-agents'.
func (in instruments) runDone(r *runState, res *loop.Result) {
	if !in.on {
		return
	}
	kind := "run"
	if r.child {
		kind = "subagent"
	}
	ctx := context.Background()
	attrs := metric.WithAttributes(attribute.String("ratchet.run.status", string(res.Status)), attribute.String("ratchet.run.kind", kind))
	in.runs.Add(ctx, 1, attrs)
	in.runDuration.Record(ctx, res.Usage.Time.Seconds(), attrs)
	for _, d := range usageDims(res.Usage) {
		in.budgetUsed.Record(ctx, d.value, metric.WithAttributes(attribute.String("ratchet.budget.dimension", d.name), attribute.String("ratchet.run.kind", kind)))
	}
}
