package runner_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// stepsScript is n add steps with distinct arguments (so that progress
// detection sees progress), then a correct finish. Usage is fixed so the
// model does no per-call work proportional to the history.
func stepsScript(tb testing.TB, n int, delay time.Duration) scripted.Script {
	tb.Helper()
	usage := &scripted.Usage{InputTokens: 10, OutputTokens: 5}
	turns := make([]scripted.Turn, n+1)
	for i := range n {
		turns[i] = scripted.Turn{Delay: delay, Usage: usage, Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": i, "b": 1}}}}
	}
	turns[n] = scripted.Turn{Delay: delay, Usage: usage, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}}
	s, err := scripted.Prepare(scripted.Script{Turns: turns})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func stepsTask(n int) runner.Task {
	return runner.Task{
		Goal:   "Add numbers, then answer 5.",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: n + 2, ModelCalls: n + 2, ToolCalls: n + 1, Time: time.Hour},
	}
}

func runSteps(tb testing.TB, s scripted.Script, task runner.Task, obs ...observe.Observer) loop.Result {
	m, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m, RunID: "bench", Observers: obs})
	if err != nil || res.Status != loop.Done {
		tb.Fatalf("status %s err %v (%s)", res.Status, err, res.Reason)
	}
	return res
}

// BenchmarkStep measures the per-step overhead of the whole engine (core,
// runner, tool execution, in-memory event log) with a zero-latency model and
// a trivial tool. ns/step must stay flat as N grows: nothing copies the
// whole history per step. cpu-µs/step is the process's CPU time per step
// (the collector's included), which a loaded machine inflates less than
// the wall time.
//
//	go test ./runner -run '^$' -bench BenchmarkStep -count 10 | tee /tmp/step.txt; benchstat /tmp/step.txt
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{50, 800} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			s, task := stepsScript(b, n, 0), stepsTask(n)
			b.ReportAllocs()
			b.ResetTimer()
			before := processCPU()
			for b.Loop() {
				runSteps(b, s, task, &observe.Memory{})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/step")
			reportCPU(b, processCPU()-before, b.N*(n+1))
		})
	}
}

