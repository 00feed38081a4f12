// Package replay re-drives the current build of the loop core over a
// recorded event log and reports the first place where it decides
// differently: replay is a test. A log from `ratchet run` holds the spec
// the core ran (its first entry) and every event, command and note; the
// events are fed to a fresh machine and each batch of notes and commands it
// produces is compared, as logged JSON, with what was recorded.
//
// A run whose spec used a custom progress key function replays with the
// default one, and may diverge where they differ.
package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
)

// Divergence is the first difference between the recorded run and the
// replay.
type Divergence struct {
	// Seq is the recorded entry where they part (0 when the replay
	// produced more than was recorded).
	Seq int64
	// After is the seq of the event that produced the difference.
	After int64
	Want  string // the recorded note or command (JSON), or "" for none
	Got   string // the replayed one, or "" for none
}

func (d Divergence) Error() string {
	want, got := around(d.Want, d.Got)
	return fmt.Sprintf("after event %d, at entry %d: recorded %s, replayed %s", d.After, d.Seq, orNone(want), orNone(got))
}

// around clips a and b to the neighbourhood of their first difference.
func around(a, b string) (string, string) {
	const context = 80
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	clipAt := func(s string) string {
		if len(s) <= 2*context+20 {
			return s
		}
		from, to := max(i-context, 0), min(i+context, len(s))
		out := s[from:to]
		if from > 0 {
			out = "…" + out
		}
		if to < len(s) {
			out += "…"
		}
		return out
	}
	return clipAt(a), clipAt(b)
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// Summary says what a replay covered.
type Summary struct {
	Run    string
	Events int
	// Outputs counts the notes and commands compared.
	Outputs int
}

// Run replays records. It returns a *Divergence error at the first
// difference, or another error when the log cannot be replayed at all.
func Run(records []observe.Record) (Summary, error) {
	if len(records) == 0 || records[0].Kind != observe.KindRun || records[0].Spec == nil {
		return Summary{}, errors.New("replay: the log does not start with the run's spec (logs from before replay support cannot be replayed)")
	}
	m, err := loop.New(*records[0].Spec)
	if err != nil {
		return Summary{}, fmt.Errorf("replay: the recorded spec: %w", err)
	}
	// Retries, repairs, fallbacks, waits and hook decisions are the
	// shell's, not the core's: skip them.
	records = slices.DeleteFunc(slices.Clone(records), func(r observe.Record) bool {
		switch r.Kind {
		case observe.KindRetry, observe.KindRepair, observe.KindFallback, observe.KindWait, observe.KindHook:
			return true
		}
		return false
	})
	sum := Summary{Run: records[0].Run}
	i := 1
	for i < len(records) {
		rec := records[i]
		if rec.Kind != observe.KindEvent || rec.Event == nil {
			return sum, &Divergence{Seq: rec.Seq, Want: describe(rec), Got: ""}
		}
		i++
		sum.Events++
		if err := m.Step(*rec.Event); err != nil {
			return sum, &Divergence{Seq: rec.Seq, After: rec.Seq, Want: "the event to be accepted", Got: err.Error()}
		}
		rd := m.Ready()
		m.Advance()
		var got []string
		for j := range rd.Notes {
			b, _ := json.Marshal(&rd.Notes[j])
			got = append(got, string(b))
		}
		for j := range rd.Commands {
			b, err := observe.EncodeCommand(&rd.Commands[j])
			if err != nil {
				return sum, err
			}
			got = append(got, string(b))
		}
		for _, g := range got {
			if i >= len(records) || records[i].Kind == observe.KindEvent {
				return sum, &Divergence{After: rec.Seq, Got: g}
			}
			want := records[i]
			if !sameJSON(payload(want), []byte(g)) {
				return sum, &Divergence{Seq: want.Seq, After: rec.Seq, Want: describe(want), Got: g}
			}
			i++
			sum.Outputs++
		}
		if i < len(records) && records[i].Kind != observe.KindEvent {
			return sum, &Divergence{Seq: records[i].Seq, After: rec.Seq, Want: describe(records[i])}
		}
	}
	return sum, nil
}

func payload(r observe.Record) []byte {
	if r.Kind == observe.KindNote {
		return r.Note
	}
	return r.Command
}

func describe(r observe.Record) string {
	if p := payload(r); len(p) > 0 {
		return string(p)
	}
	return string(r.Kind)
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(x.Bytes(), &va) != nil || json.Unmarshal(y.Bytes(), &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}
