package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Store keeps one result set's finished runs. Put must make a record
// durable before it returns: a run that Records lists is never redone on
// resume. A Store is safe for concurrent use.
//
// Dir, the file store, is what ships. The run store of package store can
// back the same three methods: a Record as a store.Run labelled with the
// result set's label (its loop.Result as Result, the rest of the Record as
// Task), and Log as that run's entries.
type Store interface {
	// Records returns the records put so far, one per Key (the last put),
	// in the order first put.
	Records(ctx context.Context) ([]Record, error)
	// Put stores a finished run.
	Put(ctx context.Context, r Record) error
	// Log opens a new event log for the run k; name is what Record.Log
	// should hold to find it again.
	Log(ctx context.Context, k Key) (w io.WriteCloser, name string, err error)
}

// Dir is a Store in a directory:
//
//	results.jsonl   one Record per line, appended and fsynced per run
//	logs/           one JSONL event log per run (docs/events.md)
//
// A line cut short by a crash is ignored when reading: its run was not
// finished as far as the store is concerned, and runs again on resume.
type Dir struct {
	Path string

	mu sync.Mutex
	f  *os.File
}

var _ Store = (*Dir)(nil)

// ResultsFile is the name of a Dir's record file.
const ResultsFile = "results.jsonl"

// OpenDir opens (creating) the store in dir.
func OpenDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	d := &Dir{Path: dir, f: f}
	if err := d.repairTail(); err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// repairTail ends a partial last line (a crash mid-write) with a newline so
// the next record starts on a line of its own.
func (d *Dir) repairTail() error {
	st, err := d.f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	rf, err := os.Open(d.f.Name())
	if err != nil {
		return err
	}
	defer rf.Close()
	last := make([]byte, 1)
	if _, err := rf.ReadAt(last, st.Size()-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = d.f.Write([]byte("\n"))
	}
	return err
}

// Close closes the record file.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}

// Records reads results.jsonl.
func (d *Dir) Records(context.Context) ([]Record, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ReadRecords(d.Path)
}

// ReadRecords reads the records of the result directory dir: one per
// (case, repeat), the last written when a pair appears twice (two runs of
// the same label at once), in the order first written. Lines that do not
// parse (a write cut short by a crash) are skipped.
func ReadRecords(dir string) ([]Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	var out []Record
	at := map[Key]int{}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if json.Unmarshal(line, &r) != nil || r.Case == "" {
			continue
		}
		if i, ok := at[r.Key()]; ok {
			out[i] = r
			continue
		}
		at[r.Key()] = len(out)
		out = append(out, r)
	}
	return out, nil
}

// Put appends r as one line and fsyncs the file.
func (d *Dir) Put(_ context.Context, r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return errors.New("eval: store is closed")
	}
	if _, err := d.f.Write(line); err != nil {
		return err
	}
	return d.f.Sync()
}

// Log creates logs/<case>.r<repeat>.jsonl, the case name's slashes made
// into "__".
func (d *Dir) Log(_ context.Context, k Key) (io.WriteCloser, string, error) {
	name := filepath.Join("logs", fileName(k.Case)+".r"+strconv.Itoa(k.Repeat)+".jsonl")
	f, err := os.Create(filepath.Join(d.Path, name))
	if err != nil {
		return nil, "", err
	}
	return f, name, nil
}

func fileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/':
			b.WriteString("__")
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "%%%02x", r)
		}
	}
	return b.String()
}