// BenchmarkStepFloor is the part of BenchmarkStep/N=50 that no engine can
// skip: the argument check of each of the run's 50 tool calls (argsFloor),
// reported per step of the run (51), with nothing else.
//
//	go test ./runner -run '^$' -bench 'BenchmarkStep(Floor)?$' -count 6
func BenchmarkStepFloor(b *testing.B) {
	const n = 50
	floor := newArgsFloor(b)
	args := make([][]byte, n)
	for i := range args {
		args[i] = []byte(fmt.Sprintf(`{"a":%d,"b":1}`, i))
	}
	b.ReportAllocs()
	before := processCPU()
	for b.Loop() {
		for _, a := range args {
			if err := floor.check(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/step")
	reportCPU(b, processCPU()-before, b.N*(n+1))
}

// BenchmarkConcurrent200x50 runs 200 loops of 50 steps at once; the target
// is ≤ 50 ms per batch.
//
//	go test ./runner -run '^$' -bench BenchmarkConcurrent200x50 -count 5
func BenchmarkConcurrent200x50(b *testing.B) {
	const loops, n = 200, 50
	s, task := stepsScript(b, n, 0), stepsTask(n)
	b.ReportAllocs()
	before := processCPU()
	for b.Loop() {
		var wg sync.WaitGroup
		for range loops {
			wg.Go(func() { runSteps(b, s, task, &observe.Memory{}) })
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/batch")
	reportCPU(b, processCPU()-before, b.N*loops*(n+1))
}

// argsFloor does for the arguments of one call of add what a JSON
// library must, with no ratchet code: decode them strictly into add's
// struct (unknown members refused), which is the check of a tool.Func
// tool's arguments and the decode its function needs in one. Every tool
// call of a run costs at least this (tool.BenchmarkArgsFloor measures it
// alone).
type argsFloor struct{}

func newArgsFloor(testing.TB) argsFloor { return argsFloor{} }

func (argsFloor) check(args []byte) error {
	var in addIn
	return jsonv2.Unmarshal(args, &in, jsonv2.RejectUnknownMembers(true))
}

// BenchmarkConcurrentFloor is the part of BenchmarkConcurrent200x50 that
// no engine can skip: 200 goroutines at once, each checking and decoding
// the arguments of 50 tool calls (argsFloor), with nothing else. Read
// BenchmarkConcurrent200x50's ms/batch and cpu-µs/step (per step of the
// 200 runs of 51) against it.
//
//	go test ./runner -run '^$' -bench 'BenchmarkConcurrent' -count 6
func BenchmarkConcurrentFloor(b *testing.B) {
	const loops, n = 200, 50
	floor := newArgsFloor(b)
	args := make([][]byte, n)
	for i := range args {
		args[i] = []byte(fmt.Sprintf(`{"a":%d,"b":1}`, i))
	}
	b.ReportAllocs()
	before := processCPU()
	for b.Loop() {
		var wg sync.WaitGroup
		for range loops {
			wg.Go(func() {
				for _, a := range args {
					if err := floor.check(a); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/batch")
	reportCPU(b, processCPU()-before, b.N*loops*(n+1))
}

// BenchmarkWaiting10000 runs 10,000 loops of 20 steps against a model with
// 50 ms latency: ideally 1 s of wall time. It reports the wall time as a
// ratio of the ideal, with the CPU the process used per step (user and
// system time, where the platform reports it), then runs the loops
// again to measure the live heap and stack per loop at the run's midpoint:
// once half of all model replies are in, every loop is held at its next log
// entry, and after a forced GC the heap is read with nothing allocating.
//
//	go test ./runner -run '^$' -bench BenchmarkWaiting10000 -benchtime 1x -count 3
func BenchmarkWaiting10000(b *testing.B) {
	const loops, n, latency = 10_000, 19, 50 * time.Millisecond // 19 tool steps + the finish = 20 model turns
	s, task := stepsScript(b, n, latency), stepsTask(n)
	ideal := time.Duration(n+1) * latency
	var replies atomic.Int64
	var hold atomic.Pointer[chan struct{}]
	midpoint := observe.Func(func(e observe.Entry) {
		if e.Event != nil && e.Event.Type == loop.EventModelReply {
			replies.Add(1)
		}
		if h := hold.Load(); h != nil {
			<-*h
		}
	})
	all := func(during func()) time.Duration {
		replies.Store(0)
		start := time.Now()
		var wg sync.WaitGroup
		for range loops {
			wg.Go(func() { runSteps(b, s, task, &observe.Memory{}, midpoint) })
		}
		if during != nil {
			during()
		}
		wg.Wait()
		return time.Since(start)
	}
	for b.Loop() {
		before := processCPU()
		b.ReportMetric(all(nil).Seconds()/ideal.Seconds(), "x-ideal")
		reportCPU(b, processCPU()-before, loops*(n+1))
		runtime.GC()
		var start, mid runtime.MemStats
		runtime.ReadMemStats(&start)
		all(func() {
			for replies.Load() < loops*(n+1)/2 {
				time.Sleep(time.Millisecond)
			}
			release := make(chan struct{})
			hold.Store(&release)
			time.Sleep(3 * latency) // every loop reaches its next entry, or ends
			runtime.GC()
			runtime.ReadMemStats(&mid)
			hold.Store(nil)
			close(release)
		})
		b.ReportMetric(float64(mid.HeapAlloc-start.HeapAlloc)/loops/1024, "heapKB/loop")
		b.ReportMetric(float64(mid.StackInuse-start.StackInuse)/loops/1024, "stackKB/loop")
	}
}

// reportCPU reports the process's CPU time per step, if the platform
// gives it: above a step's cost in a warm loop, it is what running at
// scale costs (cold caches, the collector, the scheduler).
func reportCPU(b *testing.B, used time.Duration, steps int) {
	if used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(steps), "cpu-µs/step")
	}
}

// floorRecord is about the size of one of the log's records, with a
// pointer in it like them.
type floorRecord struct {
	prev *floorRecord
	text string
	_    [10]int64
}

// BenchmarkWaitingFloor is BenchmarkWaiting10000 without ratchet: 10,000
// goroutines that each wait 20 times on a 50 ms timer and, per wait, keep
// the given bytes of small records holding pointers, as a run's log does.
// It is what the Go runtime on this machine manages at all, to read
// BenchmarkWaiting10000 against: keep=0B is the scheduler and timers
// alone, keep=1400B is about what a step of the benchmark's runs keeps,
// and keep=1400B+args also checks a tool call's arguments per wait as
// every step of those runs must (argsFloor): the floor for ratchet's loops.
//
//	go test ./runner -run '^$' -bench 'BenchmarkWaiting' -benchtime 1x -count 3
func BenchmarkWaitingFloor(b *testing.B) {
	const loops, n, latency = 10_000, 20, 50 * time.Millisecond
	floor := newArgsFloor(b)
	args := []byte(`{"a":1,"b":1}`)
	for _, v := range []struct {
		keep int
		args bool
	}{{0, false}, {1400, false}, {1400, true}} {
		name := fmt.Sprintf("keep=%dB", v.keep)
		if v.args {
			name += "+args"
		}
		b.Run(name, func(b *testing.B) {
			perStep := v.keep / int(unsafe.Sizeof(floorRecord{}))
			for b.Loop() {
				before, start := processCPU(), time.Now()
				var wg sync.WaitGroup
				for range loops {
					wg.Go(func() {
						var last *floorRecord
						t := time.NewTimer(latency)
						for range n {
							<-t.C
							if v.args {
								if err := floor.check(args); err != nil {
									b.Error(err)
									return
								}
							}
							for range perStep {
								last = &floorRecord{prev: last, text: "x"}
							}
							t.Reset(latency)
						}
						t.Stop()
						runtime.KeepAlive(last)
					})
				}
				wg.Wait()
				b.ReportMetric(time.Since(start).Seconds()/(time.Duration(n)*latency).Seconds(), "x-ideal")
				reportCPU(b, processCPU()-before, loops*n)
			}
		})
	}
}
