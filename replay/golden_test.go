package replay_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/loop/looptest"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
)

// recordGolden rewrites testdata/golden from the loop's scripts. Only ever
// with the build whose logs are to be kept: the point of the files is that
// later builds replay what an earlier one recorded.
var recordGolden = flag.Bool("record-golden", false, "record testdata/golden/script-*.jsonl from ../loop/testdata with this build")

// TestGoldenLogsReplay replays logs recorded by earlier builds: the
// examples' runs through the CLI (examples-*.jsonl, recorded with
// `ratchet run task.yaml --log`) and every run of the loop's scripts
// (script-*.jsonl, recorded with -record-golden), which between them take
// every phase of the machine. A change to the core that decides anything
// differently on the same events fails here, with where.
func TestGoldenLogsReplay(t *testing.T) {
	if *recordGolden {
		writeGolden(t)
	}
	files, err := filepath.Glob("testdata/golden/*.jsonl")
	if err != nil || len(files) < 20 {
		t.Fatalf("%d golden logs (%v): want the examples' and the scripts'", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := observe.ReadJSONL(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sum, err := replay.Run(recs)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if sum.Events == 0 || sum.Outputs == 0 {
			t.Errorf("%s: replayed nothing (%+v)", f, sum)
		}
	}
}

// writeGolden records each run of each loop script as a log, as the
// runner would write it: the spec, then each event followed by the notes
// and commands it led to. Runs with a custom progress key are left out,
// since a log cannot carry a function.
func writeGolden(t *testing.T) {
	scripts, err := filepath.Glob("../loop/testdata/*.txt")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range scripts {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		var logs []*bytes.Buffer
		var jl *observe.JSONL
		var seq int64
		skip := false
		write := func(e observe.Entry) {
			seq++
			e.Seq, e.Run = seq, fmt.Sprintf("%s-%d", name, len(logs))
			jl.Observe(e)
		}
		flush := func() {
			if jl != nil {
				if err := jl.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		looptest.Record(t, path, func(spec *loop.Spec, ev *loop.Event, rd loop.Ready) {
			if spec != nil {
				flush()
				logs = append(logs, &bytes.Buffer{})
				jl, seq, skip = observe.NewJSONL(logs[len(logs)-1]), 0, spec.Policy.Key != nil
				if skip {
					logs[len(logs)-1] = nil
					return
				}
				write(observe.Entry{Kind: observe.KindRun, Spec: spec})
				return
			}
			if skip {
				return
			}
			write(observe.Entry{At: ev.At, Kind: observe.KindEvent, Event: ev})
			for i := range rd.Notes {
				write(observe.Entry{At: ev.At, Kind: observe.KindNote, Note: &rd.Notes[i]})
			}
			for i := range rd.Commands {
				write(observe.Entry{At: ev.At, Kind: observe.KindCommand, Command: &rd.Commands[i]})
			}
		})
		flush()
		for i, b := range logs {
			if b == nil || bytes.Count(b.Bytes(), []byte("\n")) < 2 {
				continue // a custom key, or a spec that was never started
			}
			out := filepath.Join("testdata/golden", fmt.Sprintf("script-%s-%d.jsonl", name, i+1))
			if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
